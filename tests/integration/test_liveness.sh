#!/usr/bin/env bash
# Liveness ([probe] mode = connect): csi.sock leads to the most recent
# allocation whose socket accepts connections.  Two demo plugins; the newest
# crashes: its exit is seen (a pidfd: dead at once, test_liveness_watch.sh has
# it with rounds 30 s apart), at the latest within interval x failures
# csi.sock reaches the older one; it comes
# back on the same socket: csi.sock switches back.  A newer registration whose
# socket does not exist does not take over, and `register' says so.  All dead:
# csi.sock leads to the most recent and show says none is alive.  A restart
# with a dead registration in the state serves the live one from readiness on.
# How fast the probes see a death and a return is a figure, not a verdict
# here: plugfs-bench-liveness measures it against interval x failures; this
# test waits with a functional margin (10 s, over 16 times the 600 ms).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
write_config "[probe]" "mode = connect" "interval = 0.2" "timeout = 0.5" "failures = 3"
start_daemon
E=$MNT/plugins/csi-node/p

both_dead() { [ "$(health_of a1)$(health_of a2)" = deaddead ]; }

demo a1
pid_a1=$DEMO_PID
demo a2
pid_a2=$DEMO_PID
reg csi-node p a1
reg csi-node p a2
expect_active "both alive" csi-node p a2
a2_alive() { [ "$(health_of a2)" = alive ]; }
wait_until 5 "a2 is probed alive" a2_alive
check "info shows the health column" grep -Eq "^a2 $(sock_of a2) - node [^ ]+ alive\$" "$E/info"
plugfs_bg watch --json >"$T/watch.json" 2>&1 &
watch_pid=$!
_PIDS+=("$watch_pid")
wait_until 10 "watch is connected" watchers_are 1

# The newest crashes (SIGKILL: its socket file stays, connections are refused).
kill -KILL "$pid_a2"
wait "$pid_a2" 2>/dev/null
wait_until 10 "csi.sock leads to a1 after a2 died" link_is a1
expect_active "a2 dead" csi-node p a1
check_eq "show says a2 is dead" dead "$(health_of a2)"
check_eq "show gives the error" "connection refused" \
	"$(plugfs show csi-node p --json | jq -r '.registrations[] | select(.alloc == "a2") | .health.error')"
check "show (human) prints the health" grep -q "health dead .* error connection refused" \
	<(plugfs show csi-node p)
check "the daemon log says why the active allocation moved" \
	grep -q "active csi-node/p: a2 -> a1 (a2: connection refused x1)" "$DAEMON_LOG"
check "info lists a1 (active) first" grep -Eq "^a1 .* alive\$" <(sed -n 1p "$E/info")
check "info says a2 is dead" grep -Eq "^a2 .* dead\$" "$E/info"

# It comes back on the same socket: one probe switches back.
rm -f "$(sock_of a2)"
demo a2
pid_a2=$DEMO_PID
wait_until 10 "csi.sock leads to a2 again" link_is a2
expect_active "a2 back" csi-node p a2

# watch saw health and active events.
watch_saw_return() {
	jq -e -s 'map(select(.event == "health" and .alloc == "a2" and .new == "alive")) | length >= 1' "$T/watch.json" >/dev/null
}
wait_until 10 "watch saw a2 come back" watch_saw_return
check "watch emits a health event alive -> dead for a2" \
	jq -e -s 'map(select(.event == "health" and .alloc == "a2" and .old == "alive" and .new == "dead" and .error == "connection refused")) | length >= 1' "$T/watch.json"
check "watch emits the active events of the failover" \
	jq -e -s 'map(select(.event == "active" and .old_alloc == "a2" and .new_alloc == "a1")) | length == 1' "$T/watch.json"
check "watch emits a health event dead -> alive for a2" \
	jq -e -s 'map(select(.event == "health" and .alloc == "a2" and .new == "alive")) | length >= 1' "$T/watch.json"
kill "$watch_pid" 2>/dev/null

