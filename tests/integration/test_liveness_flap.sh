#!/usr/bin/env bash
# A flapping plugin and the hysteresis ([probe] failures, plugfs.ini(5)):
# with failures 3, a socket that is down for fewer than 3 consecutive
# probes at a time never turns dead and causes no switch, however often it
# flaps; one that stays down for 3 causes exactly two switches per outage
# (away to the older live allocation, back when it returns).  The outages
# follow the daemon's events, not a clock: the flapper goes down, comes up
# again once the watch shows a failed probe (short) or a2 dead (long), and
# the next outage begins once a probe succeeded.  The test's reaction to
# an event takes about 0.1 s; a short outage would have to last 2 s more
# (two more rounds 1 s apart) to turn dead: a margin of 10x and more.
# About 20 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
# The rounds alone (a test knob): this plugin closes its listener and
# listens again in one process, which no watch sees (the file stays, the
# process lives); with the watches a listener that has a pidfd is not
# connected by the rounds in connect mode (docs/design.md, "Semantics").
export PLUGFS_FAULT_NO_WATCH=1
write_config "[probe]" "mode = connect" "interval = 1" "timeout = 0.5" "failures = 3"
start_daemon
E=$MNT/plugins/csi-node/p
FLAPPER=$PLUGFS_SOURCE_DIR/tests/integration/flapper.py

a2_alive() { [ "$(health_of a2)" = alive ]; }
# Events of the current phase's watch (in $W).
a2_health() { jq -s --arg q "$1" "map(select(.event == \"health\" and .alloc == \"a2\") | select($1)) | length" "$W"; }
fails() { a2_health '.error == "connection refused"'; }
recovered() { a2_health '.error == null and .old == "alive" and .new == "alive"'; }
fails_ge() { [ "$(fails)" -ge "$1" ]; }
recovered_ge() { [ "$(recovered)" -ge "$1" ]; }
active_events() { jq -s 'map(select(.event == "active")) | length' "$W"; }
dead_events() { a2_health '.new == "dead"'; }
dead_ge() { [ "$(dead_events)" -ge "$1" ]; }
max_failures() { jq -s '[.[] | select(.event == "health" and .alloc == "a2") | .failures] | max // 0' "$W"; }
downs() { grep -c '^down' "$T/flap.out"; }
flapper_is() { [ "$(tail -n 1 "$T/flap.out" | cut -d' ' -f1)" = "$1" ]; }
# start_watch FILE: a watcher writing to FILE, counted by the daemon.
start_watch() {
	W=$1
	plugfs_bg watch --json >"$W" 2>"$T/watch.err" &
	watch_pid=$!
	_PIDS+=("$watch_pid")
	wait_until 10 "the daemon counts the watcher" watchers_are 1 || exit 1
}
# down / up: the flapper closes its listener / listens again, and says so.
down() { kill -USR1 "$flap_pid" && wait_until 10 "the flapper is down" flapper_is down; }
up() { kill -USR2 "$flap_pid" && wait_until 10 "the flapper is up" flapper_is up; }

demo a1
python3 "$FLAPPER" "$(sock_of a2)" a2 >"$T/flap.out" 2>&1 &
flap_pid=$!
_PIDS+=("$flap_pid")
wait_until 10 "the flapper listens" flapper_is up || exit 1
reg csi-node p a1
reg csi-node p a2
wait_until 5 "a2 is probed alive" a2_alive
expect_active "a2 newest and alive" csi-node p a2
start_watch "$T/watch1.json"

# Short outages: each over once a probe of it failed (1 failure of 3).
SHORT=6
moved=0
for i in $(seq 1 "$SHORT"); do
	f=$(fails) r=$(recovered)
	down || exit 1
	wait_until 10 "outage $i: a probe fails" fails_ge $((f + 1)) || exit 1
	up || exit 1
	wait_until 10 "outage $i: a probe succeeds again" recovered_ge $((r + 1)) || exit 1
	link_is a2 || moved=$((moved + 1))
done
echo "# $SHORT short outages, each ended at its first failed probe; most failures in a row: $(max_failures)"
check_eq "the flapper went down $SHORT times" "$SHORT" "$(downs)"
check_eq "short outages: each one's probe failed" "$SHORT" "$(fails)"
check "short outages: never 3 failures in a row ($(max_failures))" test "$(max_failures)" -lt 3
check_eq "short outages: no active event" 0 "$(active_events)"
check_eq "short outages: a2 never turned dead" 0 "$(dead_events)"
check_eq "short outages: csi.sock never left a2" 0 "$moved"
expect_active "a2 still active" csi-node p a2
kill "$watch_pid"
wait "$watch_pid" 2>/dev/null

# Long outages: each until a2 is dead (3 failures), then up until it is
# alive again: two switches each.
start_watch "$T/watch2.json"
for i in 1 2; do
	down || exit 1
	wait_until 15 "long outage $i: a2 is dead" dead_ge "$i" || exit 1
	wait_until 5 "long outage $i: csi.sock moved to a1" link_is a1 || exit 1
	up || exit 1
	wait_until 5 "long outage $i: a2 is alive again" a2_alive || exit 1
	wait_until 5 "long outage $i: csi.sock back on a2" link_is a2 || exit 1
done
wait_until 5 "the watch has the 4 active events" eval '[ "$(active_events)" -ge 4 ]'
check_eq "long outages: exactly 4 active events (away and back, twice)" 4 "$(active_events)"
check "long outages: each went away to a1 and back to a2" \
	jq -e -s '[.[] | select(.event == "active") | .new_alloc] == ["a1", "a2", "a1", "a2"]' "$W"
expect_active "a2 active at the end" csi-node p a2
kill "$watch_pid" 2>/dev/null
stop_daemon
finish
