#!/usr/bin/env bash
# A re-exec is not held up by plugins that hang.  1,000 registrations
# probed by csi point at a socket that accepts and never answers (each of
# their probes takes the whole timeout); a client reads another plugin's
# `info' through the mount and asks `status' every 20 ms (latency.py).
# SIGUSR2, twice: the new program serves the mount and the control socket
# first and probes every registration after (each verdict applied as its
# probe ends), so the longest wait stays far under the start round's
# length (1,000 hung csi plugins: four windows of 256, about 4 s).  Before, the start round ran before the
# mount was resumed: a stall of 4 s and more.  The check is the order: after
# each re-exec has resumed the mount, a read of `info' through the mount and
# a `status' are answered while that program's start round still runs.  The
# latency client stops once the re-execs are done; its figures are printed
# (plugfs-bench measures latencies, not this test).  About 20 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
command -v sqlite3 >/dev/null || die "sqlite3 is missing (contrib/install-deps.sh installs it)"
N=${HUNG_N:-1000} REEXECS=2 LAT_S=120
HUNG=$T/hung/csi.sock

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
write_config "[probe]" "mode = connect" "interval = 5" "timeout = 1" "failures = 3"
if [ "$N" -gt 0 ]; then
	plugfs state import "$T/legacy.json" >/dev/null || die "cannot import the hung registrations"
	sqlite3 "$STATE" "UPDATE registrations SET probe = 'csi'" ||
		die "cannot set the hung registrations' probe"
fi
mkdir -p "$(dirname "$HUNG")"
python3 "$PLUGFS_SOURCE_DIR/tests/integration/hang_many.py" "$HUNG" >>"$T/hang.log" 2>&1 &
_PIDS+=("$!")
wait_until 30 "the hung plugin listens" test -S "$HUNG" || exit 1

start_demo_plugin "$T/run/a0/csi.sock" a0
start_daemon
pid=$DAEMON_PID
plugfs register --type csi-node --name rx --alloc a0 --socket "$T/run/a0/csi.sock" >/dev/null ||
	die "register a0"
rounds_at_start() { grep -c "probed at start" "$DAEMON_LOG"; }
rounds_at_start_ge() { [ "$(rounds_at_start)" -ge "$1" ]; }
ndead() { plugfs list --json | jq '[.plugins[].registrations[] | select(.health.state == "dead")] | length'; }
wait_until 60 "the start round ended" rounds_at_start_ge 1 || exit 1
check_eq "the $N hung registrations are dead" "$N" "$(ndead)"
# Every 20 ms, a `status' on a fresh connection and a read of rx's `info'
# through the mount (never cached across opens: the daemon serves each).
python3 "$PLUGFS_SOURCE_DIR/tests/integration/latency.py" "$CTL" "$MNT/plugins/csi-node/rx/info" \
	"$LAT_S" "$T/latency.stop" >"$T/latency.out" 2>&1 &
lat=$!
_PIDS+=("$lat")
INFO=$MNT/plugins/csi-node/rx/info
for i in $(seq 1 "$REEXECS"); do
	kill -USR2 "$pid"
	wait_until --pid "$pid" 30 "re-exec $i resumed the mount" resumed_ge "$i" || exit 1
	# The order: served, then probed.  The start round of 1,000 hung csi
	# probes takes about 4 s; a read and a status take milliseconds.
	check "re-exec $i: info is read through the mount" grep -q "^a0 " "$INFO"
	check "re-exec $i: status answers" plugfs status >/dev/null
	check "re-exec $i: ... both while its start round still runs" \
		test "$(rounds_at_start)" -eq "$i"
	wait_until 60 "re-exec $i's start round ended" rounds_at_start_ge $((i + 1)) || exit 1
done
touch "$T/latency.stop"
wait_until 60 "the latency probe ends" _gone "$lat" || exit 1
wait "$lat"
max_of() { awk -v k="$1" '$1 == k { for (i = 2; i <= NF; i++) if ($i ~ /^(max_ms|failed)=/) { split($i, a, "="); printf "%s ", a[2] } }' "$T/latency.out"; }
read -r read_max read_failed <<<"$(max_of info_read)"
read -r status_max status_failed <<<"$(max_of status)"
echo "# $REEXECS re-execs with $N hung csi registrations: longest read of info through the mount" \
	"${read_max} ms, longest status ${status_max} ms"
sed 's/^/#   /' "$T/latency.out"
grep "probed at start" "$DAEMON_LOG" | sed 's/^/#   /'
check_eq "no read through the mount failed" 0 "$read_failed"
check_eq "no status failed" 0 "$status_failed"
check_eq "after the re-execs, the $N hung registrations are dead again" "$N" "$(ndead)"
check "the daemon kept its PID" kill -0 "$pid"
stop_daemon
check_daemon_log
finish
