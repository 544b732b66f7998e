#!/usr/bin/env bash
# A bind mount of plugfs's own mount in a discovery root is never entered:
# $MNT/plugins bind-mounted onto ROOT/a1 is skipped (a mount point below the
# root) by the rescan the change of the mount table starts (a mount sends
# no inotify event) while the mount serves, and a re-exec (SIGUSR2), whose
# start scans the root before the new program serves the mount, is ready and
# serves as before (it waited in an OPENDIR of ROOT/a1 nobody answered until
# its FUSE connection was aborted by hand).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
. "$(dirname "$0")/csi_lib.sh"
require_fuse
. "$(dirname "$0")/discover_lib.sh"
write_config "[discover.t]" "root = $ROOT" "[probe]" "mode = connect"
start_daemon
pid=$DAEMON_PID

start_plugin a0 node node.example.com
wait_until 20 "node.example.com is served from a0" served csi-node node.example.com a0 || exit 1
mkdir -m 0755 "$ROOT/a1"
mount --bind "$MNT/plugins" "$ROOT/a1" || die "cannot bind-mount $MNT/plugins onto $ROOT/a1"
on_cleanup umount -l "$ROOT/a1"

# ready_ge N: the daemon logged ready N times (the first start and each
# re-exec's new program).
ready_ge() { [ "$(grep -c 'plugfs info: ready: serving' "$DAEMON_LOG")" -ge "$1" ]; }
skip_line="$ROOT/a1: a mount point (another file system mounted on the directory, plugfs's own mount perhaps): never entered"
skipped_ge() { [ "$(grep -cF "$skip_line" "$DAEMON_LOG")" -ge "$1" ]; }

# The running program sees the mount at once (the mount table changed:
# every root is read again) and skips a1 without entering it.
wait_until 20 "the running program skips a1, a mount point, once mounted" skipped_ge 1
# Nothing has opened a directory of the mount yet (plugfs answers the
# first OPENDIR with ENOSYS, after which the kernel sends none): the
# re-exec's scan is the first of the new program, with nobody serving the
# mount.
n=$(grep -c 'plugfs info: ready: serving' "$DAEMON_LOG")
k=$(grep -cF "$skip_line" "$DAEMON_LOG")
kill -USR2 "$pid"
# 20 s: a re-exec is ready here about 0.6 s after the signal (ASan build).
# A wedged one never is: its connection is aborted (ours, by its device's
# minor) so that nothing stays blocked on it, and the test stops.
if ! wait_until --pid "$pid" 20 "the re-executed program is ready" ready_ge $((n + 1)); then
	abort_fuse_conn "$MNT"
	exit 1
fi
check "a consumer's ls of the mount answers" timeout -s KILL 20 ls "$MNT/plugins/csi-node"
check "node.example.com is still served from a0" served csi-node node.example.com a0
check "the re-exec's scan skipped a1, a mount point" skipped_ge $((k + 1))

# An unmount and a mount send no inotify event; the mount table's change
# has every root read again: a1 a plain directory again is watched, then
# mounted on again is skipped again.
m0=$(metric plugfs_discover_mount_changes_total)
umount "$ROOT/a1"
wait_until 20 "a1 is watched once it is a plain directory" \
	test "$(plugfs metrics | awk '$1 == "plugfs_discover_watches" { print $2 }')" = 3
check "the unmount was seen as a change of the mount table" \
	test "$(metric plugfs_discover_mount_changes_total)" -gt "$m0"
k=$(grep -cF "$skip_line" "$DAEMON_LOG")
mount --bind "$MNT/plugins" "$ROOT/a1" || die "cannot bind-mount $MNT/plugins onto $ROOT/a1"
wait_until 20 "the rescan skips a1, a mount point again" skipped_ge $((k + 1))
check_eq "a1 is no longer watched" 2 \
	"$(plugfs metrics | awk '$1 == "plugfs_discover_watches" { print $2 }')"
check "nothing of a1 is registered" bash -c "! grep -q 'alloc a1' '$DAEMON_LOG'"
umount "$ROOT/a1"
stop_daemon
finish
