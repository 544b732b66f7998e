#!/usr/bin/env bash
# The directories above a [discover.NAME] root: one another user owns
# refuses the root at start and at reload (named with the field, the path,
# the directory and the rule); one that turns another user's while plugfs
# runs takes the root's registrations with it, and that user's swap of the
# path (mv u/w u/w.old, their own tree and socket at the same path) is
# never reached through the mount (it was: consumers connected to the
# user's socket, health alive, no log line).  An administrator's swap of
# the root's path deregisters what the old root held, with a line naming
# the root, and the new root is watched.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
. "$(dirname "$0")/csi_lib.sh"
require_fuse
D=$T/d
U=$D/u
R=$U/w/plugins
mkdir -m 0755 "$D" "$U" "$U/w" "$R" "$R/a1"
nobody=$(id -u nobody)
served() { [ "$(readlink "$MNT/plugins/$1/$2/csi.sock")" = "$3" ]; }
rescans() { plugfs metrics | awk '$1 == "plugfs_discover_rescans_total" { print $2 }'; }
rescans_past() { [ "$(rescans)" -ge "$1" ]; }

chown nobody "$U"
write_config "[discover.nomad]" "root = $R" "[probe]" "mode = connect"
mount_to_exit "$T/start.out"
check "an ancestor another user's: the daemon does not start" test $? -ne 0
check "an ancestor another user's: the field, the path, the directory and the rule are named" \
	grep -qF "[discover.nomad] root \`$R': directory \`$U' above it is owned by uid $nobody, not root: its owner could rename what is in it and put another directory in its place; expected every directory above it owned by root and writable by no one else (or sticky, like /tmp)" "$T/start.out"

chown root "$U"
start_daemon
csi_plugin "$R/a1/csi.sock" --flavour node --name node.example.com
wait_until 20 "node.example.com is served from a1" served csi-node node.example.com "$R/a1/csi.sock" || exit 1

# A reload to a root below another user's directory: refused, kept.
mkdir -m 0755 "$D/v" "$D/v/plugins"
chown nobody "$D/v"
sed -i "s|^root = $R\$|root = $D/v/plugins|" "$CFG"
plugfs reload >/dev/null 2>"$T/err"
check_eq "reload to a root below another user's directory: exit 1" 1 $?
check "reload: named" grep -qF "[discover.nomad] root \`$D/v/plugins': directory \`$D/v' above it is owned by uid $nobody" "$T/err"
sed -i "s|^root = $D/v/plugins\$|root = $R|" "$CFG"
check "the running root still serves" served csi-node node.example.com "$R/a1/csi.sock"

# u handed to nobody while plugfs runs (its chown: an event on a directory
# above the root): the root is refused, what it held goes, one line says why.
chown nobody "$U"
wait_until 20 "node.example.com is deregistered" test ! -e "$MNT/plugins/csi-node/node.example.com" || exit 1
check "a line names the root, the directory and the rule" \
	grep -qF "discover.nomad: [discover.nomad] root \`$R': directory \`$U' above it is owned by uid $nobody, not root" "$DAEMON_LOG"
# nobody's swap: their own tree and socket at the root's path.
as_nobody mv "$U/w" "$U/w.old" || die "nobody cannot rename $U/w"
as_nobody mkdir -p "$R/a1" || die "nobody cannot make $R/a1"
# setpriv itself (as_nobody is a function: $! would be its subshell's pid,
# and the plugin outlived the test).
setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$CSI_PYTHON" "$(csi_plugin_copy)" \
	--socket "$R/a1/csi.sock" --flavour node --name node.example.com >>"$T/csi-plugin.log" 2>&1 &
_PIDS+=("$!")
wait_until 30 "nobody's plugin listens" test -S "$R/a1/csi.sock" || exit 1
# Two of the 2 s rescans of a refused root after nobody's socket is there.
n=$(rescans)
wait_until 20 "two rescans of the refused root" rescans_past $((n + 2)) || exit 1
check "nobody's socket is not served" test ! -e "$MNT/plugins/csi-node/node.example.com"
check "nothing registered since" bash -c "[ \$(grep -c 'discover.nomad: registered' '$DAEMON_LOG') -eq 1 ]"

# The administrator puts the old tree back: served again from it.
kill "${_PIDS[-1]}"
rm -rf "$U/w"
mv "$U/w.old" "$U/w"
chown root "$U"
wait_until 20 "root good again: node.example.com served from a1" \
	served csi-node node.example.com "$R/a1/csi.sock" || exit 1
# The administrator swaps the root's path for a new tree: what the old
# root held goes, with a line naming the root; the new one is watched.
# One rename (RENAME_EXCHANGE): the path never goes missing meanwhile.
mkdir -m 0755 "$U/w.new" "$U/w.new/plugins"
python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2) != 0:
    sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))' "$U/w.new" "$U/w" ||
	die "cannot exchange $U/w.new and $U/w"
wait_until 20 "the old root's registration goes" test ! -e "$MNT/plugins/csi-node/node.example.com" || exit 1
check "a line names the root" grep -qF "discover.nomad: root $R is another directory now (a directory on its path was renamed or replaced): the registrations found in the one held go, the new one is scanned" "$DAEMON_LOG"
check "why it went" grep -qF "discover.nomad: deregistered csi-node/node.example.com alloc a1: its root was replaced" "$DAEMON_LOG"
mkdir -m 0755 "$R/a2"
csi_plugin "$R/a2/csi.sock" --flavour node --name node.example.com
wait_until 20 "the new root's a2 is served" served csi-node node.example.com "$R/a2/csi.sock"
stop_daemon
finish
