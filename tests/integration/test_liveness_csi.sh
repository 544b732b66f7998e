#!/usr/bin/env bash
# Liveness with [probe] mode = csi, against real gRPC servers (csi_plugin.py):
# two allocations; the newest answers Probe with ready: false -> within
# interval x failures csi.sock leads to the older one, and show gives the
# error; ready again -> csi.sock switches back.  A gRPC error is dead too.
# A newer registration that is not ready on arrival does not take over.
# Then: no FUSE request waits on a probe.  100 registrations whose sockets
# accept and never answer, probed with a 5 s timeout, while every lookup,
# readlink and statfs through the mount is answered within 1 s, and a
# `register' of a live plugin is answered meanwhile.  And per type
# ([probe.TYPE]): the same plugin probed by csi under one type and by
# connect under another.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
. "$(dirname "$0")/csi_lib.sh"
require_fuse
write_config "[probe]" "mode = csi" "interval = 0.2" "timeout = 0.5" "failures = 3"
start_daemon
E=$MNT/plugins/csi-node/p

active_is() { [ "$(plugfs show csi-node p --json | jq -r .active)" = "$1" ]; }
alive() { [ "$(health_of "$1")" = alive ]; }
dead() { [ "$(health_of "$1")" = dead ]; }

csi_plugin "$(sock_of a1)" --control "$T/a1.ctl" --name csi.example.com
csi_plugin "$(sock_of a2)" --control "$T/a2.ctl" --name csi.example.com
reg csi-node p a1
reg csi-node p a2
wait_until 5 "a2 is probed alive" alive a2
wait_until 5 "a1 is probed alive" alive a1
check "both ready: csi.sock leads to a2" link_is a2
check "both ready: show says a2 is active" active_is a2

# The newest turns ready: false.
printf 'false\n' >"$T/a2.ctl"
t0=$(ms)
wait_until 15 "csi.sock leads to a1 after a2 turned not ready" link_is a1
took=$(($(ms) - t0))
echo "# detection: ${took} ms (interval x failures = 600 ms)"
# The bound: 7 s, 10x the 624 ms measured here (3 failed probes 200 ms
# apart); the log line below says it took exactly 3.
check "detected within 10x interval x failures (${took} ms)" test "$took" -le 7000
check "a2 not ready: show says a1 is active" active_is a1
check_eq "show --json says a2 is dead" dead "$(health_of a2)"
check_eq "show --json gives the error" "not ready" "$(error_of a2)"
check "show (human) prints the error" grep -q "health dead .* error not ready" <(plugfs show csi-node p)
check "the daemon log says why the active allocation moved" \
	grep -q "active csi-node/p: a2 -> a1 (a2: not ready x3)" "$DAEMON_LOG"

# Ready again: one probe switches back.
printf 'true\n' >"$T/a2.ctl"
t0=$(ms)
wait_until 10 "csi.sock leads to a2 again" link_is a2
took=$(($(ms) - t0))
echo "# recovery: ${took} ms (interval = 200 ms)"
# The bound: 3 s, 10x the 137 to 300 ms measured here (one probe).
check "recovered within 10x an interval and a probe (${took} ms)" test "$took" -le 3000
check "a2 ready again: show says a2 is active" active_is a2

# A gRPC error is dead too, with its status.
printf 'error 14 backend gone\n' >"$T/a2.ctl"
wait_until 10 "a2 with a gRPC error: csi.sock leads to a1" link_is a1
check_eq "show gives the gRPC error" "grpc status 14: backend gone" "$(error_of a2)"
printf 'true\n' >"$T/a2.ctl"
wait_until 10 "a2 answers again: csi.sock leads to a2" link_is a2

# A newer registration that is not ready on arrival does not take over.
csi_plugin "$(sock_of a3)" --ready false
plugfs register --type csi-node --name p --alloc a3 --socket "$(sock_of a3)" >"$T/reg.out" 2>"$T/reg.err"
check_eq "register of a plugin that is not ready succeeds" 0 $?
check "register warns that a3 is not ready" grep -q "warning: a3 is dead (not ready)" "$T/reg.err"
check "register says a2 stays active" grep -q "registered a3, active a2" "$T/reg.out"
check "a3 not ready: csi.sock still leads to a2" link_is a2
dereg csi-node p a3

