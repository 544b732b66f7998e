#!/usr/bin/env bash
# The last deregistration does not kill a bind mount: a consumer bind-mounts
# a plugin directory, the plugin's last registration goes (the bind mount is
# an empty directory, `ls' works, no error; the type directory does not list
# the plugin, list/show/state dump do not show it), the plugin registers
# again (the same directory inode: the bind mount shows csi.sock, and
# connect() through it reaches the new allocation).  Also across a re-exec
# while the list is empty (the new process answers the nodeid the kernel
# holds), and across a stop and a start (the same inode number, checked on
# the mount itself: a stopped daemon's bind mounts are dead).
. "$(dirname "$0")/lib.sh"
require_fuse

write_config
start_demo_plugin "$T/run/a0/csi.sock" a0
start_demo_plugin "$T/run/a1/csi.sock" a1
start_daemon
E=$MNT/plugins/csi-node/rb
C=$T/consumer
reg() { plugfs register --type csi-node --name rb --alloc "$1" --socket "$T/run/$1/csi.sock" >/dev/null; }
dereg() { plugfs deregister --type csi-node --name rb --alloc "$1" >/dev/null; }

reg a0 || die "first registration"
ino=$(stat -c %i "$E")
mkdir -p "$C"
mount --bind "$E" "$C" || die "bind mount"
unbind() { ! mountpoint -q "$C" || umount -l "$C"; }
on_cleanup unbind
check_eq "the bind mount reaches a0" a0 "$(demo_connect "$C/csi.sock" 2>&1)"
stat "$C/info" >/dev/null # cached in the kernel: must go with the list

# empty_now WHAT: the plugin is gone from the tree and the tools, and the
# bind mount is an empty directory that answers.
empty_now() {
	local out rc
	out=$(ls -A "$C" 2>&1)
	rc=$?
	check_eq "$1: ls of the bind mount works" 0 "$rc"
	check_eq "$1: ... and lists nothing" "" "$out"
	check "$1: stat of the bind mount works" test -d "$C"
	check "$1: csi.sock is gone from it" test ! -e "$C/csi.sock"
	check "$1: ... and info" test ! -e "$C/info"
	check "$1: the type directory does not list it" bash -c "! ls -A '$MNT/plugins/csi-node' | grep -qx rb"
	check "$1: a lookup of its name fails" test ! -e "$E"
	check "$1: plugfs list does not show it" bash -c "! \"$PLUGFS_BIN\" -c \"$CFG\" list | grep -q rb"
	expect_errno "$1: lookup answers ENOENT" ENOENT stat "$E"
	"$PLUGFS_BIN" -c "$CFG" show csi-node rb >/dev/null 2>&1
	check_eq "$1: plugfs show answers not registered" 1 "$?"
}

dereg a0 || die "deregister a0"
empty_now "last deregistration"
reg a1 || die "register a1"
check_eq "registered again: the same directory inode" "$ino" "$(stat -c %i "$E")"
check "the bind mount shows csi.sock" test -L "$C/csi.sock"
check_eq "connect() through the bind mount reaches a1" a1 "$(demo_connect "$C/csi.sock" 2>&1)"
check "... allocs/a1" test -L "$C/allocs/a1"
check "... and info" grep -q "^a1 $T/run/a1/csi.sock " "$C/info"

# Empty across a re-exec: the new process answers the bind mount's root.
dereg a1 || die "deregister a1"
kill -USR2 "$DAEMON_PID"
wait_until --pid "$DAEMON_PID" 30 "the re-exec resumed the mount" resumed_ge 1 || exit 1
empty_now "empty across a re-exec"
reg a0 || die "register a0 after the re-exec"
check "after the re-exec: the bind mount shows csi.sock" test -L "$C/csi.sock"
check_eq "... and reaches a0" a0 "$(demo_connect "$C/csi.sock" 2>&1)"
check_eq "... the same directory inode" "$ino" "$(stat -c %i "$E")"

# Empty across a stop and a start: the same inode number (the bind mount of
# the stopped daemon is dead; checked on the new mount).
dereg a0 || die "deregister a0 before the stop"
unbind
stop_daemon
check "state check accepts the emptied plugin" bash -c "\"$PLUGFS_BIN\" -c \"$CFG\" state check >/dev/null"
check "state dump does not show it" bash -c "! \"$PLUGFS_BIN\" -c \"$CFG\" state dump | grep -q rb"
check_eq "the state file keeps one plugin row" 1 "$(sqlite3 "$STATE" 'SELECT count(*) FROM plugins')"
start_daemon
check "after the start: no directory for it" test ! -e "$E"
reg a1 || die "register a1 after the start"
check_eq "after a restart: the same directory inode" "$ino" "$(stat -c %i "$E")"
check_eq "... and it reaches a1" a1 "$(demo_connect "$E/csi.sock" 2>&1)"
check "no error in the daemon log" bash -c "! grep -Eiq 'error|cannot' '$DAEMON_LOG'"
stop_daemon
finish
