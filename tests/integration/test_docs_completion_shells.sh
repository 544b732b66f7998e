#!/usr/bin/env bash
# contrib/plugfs.zsh-completion and contrib/plugfs.fish, loaded in a real
# zsh (an interactive shell on a pseudo-terminal, zsh_complete.zsh: LINE and
# a TAB are typed, the candidates compadd was given are read back) and a
# real fish (`complete -C LINE'), offer what the bash completion offers
# (test_docs_completion.sh): every subcommand of `plugfs --help', every
# option of each subcommand's --help, the configured types, and, from a
# running daemon, its types, plugin names and alloc ids.
. "$(dirname "$0")/lib.sh"
require_fuse
for sh in zsh fish; do
	if ! command -v "$sh" >/dev/null; then
		if [ "${CI:-}" = "true" ]; then
			die "$sh is not installed (bash contrib/install-deps.sh; CI=true: not skipping)"
		fi
		echo "SKIP: $sh is not installed (bash contrib/install-deps.sh)"
		exit 77
	fi
done
SRC=$PLUGFS_SOURCE_DIR
# The completions run `plugfs': the build's binary, first on the PATH.
mkdir -p "$T/bin" "$T/zfunc"
ln -s "$PLUGFS_BIN" "$T/bin/plugfs"
export PATH=$T/bin:$PATH
# compinit finds a completion function by its file name, as it would in
# /usr/share/zsh/vendor-completions.
cp "$SRC/contrib/plugfs.zsh-completion" "$T/zfunc/_plugfs"
write_config
export PLUGFS_CONFIG=$CFG

# zc LINE / fc LINE: the candidates zsh / fish offer for LINE's last word,
# sorted, on one line.
zc() {
	local out rc
	out=$(timeout 60 zsh -f "$SRC/tests/integration/zsh_complete.zsh" "$T/zfunc" "$1")
	rc=$?
	[ "$rc" -eq 0 ] || { echo "zsh-failed($rc)"; return; }
	sort -u <<<"$out" | sed '/^$/d' | tr '\n' ' ' | sed 's/ $//'
}
fc() {
	# shellcheck disable=SC2016 # fish expands $argv
	timeout 60 fish --no-config -c 'source $argv[1]; and complete -C $argv[2]' \
		"$SRC/contrib/plugfs.fish" "$1" | cut -f1 | sort -u | sed '/^$/d' | tr '\n' ' ' | sed 's/ $//'
}
# both DESCRIPTION EXPECTED LINE: zsh and fish offer EXPECTED for LINE.
both() {
	check_eq "zsh: $1" "$2" "$(zc "$3")"
	check_eq "fish: $1" "$2" "$(fc "$3")"
}
# has_both DESCRIPTION WORD LINE: WORD is among what each offers for LINE.
has_in() { grep -qw -- "$1" <<<" $2 "; }
has_both() {
	local sh got
	for sh in zc fc; do
		got=$($sh "$3")
		if has_in "$2" "$got"; then pass "$sh: $1"; else fail "$sh: $1: \`$2' not in [$got]"; fi
	done
}

check "zsh's capture works at all (plugfs reg<TAB> is not empty)" test -n "$(zc 'plugfs reg')"
both "plugfs reg<TAB>" "register" "plugfs reg"
both "plugfs st<TAB>" "state status stop-post" "plugfs st"
both "plugfs -c FILE li<TAB>" "list" "plugfs -c $CFG li"
both "plugfs register --kind <TAB>" "controller monolith node" "plugfs register --kind "
both "plugfs register -k <TAB>" "controller monolith node" "plugfs register -k "
both "plugfs register --probe <TAB>" "connect csi none" "plugfs register --probe "
both "plugfs state <TAB>" "check dump import" "plugfs state "
both "plugfs show <TAB> offers the configured types (no daemon)" "csi-controller csi-node" "plugfs show "
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
both "plugfs -c FILE show <TAB> offers FILE's types" "alpha-t beta-t gamma-t" "plugfs -c $T/types.ini show "
PLUGFS_CONFIG=$T/types.ini both "plugfs register --type <TAB> with \$PLUGFS_CONFIG offers its types" \
	"alpha-t beta-t gamma-t" "plugfs register --type "
both "plugfs deregister --alloc <TAB> with no daemon offers nothing" "" "plugfs deregister --alloc "
both "plugfs register --csi-name <TAB> offers nothing" "" "plugfs register --csi-name "
both "plugfs register --name <TAB> offers nothing" "" "plugfs register --name "
both "plugfs wait -t <TAB> (a timeout) offers nothing" "" "plugfs wait -t "
has_both "plugfs wait -t 5 <TAB> offers the types" csi-node "plugfs wait -t 5 "
has_both "plugfs register --type csi-node --<TAB> offers --socket" --socket "plugfs register --type csi-node --"
has_both "plugfs state import <TAB> offers files" types.ini "plugfs state import $T/ty"

