#!/usr/bin/env bash
# The control subcommands without a daemon: --help, usage errors, and exit 3
# with the socket path when the daemon cannot be reached.
. "$(dirname "$0")/lib.sh"
write_config

for c in register deregister list show wait watch status; do
	"$PLUGFS_BIN" "$c" --help >"$T/help" 2>&1
	check_eq "plugfs $c --help exits 0" 0 $?
	check "plugfs $c --help shows its usage" grep -q "^Usage: plugfs $c" "$T/help"
	check "plugfs --help lists $c" bash -c "'$PLUGFS_BIN' --help | grep -q '^  $c '"
done

# The daemon is not running: exit 3 and the path it tried.
# (wait --timeout waits for the daemon first: test_control_wait_daemon.)
for args in "list" "status" "show csi-node x" "wait csi-node x" "watch" \
	"deregister --alloc a0" "register --type csi-node --name n --alloc a --socket /s" \
	"deregister -q --alloc a0" "register --quiet --type csi-node --name n --alloc a --socket /s"; do
	# shellcheck disable=SC2086
	plugfs $args >"$T/out" 2>"$T/err"
	rc=$?
	check_eq "plugfs $args with the daemon down exits 3" 3 "$rc"
	check_eq "plugfs $args says there is no daemon at the socket, once" \
		"plugfs ${args%% *}: no plugfs daemon: $CTL does not exist (the daemon is not running, or [control] socket names another path)" \
		"$(cat "$T/err")"
done
# A stale socket (a daemon that died without removing it): connect is refused.
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$CTL" ||
	die "cannot make a stale socket at $CTL"
plugfs status 2>"$T/err"
check_eq "status with a stale socket exits 3" 3 $?
check "a stale socket is called stale" grep -qF "no plugfs daemon answers at $CTL: the socket is stale" "$T/err"
# A user who may not use the socket (root's, 0660): the rule, not "is it running?".
chmod 0660 "$CTL"
install -m 0755 "$PLUGFS_BIN" "$T/plugfs" # where nobody may run it
as_nobody "$T/plugfs" -c "$CFG" status 2>"$T/err"
check_eq "status by a user who may not connect exits 3" 3 $?
check "the permission error names the rule and the user" \
	grep -qF "permission denied on $CTL: the control socket is for root only ([control] group is not set); this is uid $(id -u nobody)" "$T/err"
check "the permission error does not ask whether the daemon runs" bash -c "! grep -q running '$T/err'"
rm -f "$CTL"
# The same through -c after the subcommand and $PLUGFS_CONFIG.
"$PLUGFS_BIN" list -c "$CFG" 2>"$T/err"
check_eq "list -c FILE with the daemon down exits 3" 3 $?
PLUGFS_CONFIG=$CFG "$PLUGFS_BIN" status 2>"$T/err"
check_eq "status with \$PLUGFS_CONFIG and the daemon down exits 3" 3 $?
check "it names the socket from \$PLUGFS_CONFIG" grep -qF "$CTL" "$T/err"

"$PLUGFS_BIN" -c "$T/missing.ini" list 2>"$T/err"
check_eq "a missing -c file is an error (exit 1)" 1 $?

# Usage errors come before any connection attempt.
plugfs register --type csi-node 2>"$T/err"
check_eq "usage errors exit 2 even with the daemon down" 2 $?

# An argument to an option that takes none is named as typed (it was
# reported as the unknown short option `-j').
for args in "list --json=yes" "status --js=1" "show --help=x" "state dump --json=1"; do
	# shellcheck disable=SC2086
	plugfs $args 2>"$T/err"
	check_eq "plugfs $args exits 2" 2 $?
	o=${args##* }
	check "plugfs $args: ${o%%=*} takes no argument" grep -qF "option \`${o%%=*}' takes no argument" "$T/err"
done
plugfs list --type=x -jq 2>"$T/err"
check "a bad short option after --type=x is named as such" grep -qF "unknown option \`-j'" "$T/err"
finish
