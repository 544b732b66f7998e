#!/usr/bin/env bash
# A flapping plugin and the hysteresis ([probe] failures, plugfs.ini(5)):
# with interval 0.2 s and failures 3, a socket that is down for less than
# (failures - 1) x interval at a time, and up for more than an interval in
# between, never turns dead and causes no switch, however often it flaps;
# one that stays down longer than failures x interval (plus a round) causes
# exactly two switches per outage (away to the older live allocation, back
# when it returns).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
# The rounds alone (a test knob): this plugin closes its listener and
# listens again in one process, which no watch sees (the file stays, the
# process lives); with the watches a listener that has a pidfd is not
# connected by the rounds in connect mode (docs/design.md, "Semantics").
export PLUGFS_FAULT_NO_WATCH=1
write_config "[probe]" "mode = connect" "interval = 0.2" "timeout = 0.5" "failures = 3"
start_daemon
E=$MNT/plugins/csi-node/p
FLAPPER=$PLUGFS_SOURCE_DIR/tests/integration/flapper.py

a2_alive() { [ "$(health_of a2)" = alive ]; }
# flap UP_MS DOWN_MS CYCLES: a2's socket flaps, then stays up; waits for it.
flap() {
	rm -f "$T/flap.out" # here: the background job's redirection may come late
	python3 "$FLAPPER" "$(sock_of a2)" a2 "$@" >"$T/flap.out" 2>&1 &
	flap_pid=$!
	_PIDS+=("$flap_pid")
	# Its own "up" line: the socket file of an earlier one may be there.
	wait_until 10 "the flapper listens" grep -q '^up' "$T/flap.out"
}
# Events of the current phase's watch (in $W).
active_events() { jq -s 'map(select(.event == "active")) | length' "$W"; }
dead_events() { jq -s 'map(select(.event == "health" and .alloc == "a2" and .new == "dead")) | length' "$W"; }
downs() { grep -c '^down' "$T/flap.out"; }
downs_at_least() { [ "$(downs)" -ge "$1" ]; }
ups_at_least() { [ "$(grep -c '^up' "$T/flap.out")" -ge "$1" ]; }

demo a1
flap 600 250 8
reg csi-node p a1
reg csi-node p a2
wait_until 5 "a2 is probed alive" a2_alive
# Not expect_active: its connect through csi.sock would race a2's first
# outage (a loaded machine reaches this line 600 ms after the flapper's
# first "up"); the link and show say which allocation is active.
check "a2 newest and alive: csi.sock points at a2" link_is a2
check_eq "a2 newest and alive: show --json says a2 is active" a2 \
	"$(plugfs show csi-node p --json | jq -r .active)"
W=$T/watch1.json
plugfs_bg watch --json >"$W" 2>"$T/watch.err" &
watch_pid=$!
_PIDS+=("$watch_pid")
sleep 0.3

# Short outages: 8 of 250 ms (at most 2 probes each, failures = 3).
moved=0
until [ "$(downs)" -ge 8 ] && grep -q "^up" <(tail -n 1 "$T/flap.out"); do
	link_is a2 || moved=$((moved + 1))
	sleep 0.02
	kill -0 "$flap_pid" 2>/dev/null || break
done
sleep 0.5
echo "# flapper: $(downs) outages of 250 ms, up 600 ms in between"
check_eq "the flapper went down 8 times" 8 "$(downs)"
check_eq "short outages: no active event" 0 "$(active_events)"
check_eq "short outages: a2 never turned dead" 0 "$(dead_events)"
check_eq "short outages: csi.sock never left a2" 0 "$moved"
check "short outages: failed probes were seen (health events with errors)" \
	jq -e -s 'map(select(.event == "health" and .alloc == "a2" and .error == "connection refused")) | length >= 1' "$W"
expect_active "a2 still active" csi-node p a2
kill "$flap_pid"
wait "$flap_pid" 2>/dev/null

# Long outages: 2 of 1.5 s, up 1.5 s in between: two switches each.  The
# new flapper waits for its gate: the moment between the two flappers (a2
# refusing, maybe long enough on a busy machine to turn dead and back) is
# over before the watch starts.
kill "$watch_pid"
wait "$watch_pid" 2>/dev/null
flap 1500 1500 2 "$T/gate"
wait_until 5 "a2 is alive again" a2_alive
wait_until 5 "a2 active again" link_is a2
expect_active "a2 active before the long outages" csi-node p a2
W=$T/watch2.json
plugfs_bg watch --json >"$W" 2>"$T/watch.err" &
watch_pid=$!
_PIDS+=("$watch_pid")
wait_until 10 "the daemon counts the watcher" watchers_are 1
touch "$T/gate"
wait_until 5 "the first long outage began" downs_at_least 1
wait_until 15 "two long outages over" ups_at_least 3
sleep 0.5
wait_until 5 "a2 back after the second" a2_alive
sleep 0.3
check_eq "long outages: exactly 4 active events (away and back, twice)" 4 "$(active_events)"
check "long outages: each went away to a1 and back to a2" \
	jq -e -s '[.[] | select(.event == "active") | .new_alloc] == ["a1", "a2", "a1", "a2"]' "$W"
expect_active "a2 active at the end" csi-node p a2
kill "$watch_pid" 2>/dev/null
stop_daemon
finish
