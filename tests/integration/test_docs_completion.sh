#!/usr/bin/env bash
# contrib/plugfs.bash-completion offers every subcommand of `plugfs --help'
# and every option of each subcommand's --help, and the values it knows.
# No FUSE needed.
. "$(dirname "$0")/lib.sh"
BC=/usr/share/bash-completion/bash_completion
[ -f "$BC" ] || die "bash-completion is not installed (bash contrib/install-deps.sh)"
# bash_completion reads unset variables; lib.sh's `set -u' would stop it.
set +u
# shellcheck disable=SC1090
. "$BC"
# shellcheck disable=SC1091
. "$PLUGFS_SOURCE_DIR/contrib/plugfs.bash-completion"
check_eq "completion is registered for plugfs" "complete -F _plugfs plugfs" "$(complete -p plugfs)"
# The completion asks the daemon for plugin names: `plugfs' is the build's
# binary, with this test's config (no daemon yet: it answers nothing).
plugfs() { "$PLUGFS_BIN" "$@"; }
write_config
export PLUGFS_CONFIG=$CFG

# comp WORDS...: the completions of the last word (may be empty), sorted.
comp() {
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="$*"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	_plugfs plugfs "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}
has() { # DESCRIPTION WORD COMPLETIONS
	if grep -qw -- "$2" <<<" $3 "; then pass "$1"; else fail "$1: \`$2' not in [$3]"; fi
}

check_eq "plugfs reg<TAB>" "register" "$(comp plugfs reg)"
check_eq "plugfs st<TAB>" "state status stop-post" "$(comp plugfs st)"
check_eq "plugfs -c FILE li<TAB>" "list" "$(comp plugfs -c "$CFG" li)"
check_eq "plugfs register --kind <TAB>" "controller monolith node" "$(comp plugfs register --kind '')"
check_eq "plugfs state <TAB>" "check dump import" "$(comp plugfs state '')"
check_eq "plugfs show <TAB> offers the configured types (no daemon)" "csi-controller csi-node" \
	"$(comp plugfs show '')"
# The types are the config's [registry] types (continued on indented lines,
# comments dropped), from -c FILE or $PLUGFS_CONFIG; no built-in list.
cat >"$T/types.ini" <<INI
[control]
socket = $T/nobody.sock

[registry]
; the node types
types = alpha-t beta-t ; two
  gamma-t

[probe]
types = not-a-type
INI
check_eq "plugfs -c FILE show <TAB> offers FILE's types" "alpha-t beta-t gamma-t" \
	"$(comp plugfs -c "$T/types.ini" show '')"
check_eq "plugfs register --type <TAB> with \$PLUGFS_CONFIG offers its types" \
	"alpha-t beta-t gamma-t" "$(PLUGFS_CONFIG=$T/types.ini comp plugfs register --type '')"
check_eq "plugfs deregister --alloc <TAB> with no daemon offers nothing" "" \
	"$(comp plugfs deregister --alloc '')"
has "plugfs register --type <TAB> offers csi-controller" csi-controller "$(comp plugfs register --type '')"
check_eq "plugfs register -k <TAB>" "controller monolith node" "$(comp plugfs register -k '')"
check_eq "plugfs register --probe <TAB>" "connect csi none" "$(comp plugfs register --probe '')"
check_eq "plugfs register --csi-name <TAB> offers nothing" "" "$(comp plugfs register --csi-name '')"
has "plugfs register --<TAB> offers --probe" --probe "$(comp plugfs register --)"
check_eq "plugfs wait -t <TAB> (a timeout) offers nothing" "" "$(comp plugfs wait -t '')"
has "plugfs wait -t 5 <TAB> offers the types" csi-node "$(comp plugfs wait -t 5 '')"
check_eq "plugfs register --name <TAB> offers nothing" "" "$(comp plugfs register --name '')"
has "plugfs register --type csi-node --<TAB> offers --socket" --socket \
	"$(comp plugfs register --type csi-node --)"

# Everything the program has, the completion offers.
"$PLUGFS_BIN" --help >"$T/help"
top=$(comp plugfs '')
for c in $(sed -n '/^Commands:/,/^$/p' "$T/help" | awk '/^  [a-z]/ {print $1}'); do
	has "plugfs <TAB> offers $c" "$c" "$top"
	opts=$(comp plugfs "$c" --)
	for o in $("$PLUGFS_BIN" "$c" --help 2>&1 | grep -Eo -- '(^|[^a-z-])--[a-z][a-z-]*' |
		grep -Eo -- '--[a-z-]+' | sort -u); do
		[ "$o" = "--help" ] && continue
		# state's options belong to its subcommands
		[ "$c" = state ] && opts=$(comp plugfs state dump --)
		has "plugfs $c --<TAB> offers $o" "$o" "$opts"
	done
done

# With a daemon, show/wait complete the registered plugins of the type.
require_fuse
start_daemon
# A config without [registry] types (the built-in ones): the daemon's types,
# from `plugfs status --json' (nothing registered yet: none served).
printf '[control]\nsocket = %s\n' "$CTL" >"$T/sockonly.ini"
check_eq "plugfs -c FILE wait <TAB> with no types in FILE offers the daemon's" \
	"csi-controller csi-node" "$(comp plugfs -c "$T/sockonly.ini" wait '')"
check_eq "status --json lists the configured types" '["csi-controller","csi-node"]' \
	"$("$PLUGFS_BIN" -c "$CFG" status --json | jq -c .types)"
for n in alpha beta; do
	"$PLUGFS_BIN" -c "$CFG" register --type csi-node --name "$n" --alloc a1 \
		--socket "$T/$n/csi.sock" >/dev/null || die "register $n failed"
done
"$PLUGFS_BIN" -c "$CFG" register --type csi-controller --name gamma --alloc a1 \
	--socket "$T/gamma/csi.sock" >/dev/null || die "register gamma failed"
check_eq "plugfs show csi-node <TAB> offers its plugins" "alpha beta" "$(comp plugfs show csi-node '')"
check_eq "plugfs watch --type <TAB> offers each type once (configured and served)" \
	"csi-controller csi-node" "$(comp plugfs watch --type '')"
check_eq "plugfs wait csi-controller <TAB> offers its plugins" "gamma" "$(comp plugfs wait csi-controller '')"
# --alloc of wait and deregister offers the registered allocs, once each.
"$PLUGFS_BIN" -c "$CFG" register --type csi-node --name alpha --alloc a2 \
	--socket "$T/alpha2/csi.sock" >/dev/null || die "register alpha a2 failed"
check_eq "plugfs wait csi-node alpha --alloc <TAB> offers its allocs" "a1 a2" \
	"$(comp plugfs wait csi-node alpha --alloc '')"
check_eq "plugfs wait -t 5 csi-node beta -a <TAB> offers its alloc" "a1" \
	"$(comp plugfs wait -t 5 csi-node beta -a '')"
check_eq "plugfs deregister --type csi-node --name alpha --alloc <TAB> offers its allocs" "a1 a2" \
	"$(comp plugfs deregister --type csi-node --name alpha --alloc '')"
check_eq "plugfs deregister -t csi-controller -n gamma -a <TAB> offers its alloc" "a1" \
	"$(comp plugfs deregister -t csi-controller -n gamma -a '')"
"$PLUGFS_BIN" -c "$CFG" register --type csi-controller --name gamma --alloc c3 \
	--socket "$T/gamma3/csi.sock" >/dev/null || die "register gamma c3 failed"
check_eq "plugfs deregister --type csi-node --alloc <TAB> offers the allocs of the type" "a1 a2" \
	"$(comp plugfs deregister --type csi-node --alloc '')"
check_eq "plugfs deregister --alloc <TAB> offers every alloc once" "a1 a2 c3" \
	"$(comp plugfs deregister --alloc '')"
check_eq "plugfs deregister --alloc a2<TAB> completes to a2 alone" "a2" \
	"$(comp plugfs deregister --alloc a2)"
# -c FILE on the command line is passed on (PLUGFS_CONFIG points elsewhere).
sed "s|^socket = .*|socket = $T/nobody.sock|" "$CFG" >"$T/other.ini"
check_eq "plugfs show csi-node <TAB> with a config that reaches no daemon" "" \
	"$(PLUGFS_CONFIG=$T/other.ini comp plugfs show csi-node '')"
check_eq "plugfs -c FILE show csi-node b<TAB>" "beta" \
	"$(PLUGFS_CONFIG=$T/other.ini comp plugfs -c "$CFG" show csi-node b)"
stop_daemon
finish