# A newer registration whose socket does not exist: it does not take over,
# and register says so (a health field, a warning line).
plugfs register --type csi-node --name p --alloc a3 --socket "$(sock_of a3)" >"$T/reg.out" 2>"$T/reg.err"
check_eq "register of a dead socket succeeds" 0 $?
check "register warns that a3 is dead" grep -q "warning: a3 is dead (no such file)" "$T/reg.err"
check "register says a2 stays active" grep -q "registered a3, active a2" "$T/reg.out"
check_eq "register's answer has the health" dead \
	"$(printf '%s\n' '{"op":"register","types":["csi-node"],"name":"p","alloc":"a3","socket":"'"$(sock_of a3)"'"}' |
		"$CTLRAW" "$CTL" | jq -r .health.state)"
expect_active "a3 dead on arrival" csi-node p a2

# All dead: csi.sock leads to the most recent (a3), show says none is alive.
kill -TERM "$pid_a1" "$pid_a2"
wait "$pid_a1" "$pid_a2" 2>/dev/null
wait_until 10 "a1 and a2 are dead" both_dead
check "all dead: csi.sock leads to the most recent" link_is a3
check_eq "all dead: show --json has alive 0" 0 "$(plugfs show csi-node p --json | jq .alive)"
check "all dead: show says none is alive" grep -q "none is alive" <(plugfs show csi-node p)
check "all dead: list says none" grep -Eq "^csi-node +p +a3 +3 +none " <(plugfs list)
check_eq "status counts the dead" 3 "$(plugfs status --json | jq .health.dead)"
check "status (human) shows health" grep -q "health: .* 3 dead; 1 plugin(s) with none alive" <(plugfs status)
# One comes back: it is active.
demo a1
pid_a1=$DEMO_PID
wait_until 10 "a1 back: csi.sock leads to it" link_is a1
expect_active "a1 back alone" csi-node p a1

# wait --alloc: a hook registers its allocation before the socket is up and
# waits until csi.sock leads to it (registered, then probed alive).
plugfs register --type csi-node --name p --alloc a4 --socket "$(sock_of a4)" >/dev/null 2>&1
plugfs wait csi-node p --alloc a4 --timeout 20 >"$T/wait.out" 2>&1 &
wait_pid=$!
_PIDS+=("$wait_pid")
sleep 0.5
check "wait --alloc a4 waits while a4 is dead" kill -0 "$wait_pid"
demo a4
pid_a4=$DEMO_PID
wait "$wait_pid"
check_eq "wait --alloc a4 returns 0 once a4 is alive" 0 $?
check "wait --alloc prints a4 as active" grep -q "csi-node/p: active a4 " "$T/wait.out"
check "csi.sock leads to a4 when wait returned" link_is a4
out=$(plugfs wait csi-node p --alloc a1 --timeout 0 2>&1)
check_eq "wait --alloc of an alloc that is not active, timeout 0: exit 1" 1 $?
check "it says which alloc is not active" grep -q "alloc a1 is not the active registration of plugin csi-node/p" <<<"$out"
out=$(plugfs wait csi-node p --alloc 'a/b' --timeout 0 2>&1)
check_eq "wait --alloc with a bad alloc: exit 1" 1 $?
check "the error names the field alloc" grep -q "alloc" <<<"$out"
kill -TERM "$pid_a4"
wait "$pid_a4" 2>/dev/null
plugfs deregister --type csi-node --name p --alloc a4 >/dev/null

# A restart with dead registrations in the state (a2, a3): probed before
# readiness, so the very first readlink after the mount answers is a1's.
stop_daemon
start_daemon
check "after a restart, csi.sock leads to the live a1 at once" link_is a1
check "the start-up round is logged" grep -q "probe: 3 registration(s) probed at start, 2 dead" "$DAEMON_LOG"
check_eq "after a restart, a2 is dead" dead "$(health_of a2)"
expect_active "after a restart" csi-node p a1
stop_daemon
finish
