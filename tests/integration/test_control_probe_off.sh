#!/usr/bin/env bash
# A register's first probe runs off the control server's thread
# (control/firstprobe.c): the server serves every other client meanwhile.
#
# 1. Eight concurrent `register --probe csi' against a socket that accepts
#    and never answers, at [probe] timeout 5: `status' and `list' answer in
#    well under a second meanwhile (before, each waited behind the probes:
#    up to N x timeout), and every register is answered, stored dead.
# 2. A SIGUSR2 handover (under a stand-in for systemd with the shipped
#    unit's WatchdogSec=) with sixteen such registers in flight: the drain
#    ends within its cap (CTL_DRAIN_MAX_MS) instead of waiting for the
#    probes, the registers it closed unanswered are sent again by the CLI
#    and answered by the next program, a consumer through a bind mount is
#    served throughout, no registration acknowledged by either program is
#    lost, and the watchdog pings never stop for WatchdogSec.
# Prints the figures measured.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
. "$(dirname "$0")/csi_lib.sh"
require_fuse

N=8 M=16 TIMEOUT=5
WD=$(unit_setting WatchdogSec)
WD_MS=$((${WD%s} * 1000))
[ "$WD_MS" -gt 0 ] || die "no WatchdogSec= in contrib/plugfs.service"
write_config "[probe]" "mode = connect" "interval = 60" "timeout = $TIMEOUT" "failures = 1"
hung=()
for i in $(seq 1 "$M"); do hung+=("$T/hung/h$i/csi.sock"); done
csi_hang "${hung[@]}"
start_demo_plugin "$T/run/a0/csi.sock" a0
WATCHDOG_USEC=$((WD_MS * 1000)) start_fake_systemd
plugfs register --type csi-node --name good --alloc a0 --socket "$T/run/a0/csi.sock" \
	>/dev/null || die "the first registration"

# ms_of CMD...: runs CMD, prints how long it took in ms; its status in RC.
RC=0
ms_of() {
	local s=$EPOCHREALTIME e
	"$@" >/dev/null 2>&1
	RC=$?
	e=$EPOCHREALTIME
	echo $(((${e/[.,]/} - ${s/[.,]/}) / 1000))
}
# accepted: connections the hung plugin took so far.
accepted() { grep -c '^accepted a connection' "$T/csi-plugin.log" 2>/dev/null; }
accepted_gt() { [ "$(accepted)" -gt "$1" ]; }
# done_all PID...: none of them runs any more.
done_all() {
	local p
	for p in "$@"; do kill -0 "$p" 2>/dev/null && return 1; done
	return 0
}
# health_of NAME ALLOC: the health state of csi-node/NAME's ALLOC.
health_of() {
	plugfs show csi-node "$1" --json 2>/dev/null |
		jq -r --arg a "$2" '.registrations[] | select(.alloc == $a) | .health.state'
}

# --- 1. status and list while registers probe a hung socket ---
idle_status=$(ms_of plugfs status)
idle_list=$(ms_of plugfs list)
n0=$(accepted)
pids=()
for i in $(seq 1 "$N"); do
	plugfs_bg register --type csi-node --name "hung$i" --alloc "h$i" --socket "${hung[i - 1]}" \
		--probe csi >"$T/reg$i.out" 2>&1 &
	pids+=("$!")
	_PIDS+=("$!")
done
t0=$EPOCHREALTIME
wait_until 10 "a register's probe is in flight" accepted_gt "$n0" || exit 1
worst_status=0 worst_list=0 bad=0
for k in 1 2 3 4 5 6; do
	ms=$(ms_of plugfs status)
	[ "$RC" -eq 0 ] || bad=$((bad + 1))
	[ "$ms" -gt "$worst_status" ] && worst_status=$ms
	ms=$(ms_of plugfs list)
	[ "$RC" -eq 0 ] || bad=$((bad + 1))
	[ "$ms" -gt "$worst_list" ] && worst_list=$ms
	sleep 0.3
done
echo "# $N registers --probe csi against a hung socket at timeout $TIMEOUT s: status took at" \
	"most $worst_status ms and list $worst_list ms (6 each; idle: $idle_status ms, $idle_list ms)"
check_eq "status and list succeed while registers probe" 0 "$bad"
# Well under the timeout, with room for a loaded machine (idle, the CLI
# of a sanitizer build takes a few hundred ms to start).
check "status answers in under 2 s while registers probe ($worst_status ms)" \
	test "$worst_status" -lt 2000
check "list answers in under 2 s while registers probe ($worst_list ms)" \
	test "$worst_list" -lt 2000
wait_until 180 "the $N registers are answered" done_all "${pids[@]}" || exit 1
t1=$EPOCHREALTIME
echo "# the $N registers were answered in $(((${t1/[.,]/} - ${t0/[.,]/}) / 1000)) ms"
bad=0
for i in $(seq 1 "$N"); do
	wait "${pids[i - 1]}" || { bad=$((bad + 1)) && sed 's/^/#   /' "$T/reg$i.out"; }
	[ "$(health_of "hung$i" "h$i")" = dead ] || bad=$((bad + 1))
done
check_eq "each register is acknowledged, stored dead (its probe timed out)" 0 "$bad"
# The next program's start probes what is registered: not the hung ones.
for i in $(seq 1 "$N"); do
	plugfs deregister --type csi-node --name "hung$i" --alloc "h$i" >/dev/null ||
		fail "deregister hung$i"
