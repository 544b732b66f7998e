#!/usr/bin/env bash
# `plugfs wait` and `plugfs watch` against a real daemon: wait returns as soon
# as another process registers the plugin and fails (exit 1) after its
# timeout; watch --json sees a scripted sequence of events in commit order,
# active changes included.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
write_config
start_daemon
demo a0 a1

N=csi-node

# --- wait ---
start=$(date +%s%N)
plugfs wait $N late --timeout 1 >"$T/wait1.out" 2>"$T/wait1.err"
rc=$?
elapsed=$((($(date +%s%N) - start) / 1000000))
check_eq "wait on a missing plugin exits 1 after its timeout" 1 "$rc"
check "the timeout took about 1 s (${elapsed} ms)" test "$elapsed" -ge 900
check "the timeout message says there is none and it timed out" grep -q 'plugfs wait: plugin csi-node/late has no active registration: timed out' "$T/wait1.err"

plugfs_bg wait $N late --timeout 30 >"$T/wait2.out" 2>"$T/wait2.err" &
wpid=$!
_PIDS+=("$wpid")
# Until the daemon has the waiter (status counts itself and the waiter).
wait_until 60 "the daemon counts the waiter" clients_at_least 2
check "wait is still waiting before the registration" kill -0 $wpid
start=$(date +%s%N)
reg $N late a0
wait $wpid
rc=$?
elapsed=$((($(date +%s%N) - start) / 1000000))
check_eq "wait exits 0 once another process registers" 0 "$rc"
check "wait returned promptly (${elapsed} ms after register)" test "$elapsed" -lt 5000
check "wait prints the active alloc" grep -q 'csi-node/late: active a0' "$T/wait2.out"

plugfs wait $N late --timeout 0 >/dev/null
check_eq "wait on a registered plugin returns at once" 0 $?
out=$(plugfs wait $N late)
check "wait prints the active alloc at once" grep -q "active a0" <<<"$out"

# Several waiters at once, on different plugins; the daemon keeps serving.
plugfs_bg wait $N w1 --timeout 30 >/dev/null 2>&1 &
p1=$!
_PIDS+=("$p1")
plugfs_bg wait $N w2 --timeout 30 >/dev/null 2>&1 &
p2=$!
_PIDS+=("$p2")
wait_until 60 "the daemon counts both waiters" clients_at_least 3
plugfs status >/dev/null
check_eq "status is answered while waits are pending" 0 $?
reg $N w2 a1
wait $p2
check_eq "the waiter on w2 returns when w2 is registered" 0 $?
check "the waiter on w1 still waits" kill -0 $p1
reg $N w1 a0
wait $p1
check_eq "the waiter on w1 returns when w1 is registered" 0 $?

# --- watch ---
plugfs_bg watch --json >"$T/watch.json" 2>"$T/watch.err" &
watch_pid=$!
_PIDS+=("$watch_pid")
plugfs_bg watch --type csi-controller --json >"$T/watch-ctrl.json" 2>&1 &
watch_ctrl_pid=$!
_PIDS+=("$watch_ctrl_pid")
plugfs_bg watch >"$T/watch.txt" 2>&1 &
watch_txt_pid=$!
_PIDS+=("$watch_txt_pid")
# Until the watchers are connected, status counts them.
wait_until 60 "the daemon counts three watchers" watchers_are 3
check_eq "three watchers are connected" 3 "$(plugfs status --json | jq .watchers)"

reg $N ev a0
reg $N ev a1
reg $N ev a0 --version 2.0
dereg $N ev a1
dereg $N ev a0
plugfs register --type csi-controller --name evc --alloc a0 --socket "$(sock_of a0)" >/dev/null
# One transaction removing evc, late and w1 (a0 was their only alloc): the
# registry emits its events by (type, name).
plugfs deregister --alloc a0 >/dev/null
plugfs register --type $N --name sentinel --alloc a1 --socket "$(sock_of a1)" >/dev/null
# Each watcher has printed its last event before it is stopped.
printed_all() {
	grep -q sentinel "$T/watch.json" && grep -q sentinel "$T/watch.txt" &&
		[ "$(wc -l <"$T/watch-ctrl.json")" -ge 4 ]
}
wait_until 60 "every watcher printed its last event" printed_all
kill $watch_pid $watch_ctrl_pid $watch_txt_pid
wait $watch_pid $watch_ctrl_pid $watch_txt_pid 2>/dev/null

got=$(jq -r '[.event, .type, .name, (.alloc // ((.old_alloc // "-") + ">" + (.new_alloc // "-")))] | join(" ")' "$T/watch.json")
expected="registered csi-node ev a0
active csi-node ev ->a0
registered csi-node ev a1
active csi-node ev a0>a1
updated csi-node ev a0
deregistered csi-node ev a1
active csi-node ev a1>a0
deregistered csi-node ev a0
active csi-node ev a0>-
registered csi-controller evc a0
active csi-controller evc ->a0
deregistered csi-controller evc a0
active csi-controller evc a0>-
deregistered csi-node late a0
active csi-node late a0>-
deregistered csi-node w1 a0
active csi-node w1 a0>-
registered csi-node sentinel a1
active csi-node sentinel ->a1"
if [ "$got" = "$expected" ]; then
	pass "watch --json saw every event in commit order"
else
	fail "watch --json events differ"
	diff <(echo "$expected") <(echo "$got")
fi
check "updated event carries the new version" bash -c "jq -r 'select(.event==\"updated\") | .registration.version' '$T/watch.json' | grep -qx 2.0"
check "active events name the new socket" bash -c "jq -r 'select(.event==\"active\" and .name==\"ev\" and .new_alloc==\"a1\") | .socket' '$T/watch.json' | grep -qx '$(sock_of a1)'"
got=$(jq -r '.type' "$T/watch-ctrl.json" | sort -u)
check_eq "watch --type csi-controller sees only that type" csi-controller "$got"
check_eq "watch --type csi-controller saw its 4 events" 4 "$(wc -l <"$T/watch-ctrl.json")"
check "watch (human) prints an active line" grep -Eq '^[0-9T:-]+Z active +csi-node/ev a0 -> a1 ' "$T/watch.txt"
check_eq "human watch has one line per event" "$(wc -l <"$T/watch.json")" "$(wc -l <"$T/watch.txt")"

# A watcher stops with exit 3 when the daemon goes away.
plugfs_bg watch >/dev/null 2>"$T/watch-gone.err" &
wpid=$!
_PIDS+=("$wpid")
wait_until 60 "the daemon counts the last watcher" watchers_are 1
check_eq "the last watcher is connected" 1 "$(plugfs status --json | jq .watchers)"
stop_daemon
wait $wpid
check_eq "watch exits 3 when the daemon stops" 3 $?
finish