# No FUSE request waits on a probe.  The sockets do not exist when they are
# registered (dead at once, so the registers are quick), then one process
# listens on all of them, accepts and never answers.
stop_daemon
write_config "[probe]" "mode = csi" "interval = 0.2" "timeout = 5" "failures = 1"
sed -i 's/^cache_timeout = 60$/cache_timeout = 0/' "$CFG"
start_daemon
# The 100 registers go on one connection, pipelined (a CLI process each
# took 25 s of this test under the sanitizers).
hung=()
for i in $(seq -w 1 100); do
	hung+=("$T/h/$i.sock")
	printf '{"op":"register","types":["csi-controller"],"name":"hung","alloc":"h%s","socket":"%s"}\n' \
		"$i" "$T/h/$i.sock"
done >"$T/hung.req"
"$CTLRAW" "$CTL" 60 <"$T/hung.req" >"$T/hung.out" || fail "the 100 registers: the client exited $?"
check_eq "the 100 registers are acknowledged" 100 "$(grep -c '^{"ok":true' "$T/hung.out")"
csi_hang "${hung[@]}"
# Wait until a round is under way (the hung plugin has accepted probes).
probes_hang() { [ "$(find "/proc/$CSI_PID/fd" -type l -lname 'socket:*' | wc -l)" -ge 150 ]; }
wait_until 15 "the prober's connections hang in the plugin" probes_hang
slow=0 n=0
end=$(($(ms) + 8000))
while [ "$(ms)" -lt "$end" ]; do
	n=$((n + 1))
	timeout 1 readlink "$E/csi.sock" >/dev/null || slow=$((slow + 1))
	timeout 1 stat -f "$MNT" >/dev/null || slow=$((slow + 1))
	timeout 1 stat "$MNT/plugins/csi-node/nothing-$n" >/dev/null 2>&1
	[ $? -eq 124 ] && slow=$((slow + 1))
	timeout 1 cat "$E/info" >/dev/null || slow=$((slow + 1))
done
echo "# $n rounds of readlink, statfs, lookup and read while 100 probes hang"
check "every FUSE request answered within 1 s while 100 probes hang ($slow late)" test "$slow" -eq 0
check "the loop ran (${n} rounds)" test "$n" -ge 20
t0=$(ms)
plugfs register --type csi-node --name p --alloc a4 --socket "$(sock_of a1)" >/dev/null
check_eq "register answers while probes hang" 0 $?
took=$(($(ms) - t0))
echo "# register while 100 probes hang: ${took} ms"
# The bound: 4 s, under the probes' 5 s timeout a register waiting on them
# would take, and 10x the register's own time here (under 400 ms).
check "register answers within 4 s while probes hang (${took} ms)" test "$took" -le 4000
# A round applies its results when its last probe ended: 100 hung sockets
# are two windows of PROBE_MAX_INFLIGHT, two timeouts.
timeouts() { [ "$(plugfs show csi-controller hung --json | jq '[.registrations[] | select(.health.error == "timeout")] | length')" = 100 ]; }
wait_until 15 "the 100 hung ones are dead with a timeout" timeouts
stop_daemon

# Per type: [probe] connect for every type, [probe.csi-controller] csi.  One
# plugin that accepts but answers ready: false, registered under both types:
# dead (not ready) as a controller, alive as a node.
write_config "[probe]" "mode = connect" "interval = 0.2" "timeout = 0.5" \
	"[probe.csi-controller]" "mode = csi" "failures = 1"
start_daemon
csi_plugin "$T/alloc/b1/csi.sock" --ready false
plugfs register --type csi-controller --type csi-node --name q --alloc b1 \
	--socket "$T/alloc/b1/csi.sock" >/dev/null 2>&1
health_in() { plugfs show "$1" q --json | jq -r '.registrations[0].health | "\(.state) \(.error)"'; }
check_eq "[probe.csi-controller] mode = csi: not ready is dead" "dead not ready" "$(health_in csi-controller)"
node_alive() { [ "$(health_in csi-node)" = "alive null" ]; }
wait_until 5 "[probe] mode = connect for csi-node: the same socket is alive" node_alive
stop_daemon
finish
