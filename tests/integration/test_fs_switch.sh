#!/usr/bin/env bash
# Live changes: fs-harness mounts in-process and switches the active
# allocation through the registry API while reader threads loop on readlink
# of csi.sock and another lists allocs/.  After each registration is
# acknowledged, every readlink started later returns the new target, added
# and removed names show at once, a removed node stays answerable while
# held open; a watchdog (and `timeout') turns a deadlock into a failure.
. "$(dirname "$0")/lib.sh"
require_fuse

DAEMON_LOG=$T/harness.log
timeout -k 5 120 "$FS_HARNESS" switch -s "$STATE" -t csi-controller -t csi-node -m "$MNT" \
	-n 300 -r 4 -w 20 >"$T/out" 2>>"$DAEMON_LOG"
rc=$?
cat "$T/out"
check_eq "300 switches under 4 readers and a lister: no stale read, no deadlock" 0 "$rc"
check "the readers read" grep -Eq 'reads=[1-9]' "$T/out"
check_eq "no stale read after acknowledgement" 1 "$(grep -c ' stale=0 ' "$T/out")"
check "the harness unmounted" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
if [ "$rc" -ne 0 ]; then tail -n 30 "$DAEMON_LOG"; fi
finish