# Everything the program has, both offer.
"$PLUGFS_BIN" --help >"$T/help"
for sh in zc fc; do
	top=$($sh "plugfs ")
	for c in $(sed -n '/^Commands:/,/^$/p' "$T/help" | awk '/^  [a-z]/ {print $1}'); do
		if has_in "$c" "$top"; then pass "$sh: plugfs <TAB> offers $c"; else fail "$sh: plugfs <TAB> offers $c: [$top]"; fi
		line="plugfs $c --"
		# state's options belong to its subcommands
		[ "$c" = state ] && line="plugfs state dump --"
		opts=$($sh "$line")
		for o in $("$PLUGFS_BIN" "$c" --help 2>&1 | grep -Eo -- '(^|[^a-z-])--[a-z][a-z-]*' |
			grep -Eo -- '--[a-z-]+' | sort -u); do
			[ "$o" = "--help" ] && [ "$c" = state ] && continue
			if has_in "$o" "$opts"; then pass "$sh: $line<TAB> offers $o"; else fail "$sh: $line<TAB> offers $o: [$opts]"; fi
		done
	done
done

# With a daemon: its types, its plugins' names, their alloc ids.
start_daemon
printf '[control]\nsocket = %s\n' "$CTL" >"$T/sockonly.ini"
both "plugfs -c FILE wait <TAB> with no types in FILE offers the daemon's" \
	"csi-controller csi-node" "plugfs -c $T/sockonly.ini wait "
for n in alpha beta; do
	"$PLUGFS_BIN" -c "$CFG" register --type csi-node --name "$n" --alloc a1 \
		--socket "$T/$n/csi.sock" >/dev/null || die "register $n failed"
done
"$PLUGFS_BIN" -c "$CFG" register --type csi-controller --name gamma --alloc a1 \
	--socket "$T/gamma/csi.sock" >/dev/null || die "register gamma failed"
both "plugfs show csi-node <TAB> offers its plugins" "alpha beta" "plugfs show csi-node "
both "plugfs watch --type <TAB> offers each type once" "csi-controller csi-node" "plugfs watch --type "
both "plugfs wait csi-controller <TAB> offers its plugins" "gamma" "plugfs wait csi-controller "
"$PLUGFS_BIN" -c "$CFG" register --type csi-node --name alpha --alloc a2 \
	--socket "$T/alpha2/csi.sock" >/dev/null || die "register alpha a2 failed"
both "plugfs wait csi-node alpha --alloc <TAB> offers its allocs" "a1 a2" "plugfs wait csi-node alpha --alloc "
both "plugfs wait -t 5 csi-node beta -a <TAB> offers its alloc" "a1" "plugfs wait -t 5 csi-node beta -a "
both "plugfs deregister --type csi-node --name alpha --alloc <TAB> offers its allocs" "a1 a2" \
	"plugfs deregister --type csi-node --name alpha --alloc "
both "plugfs deregister -t csi-controller -n gamma -a <TAB> offers its alloc" "a1" \
	"plugfs deregister -t csi-controller -n gamma -a "
"$PLUGFS_BIN" -c "$CFG" register --type csi-controller --name gamma --alloc c3 \
	--socket "$T/gamma3/csi.sock" >/dev/null || die "register gamma c3 failed"
both "plugfs deregister --type csi-node --alloc <TAB> offers the allocs of the type" "a1 a2" \
	"plugfs deregister --type csi-node --alloc "
both "plugfs deregister --alloc <TAB> offers every alloc once" "a1 a2 c3" "plugfs deregister --alloc "
both "plugfs deregister --alloc a2<TAB> completes to a2 alone" "a2" "plugfs deregister --alloc a2"
# -c FILE on the command line is passed on ($PLUGFS_CONFIG reaches no daemon).
sed "s|^socket = .*|socket = $T/nobody.sock|" "$CFG" >"$T/other.ini"
PLUGFS_CONFIG=$T/other.ini both "plugfs show csi-node <TAB> with a config that reaches no daemon" "" \
	"plugfs show csi-node "
PLUGFS_CONFIG=$T/other.ini both "plugfs -c FILE show csi-node b<TAB>" "beta" \
	"plugfs -c $CFG show csi-node b"
stop_daemon
finish
