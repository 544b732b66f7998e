#!/usr/bin/env bash
# Load: what other clients and the mount see while the control plane is
# busy.  2,000 plugins; for LOAD_SECONDS (5, 8 in the soak mode: 250
# samples a side are enough for a p99) one client times a
# `status' on a fresh connection and a read of a plugin's `info' through the
# mount every 20 ms (latency.py), first on a quiet daemon, then while
#  - 8 clients register and deregister without pause (plugfs-test-storm),
#  - 24 idle connections hold slots (hold_conns.py),
#  - 4 clients trickle bytes without a newline (trickle.py),
#  - 2 clients loop `plugfs list --json' over the 2,000 plugins,
#  - 1 client reads a list one byte per millisecond (stream_client.py).
# Prints p50/p99/max of both, quiet and loaded, and their ratio; fails when
# a request of the timing client is refused or fails, or when a loaded p99
# passes 1 s (a bound that a control plane serving one client at a time
# for whole seconds would not meet).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
command -v python3 >/dev/null || die "python3 is not installed"
SRC=$PLUGFS_SOURCE_DIR/tests/integration
secs=${LOAD_SECONDS:-$(soak 5 8)}
n=2000

write_config "[probe]" "mode = none"
sed -i "s|^socket = $CTL\$|socket = $CTL\nmax_clients = 64\nidle_timeout = 3|" "$CFG"
python3 - "$n" "$T" >"$T/plugins.json" <<'EOF'
import json, sys
n, t = int(sys.argv[1]), sys.argv[2]
p = {"p%05d" % i: {"AllocID": "a%05d" % i,
                   "ConnectionInfo": {"SocketPath": "%s/alloc/a%05d/csi.sock" % (t, i)}}
     for i in range(n)}
json.dump({"Plugins": {"csi-node": p}}, sys.stdout)
EOF
plugfs state import "$T/plugins.json" >/dev/null || die "cannot import $n plugins"
start_daemon
INFO=$MNT/plugins/csi-node/p00042/info
check "the timed plugin's info reads" test -s "$INFO"

python3 "$SRC/latency.py" "$CTL" "$INFO" "$secs" >"$T/quiet.out"
sed 's/^/quiet:  /' "$T/quiet.out"

# --- the load
"$STORM" "$CTL" "$T/storm" 8 100000 "${STORM_SEED:-$$}" >"$T/storm.out" 2>&1 &
_PIDS+=("$!")
storm_pid=$!
python3 "$SRC/hold_conns.py" "$CTL" 24 "$T/idle.status" &
_PIDS+=("$!")
for i in 1 2 3 4; do
	python3 "$SRC/trickle.py" "$CTL" $((secs + 5)) >"$T/trickle$i.out" 2>&1 &
	_PIDS+=("$!")
done
for i in 1 2; do
	(while :; do plugfs list --json >/dev/null 2>>"$T/list$i.err" || echo failed >>"$T/list$i.err"; done) &
	_PIDS+=("$!")
done
python3 "$SRC/stream_client.py" slow "$CTL" $((secs + 3)) >"$T/slow.out" 2>&1 &
_PIDS+=("$!")
slow_pid=$!
sleep 1
check "the storm is running" kill -0 "$storm_pid"
python3 "$SRC/latency.py" "$CTL" "$INFO" "$secs" >"$T/loaded.out"
sed 's/^/loaded: /' "$T/loaded.out"
check "the storm was still running at the end" kill -0 "$storm_pid"

field() { grep "^$1 " "$3" | grep -o " $2=[0-9.]*" | cut -d= -f2; }
for what in status info_read; do
	q=$(field "$what" p99_ms "$T/quiet.out")
	l=$(field "$what" p99_ms "$T/loaded.out")
	awk -v w="$what" -v q="$q" -v l="$l" \
		'BEGIN { printf "# %s p99: quiet %.1f ms, loaded %.1f ms (%.1fx)\n", w, q, l, (q > 0 ? l / q : 0) }'
	check_eq "no $what of the timing client failed on a quiet daemon" 0 "$(field "$what" failed "$T/quiet.out")"
	check_eq "no $what of the timing client failed under load" 0 "$(field "$what" failed "$T/loaded.out")"
	check "$what was timed under load ($(field "$what" n "$T/loaded.out") samples)" \
		test "$(field "$what" n "$T/loaded.out")" -ge 20
	check "$what p99 under load is at most 1 s ($l ms)" awk -v l="$l" 'BEGIN { exit !(l <= 1000) }'
done
check "the list loops got answers" test ! -s "$T/list1.err" -a ! -s "$T/list2.err"
wait "$slow_pid"
check_eq "the slow reader was served to the end of its time" 0 $?
sed 's/^/# slow reader: /' "$T/slow.out"
plugfs status >/dev/null
check_eq "the daemon still answers status" 0 $?
finish
