#!/usr/bin/env bash
# The watches ([probe] mode = connect, rounds 30 s apart: no round comes
# during the test): a listener's exit (a pidfd) and its socket's return
# (inotify on its directory) are probed at once.  kill -9 of the active
# plugin switches csi.sock to the older allocation within a couple of
# seconds, dead at once (x1: no failures hysteresis for an exit); a plugin
# restarted on its path is active again before any round; a listener whose
# process handed the socket to a child and exited is probed, found alive and
# stays active.  Then each fallback, the daemon started again with a test
# knob: no pidfd (every pidfd_open refused) and the inotify watch limit; the
# rounds (0.3 s apart) still fail over, the metrics and the log say so.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
write_config "[probe]" "mode = connect" "interval = 30" "timeout = 0.5" "failures = 3"
start_daemon
E=$MNT/plugins/csi-node/p

# metric NAME{LABELS}: its value in `plugfs metrics'.
metric() { plugfs metrics | awk -v k="$1" '$1 == k { print $2 }'; }
watches_are() { [ "$(metric "plugfs_probe_watches{kind=\"$1\"}")" = "$2" ]; }
probes_above() { [ "$(metric plugfs_probe_watch_probes_total)" -gt "$1" ]; }

demo a1
demo a2
pid_a2=$DEMO_PID
reg csi-node p a1
reg csi-node p a2
expect_active "both alive" csi-node p a2
# Each listener's pid came with a probe's connection: a pidfd each.
wait_until 10 "both registrations have a pidfd" watches_are pidfd 2 || exit 1
check_eq "nothing is left to the rounds alone" 0 "$(metric 'plugfs_probe_watches{kind="poll"}')"

# kill -9: the exit is an event, the probe that follows fails: dead at once.
kill -KILL "$pid_a2"
wait "$pid_a2" 2>/dev/null
t0=$(ms)
wait_until 5 "csi.sock leads to a1 after a2 was killed (no round for 30 s)" link_is a1
echo "# kill -9 to csi.sock on a1: $(($(ms) - t0)) ms (functional check; the figures are plugfs-bench --watch's)"
expect_active "a2 killed" csi-node p a1
check_eq "show says a2 is dead" dead "$(health_of a2)"
check "the log says why: the exit's one probe, not three" \
	grep -q "active csi-node/p: a2 -> a1 (a2: connection refused x1)" "$DAEMON_LOG"

# Restarted on its path: the socket's creation is an event.
rm -f "$(sock_of a2)"
demo a2
wait_until 5 "csi.sock leads to a2 again before any round" link_is a2
expect_active "a2 back" csi-node p a2
wait_until 10 "the new a2 process has a pidfd" watches_are pidfd 2

# A listener whose parent (the process that called listen()) exits while a
# child serves on: the exit is probed, the socket answers, it stays alive.
mkfifo "$T/release"
python3 "$PLUGFS_SOURCE_DIR/tests/integration/forked_listener.py" "$(sock_of a3)" a3 \
	"$T/a3.child" "$T/release" >>"$T/forked.log" 2>&1 &
parent=$!
_PIDS+=("$parent")
mkdir -p "$T/alloc/a3" 2>/dev/null
wait_until 10 "the forked listener wrote its child's pid" test -s "$T/a3.child" || exit 1
child=$(cat "$T/a3.child")
_PIDS+=("$child")
reg csi-node p a3
expect_active "a3 registered" csi-node p a3
wait_until 10 "a3's listener has a pidfd" watches_are pidfd 3 || exit 1
before=$(metric plugfs_probe_watch_probes_total)
echo go >"$T/release"
wait "$parent" 2>/dev/null
wait_until 5 "the parent's exit was probed" probes_above "$before"
check_eq "a3 is still alive: its child serves" alive "$(health_of a3)"
expect_active "a3 still active" csi-node p a3
kill -KILL "$child"
stop_daemon
check_daemon_log

# The daemon again with a test knob (rounds 0.3 s apart, two failures).
restart_with() {
	: >"$DAEMON_LOG"
	rm -f "$STATE"
	write_config "[probe]" "mode = connect" "interval = 0.3" "timeout = 0.5" "failures = 2"
	export "$1"
	start_daemon
	unset "${1%%=*}"
}
fallbacks_are() { [ "$(metric "plugfs_probe_watch_fallbacks_total{reason=\"$1\"}")" -ge 1 ]; }

# No pidfd: kill -9 of the active one fails over by the rounds (x2).
restart_with PLUGFS_FAULT_NO_PIDFD=1
demo b1
demo b2
pid_b2=$DEMO_PID
reg csi-node p b1
reg csi-node p b2
wait_until 10 "no pidfd: the fallback is counted" fallbacks_are no_pidfd || exit 1
check_eq "no pidfd: none is held" 0 "$(metric 'plugfs_probe_watches{kind="pidfd"}')"
check_eq "no pidfd: both sockets' names are watched" 2 "$(metric 'plugfs_probe_watches{kind="inotify"}')"
check "no pidfd: the log says so once" test "$(grep -c "watch: no pidfd for a listener" "$DAEMON_LOG")" -eq 1
kill -KILL "$pid_b2"
wait "$pid_b2" 2>/dev/null
wait_until 10 "no pidfd: csi.sock leads to b1" link_is b1
check "no pidfd: b2 went dead by the rounds' failures (x2)" \
	grep -q "active csi-node/p: b2 -> b1 (b2: connection refused x2)" "$DAEMON_LOG"
stop_daemon
check_daemon_log

# The watch limit (one directory): b2's socket is not watched; its return
# on its path is found by the rounds.
restart_with PLUGFS_FAULT_MAX_WATCHES=1
demo c1
demo c2
pid_c2=$DEMO_PID
reg csi-node p c1
reg csi-node p c2
wait_until 10 "watch limit: the fallback is counted" fallbacks_are watch_limit || exit 1
check "watch limit: the log says so once" \
	test "$(grep -c "watch: the inotify watch limit is reached" "$DAEMON_LOG")" -eq 1
check_eq "watch limit: one directory is watched" 1 "$(metric plugfs_probe_watched_directories)"
# c1 (its pidfd and its directory) needs no connect in a round; c2 (no
# directory watched) is connected every round.
wait_until 10 "watch limit: both listeners have a pidfd" watches_are pidfd 2 || exit 1
rounds0=$(metric plugfs_probe_rounds_total) ok0=$(metric 'plugfs_probes_total{result="ok"}')
rounds_past() { [ "$(metric plugfs_probe_rounds_total)" -ge "$1" ]; }
wait_until 10 "watch limit: three more rounds" rounds_past $((rounds0 + 3)) || exit 1
rounds1=$(metric plugfs_probe_rounds_total) ok1=$(metric 'plugfs_probes_total{result="ok"}')
echo "# $((rounds1 - rounds0)) rounds, $((ok1 - ok0)) successful probes"
check "watch limit: the rounds connect c2 alone, not c1" \
	test $((ok1 - ok0)) -le $((rounds1 - rounds0 + 1)) -a $((ok1 - ok0)) -ge 1
kill -KILL "$pid_c2"
wait "$pid_c2" 2>/dev/null
wait_until 10 "watch limit: csi.sock leads to c1" link_is c1
rm -f "$(sock_of c2)"
demo c2
wait_until 10 "watch limit: c2 is active again (the rounds)" link_is c2
expect_active "watch limit: c2 back" csi-node p c2
stop_daemon
check_daemon_log
finish
