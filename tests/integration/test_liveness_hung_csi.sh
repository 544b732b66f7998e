#!/usr/bin/env bash
# Hung csi plugins delay no other plugin's failover.  Beside the victim
# (csi-node/victim, an old and a new allocation, probed by `connect'), N
# registrations of the same type with their own probe `csi' point at a
# socket that accepts and never answers: each of their probes takes the
# whole timeout.  The new victim allocation is killed; csi.sock must lead to
# the old one after about interval x failures (plugfs.ini(5)), as with no
# hung plugin: each registration's verdict is applied when its own probe
# ends, and the connect probes do not wait for the csi ones.  Before, a
# round applied its verdicts once its slowest batch had ended (1,024 hung:
# four windows of 256, about 4.2 s a round), and the next round came an
# interval after that: 19.3 s to fail over.
# The rounds alone are measured (the watches off, PLUGFS_FAULT_NO_WATCH: a
# listener's exit seen by its pidfd fails over without a round), then the
# same with the watches on.  The bound is wide (2 x interval x failures +
# 2 s); the figures are printed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
command -v sqlite3 >/dev/null || die "sqlite3 is missing (contrib/install-deps.sh installs it)"
N=${HUNG_N:-1024}
INTERVAL=1 TIMEOUT=1 FAILURES=3
LIMIT_MS=$((2 * INTERVAL * FAILURES * 1000 + 2000))
E=$MNT/plugins/csi-node/victim
HUNG=$T/hung/csi.sock

# The N hung registrations, imported offline, then given `probe = csi'
# (the legacy JSON has no probe field): registered one by one, each
# register would wait for its own first csi probe, one timeout.
{
	printf '{"Plugins": {"csi-node": {'
	sep=
	for ((i = 0; i < N; i++)); do
		printf '%s"hung-%05d": {"Type": "node", "AllocID": "h%05d", "ConnectionInfo": {"SocketPath": "%s"}}' \
			"$sep" "$i" "$i" "$HUNG"
		sep=', '
	done
	printf '}}}\n'
} >"$T/legacy.json"
write_config "[probe]" "mode = connect" "interval = $INTERVAL" "timeout = $TIMEOUT" \
	"failures = $FAILURES"
if [ "$N" -gt 0 ]; then
	plugfs state import "$T/legacy.json" >/dev/null || die "cannot import the hung registrations"
	sqlite3 "$STATE" "UPDATE registrations SET probe = 'csi'" ||
		die "cannot set the hung registrations' probe"
fi
mkdir -p "$(dirname "$HUNG")"
python3 "$PLUGFS_SOURCE_DIR/tests/integration/hang_many.py" "$HUNG" >>"$T/hang.log" 2>&1 &
_PIDS+=("$!")
wait_until 30 "the hung plugin listens" test -S "$HUNG" || exit 1

# failover LABEL: starts the daemon, registers the victim's old and new
# allocations, kills the new one and measures until csi.sock leads to the
# old one.  Prints the figure, checks the bound.
failover() {
	local label=$1 t0 t1 ms pid_old pid_new
	start_daemon
	demo old
	pid_old=$DEMO_PID
	demo new
	pid_new=$DEMO_PID
	plugfs register --type csi-node --name victim --alloc old --socket "$(sock_of old)" >/dev/null ||
		fail "$label: register old"
	plugfs register --type csi-node --name victim --alloc new --socket "$(sock_of new)" >/dev/null ||
		fail "$label: register new"
	wait_until 30 "$label: csi.sock leads to new" bash -c "[ \"\$(readlink '$E/csi.sock')\" = '$(sock_of new)' ]" ||
		exit 1
	# A round or two with everything probed: the hung ones are dead,
	# the victim's new allocation alive, its listener watched.
	wait_until 60 "$label: the hung registrations are dead" bash -c \
		"[ \$('$PLUGFS_BIN' -c '$CFG' list --json | jq '[.plugins[].registrations[] | select(.health.state == \"dead\")] | length') -ge $N ]" ||
		exit 1
	sleep $((2 * INTERVAL))
	t0=${EPOCHREALTIME/[.,]/}
	kill -KILL "$pid_new"
	wait "$pid_new" 2>/dev/null
	while [ "$(readlink "$E/csi.sock")" != "$(sock_of old)" ]; do
		[ $((${EPOCHREALTIME/[.,]/} - t0)) -lt 60000000 ] || break
		sleep 0.02
	done
	t1=${EPOCHREALTIME/[.,]/}
	ms=$(((t1 - t0) / 1000))
	echo "# $label: $N hung csi registrations: csi.sock led to the old allocation after $ms ms" \
		"(interval x failures = $((INTERVAL * FAILURES * 1000)) ms; bound $LIMIT_MS ms)"
	check "$label: fail-over within $LIMIT_MS ms beside $N hung csi plugins (took $ms ms)" \
		[ "$ms" -lt "$LIMIT_MS" ]
	expect_active "$label: after the fail-over" csi-node victim old
	stop_daemon
	kill -TERM "$pid_old"
	wait "$pid_old" 2>/dev/null
}

export PLUGFS_FAULT_NO_WATCH=1
failover rounds
# The same with the watches on (the listener's pidfd).
unset PLUGFS_FAULT_NO_WATCH
failover watches
check_daemon_log
finish
