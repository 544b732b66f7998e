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
timeout -k 5 180 "$FS_HARNESS" switch -s "$STATE" -t csi-controller -t csi-node -m "$MNT" \
	-n 300 -r 4 -w 90 >"$T/out" 2>>"$DAEMON_LOG"
rc=$?
cat "$T/out"
check_eq "300 switches under 4 readers and a lister: no stale read, no deadlock" 0 "$rc"
check "the readers read" grep -Eq 'reads=[1-9]' "$T/out"
check_eq "no stale read after acknowledgement" 1 "$(grep -c ' stale=0 ' "$T/out")"
check "the harness unmounted" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
if [ "$rc" -ne 0 ]; then tail -n 30 "$DAEMON_LOG"; fi
check_daemon_log # the harness's log (sanitizer reports)

# The same through the daemon and its control socket: once `plugfs register'
# or `deregister' returns, the very next readlink / lookup sees the change
# (names and targets the kernel had cached included).
DAEMON_LOG=$T/daemon.log
rm -f "$STATE"
write_config
start_daemon
E=$MNT/plugins/csi-node/live
bad=0
prev=
for i in $(seq 1 40); do
	stat "$E/allocs/a$i" >/dev/null 2>&1 # a cached negative entry
	plugfs register --type csi-node --name live --alloc "a$i" --socket "/run/live/a$i/csi.sock" \
		>/dev/null || { bad=$((bad + 1)); break; }
	got=$(readlink "$E/csi.sock")
	[ "$got" = "/run/live/a$i/csi.sock" ] || { echo "switch $i: readlink gave [$got]"; bad=$((bad + 1)); }
	[ -L "$E/allocs/a$i" ] || { echo "switch $i: allocs/a$i missing"; bad=$((bad + 1)); }
	if [ -n "$prev" ]; then
		plugfs deregister --type csi-node --name live --alloc "$prev" >/dev/null || bad=$((bad + 1))
		[ -e "$E/allocs/$prev" ] || [ -L "$E/allocs/$prev" ] &&
			{ echo "allocs/$prev still there"; bad=$((bad + 1)); }
	fi
	prev=a$i
done
check_eq "40 switches through the control socket: each visible at once" 0 "$bad"
# An update in place (same alloc, new socket): csi.sock and allocs/ follow.
plugfs register --type csi-node --name live --alloc "$prev" --socket /run/live/moved/csi.sock \
	--version 2.0 >/dev/null
check_eq "an update in place retargets csi.sock at once" /run/live/moved/csi.sock "$(readlink "$E/csi.sock")"
check_eq "... and allocs/$prev" /run/live/moved/csi.sock "$(readlink "$E/allocs/$prev")"
check "... and info" grep -q "^$prev /run/live/moved/csi.sock 2.0 node " "$E/info"
plugfs deregister --type csi-node --name live --alloc "$prev" >/dev/null
check "the plugin directory goes with its last registration" test ! -e "$E"
check_eq "csi-node/ is empty again" "" "$(ls "$MNT/plugins/csi-node")"
stop_daemon
finish