done

# --- 2. a handover with registers in flight ---
bind_consumer "$MNT/plugins/csi-node/good"
start_consumer a0
# Registrations acknowledged around the handover, each logged once ok.
rm -f "$T/acked.stop"
(
	n=0
	while [ ! -e "$T/acked.stop" ]; do
		plugfs register --type csi-node --name acked --alloc "k$n" \
			--socket "$T/run/a0/csi.sock" >/dev/null 2>>"$T/acked.err" && echo "k$n" >>"$T/acked.log"
		n=$((n + 1))
	done
) &
acked_pid=$!
_PIDS+=("$acked_pid")
# The watchdog's pings, sampled every 100 ms: "microseconds count".
(
	while [ ! -e "$T/acked.stop" ]; do
		echo "${EPOCHREALTIME/[.,]/} $(grep -c '^WATCHDOG=1' "$T/sd/notify.log" 2>/dev/null)"
		sleep 0.1
	done
) >"$T/pings.log" &
sampler_pid=$!
_PIDS+=("$sampler_pid")
pings_ge() { [ "$(grep -c '^WATCHDOG=1' "$T/sd/notify.log" 2>/dev/null)" -ge "$1" ]; }
wait_until 30 "the watchdog is pinged" pings_ge 2 || exit 1
n0=$(accepted)
pids=()
for i in $(seq 1 "$M"); do
	plugfs_bg register --type csi-node --name "hx$i" --alloc "x$i" --socket "${hung[i - 1]}" \
		--probe csi >"$T/regx$i.out" 2>&1 &
	pids+=("$!")
	_PIDS+=("$!")
done
wait_until 10 "a register's probe is in flight" accepted_gt "$n0" || exit 1
sleep 1
r0=$(resumed)
t0=$EPOCHREALTIME
kill -USR2 "$pid"
wait_until --pid "$SD_PID" 180 "the handover resumed the mount" resumed_ge $((r0 + 1)) || exit 1
t1=$EPOCHREALTIME
handover_ms=$(((${t1/[.,]/} - ${t0/[.,]/}) / 1000))
# The old program's part, by its log's times: from taking SIGUSR2 to the
# end of its control server's drain (which begins only once the server
# thread looks).
ms_of_day() { sed -n 's/^[0-9-]*T\([0-9]*\):\([0-9]*\):\([0-9]*\)\.\([0-9]*\).*/\1 \2 \3 \4/p' |
	awk '{ print (($1 * 60 + $2) * 60 + $3) * 1000 + $4 }'; }
sig=$(grep 'SIGUSR2: handing the mount over' "$DAEMON_LOG" | tail -n 1 | ms_of_day)
drain=$(grep 'control: handover: answered' "$DAEMON_LOG" | tail -n 1)
stop_ms=$((($(ms_of_day <<<"$drain") - sig + 86400000) % 86400000))
echo "# handover with $M registers in flight: SIGUSR2 to the end of the drain $stop_ms ms," \
	"to the mount resumed $handover_ms ms; the drain: ${drain#*handover: }"
check "the drain ends within its cap of 3000 ms of SIGUSR2 ($stop_ms ms)" \
	test "$stop_ms" -lt 3000
consumer_moves_on "after the handover"
wait_until 180 "the $M registers are answered" done_all "${pids[@]}" || exit 1
t2=$EPOCHREALTIME
echo "# the $M registers were answered $(((${t2/[.,]/} - ${t1/[.,]/}) / 1000)) ms after the" \
	"mount resumed"
bad=0
for i in $(seq 1 "$M"); do
	wait "${pids[i - 1]}" || { bad=$((bad + 1)) && sed 's/^/#   /' "$T/regx$i.out"; }
	[ "$(health_of "hx$i" "x$i")" = dead ] || bad=$((bad + 1))
done
check_eq "each register in flight at the handover is acknowledged and stored dead" 0 "$bad"
touch "$T/acked.stop"
wait "$acked_pid" "$sampler_pid"
stop_consumer
echo "# consumer connects through the bind mount: $tried, failed: $failed, longest stall:" \
	"$longest ms"
check_eq "no connect through the bind mount failed" 0 "$failed"
plugfs show csi-node acked --json | jq -r '.registrations[].alloc' | sort >"$T/acked.have"
sort "$T/acked.log" >"$T/acked.sorted"
lost=$(comm -23 "$T/acked.sorted" "$T/acked.have" | wc -l)
echo "# registrations acknowledged around the handover: $(wc -l <"$T/acked.sorted"), lost: $lost"
check "registrations were acknowledged around the handover" test -s "$T/acked.sorted"
check_eq "no acknowledged registration is lost" 0 "$lost"
gap=$(awk 'NR == 1 { t = $1; c = $2; next }
	$2 != c { if ($1 - t > g) g = $1 - t; t = $1; c = $2 }
	END { if ($1 - t > g) g = $1 - t; print int(g / 1000) }' "$T/pings.log")
echo "# the longest time without a watchdog ping: $gap ms (WatchdogSec=$WD; a ping every" \
	"$((WD_MS / 3)) ms)"
check "the watchdog is pinged within WatchdogSec across the handover" test "$gap" -lt "$WD_MS"

kill -TERM "$pid"
wait "$SD_PID"
check_eq "the daemon exits 0 on SIGTERM" 0 $?
finish
