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
for args in "list" "status" "show csi-node x" "wait csi-node x --timeout 1" "watch" \
	"deregister --alloc a0" "register --type csi-node --name n --alloc a --socket /s"; do
	# shellcheck disable=SC2086
	plugfs $args >"$T/out" 2>"$T/err"
	rc=$?
	check_eq "plugfs $args with the daemon down exits 3" 3 "$rc"
	check "plugfs $args names the socket it tried" grep -qF "cannot reach the plugfs daemon at $CTL" "$T/err"
done
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
