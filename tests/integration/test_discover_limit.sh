#!/usr/bin/env bash
# The inotify watch limit reached (lowered by the test knob
# PLUGFS_FAULT_DISCOVER_MAX_WATCHES to the root and two directories): the
# directories without a watch are rescanned every 2 s instead, said once in
# the log and in the metrics; their sockets are still registered, and
# deregistered when they go.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
. "$(dirname "$0")/csi_lib.sh"
require_fuse
. "$(dirname "$0")/discover_lib.sh"
write_config "[discover.t]" "root = $ROOT"
export PLUGFS_FAULT_DISCOVER_MAX_WATCHES=3
start_daemon
unset PLUGFS_FAULT_DISCOVER_MAX_WATCHES
# watches_are "WATCHES UNWATCHED": the metrics say so.
watches_are() { [ "$(metric plugfs_discover_watches) $(metric plugfs_discover_unwatched_directories)" = "$1" ]; }

# Each directory made first (its watch tried), its socket after.
for i in 1 2 3 4 5; do
	mkdir -m 0755 "$ROOT/a$i"
done
wait_until 10 "the directories are seen: the root and two watched, three not" watches_are "3 3"
for i in 1 2 3 4 5; do
	start_plugin "a$i" node "p$i.example.com"
done
for i in 1 2 3 4 5; do
	wait_until 30 "p$i.example.com is served" served csi-node "p$i.example.com" "a$i"
done
took "the last plugin, in a directory without a watch" a5
check_eq "the limit is said once" 1 "$(grep -c 'the inotify watch limit is reached' "$DAEMON_LOG")"
grep 'the inotify watch limit' "$DAEMON_LOG" | sed 's/^/# /'
r1=$(metric plugfs_discover_rescans_total)
T0=$(now_ms)
wait_until 40 "two more rescans (every 2 s)" rescans_ge $((r1 + 2)) &&
	pass "the rescans go on: two more after $r1 in $(($(now_ms) - T0)) ms"
# A socket gone from a directory without a watch: deregistered by a rescan.
stop_plugin a5
rm -f "$ROOT/a5/csi.sock"
T0=$(now_ms)
wait_until 20 "a5's socket gone: p5.example.com deregistered" test ! -e "$MNT/plugins/csi-node/p5.example.com"
echo "# a socket gone from an unwatched directory: deregistered after $(($(now_ms) - T0)) ms"
# A directory gone frees its place: the next one is watched again.
stop_plugin a1
rm -rf "$ROOT/a1"
wait_until 10 "a1's directory gone" test ! -e "$MNT/plugins/csi-node/p1.example.com"
wait_until 10 "the freed watch is taken by a directory without one" watches_are "3 2"
plugfs metrics | grep '^plugfs_discover' | sed 's/^/# /'
stop_daemon
finish
