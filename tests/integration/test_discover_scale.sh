#!/usr/bin/env bash
# The discovery's figures (printed; the bounds are wide, not a benchmark):
# 50 sockets created one at a time, each one's time from its creation to
# its registration (the daemon's log line: median and p99); 1,000
# allocation directories across 20 plugins (PLUGFS_DISCOVER_PLUGINS=1: of
# one plugin) whose sockets appear at once, the time until all are served
# (the target: 5 s in an optimised build, either way), and until all are
# deregistered once their directories go.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
. "$(dirname "$0")/csi_lib.sh"
require_fuse
. "$(dirname "$0")/discover_lib.sh"
write_config "[discover.t]" "root = $ROOT" "[probe]" "mode = connect" "timeout = 5"
start_daemon
N=${PLUGFS_DISCOVER_SCALE:-1000}
registrations() { plugfs status --json | jq .registrations; }
regs_are() { [ "$(registrations)" = "$1" ]; }
# figures FROM: median, p99 and max of the daemon's "N ms after the socket
# was created" from line FROM of its log on.
figures() {
	tail -n +"$1" "$DAEMON_LOG" | grep -o '([0-9]* ms after the socket was created)' | tr -dc '0-9\n' | sort -n |
		awk '{ v[NR] = $1 } END { if (!NR) exit 1; printf "n=%d median %d ms, p99 %d ms, max %d ms", NR, v[int((NR + 1) / 2)], v[int(NR * 0.99 + 0.999)], v[NR] }'
}

# 50 sockets, one at a time (300 ms apart).
socks=()
for i in $(seq -w 1 50); do
	mkdir -m 0755 "$ROOT/s$i"
	socks+=(--socket "$ROOT/s$i/csi.sock")
done
from=$(($(wc -l <"$DAEMON_LOG") + 1))
"$CSI_PYTHON" "$CSI_PLUGIN" "${socks[@]}" --flavour node --name seq.example.com --stagger 0.3 \
	>>"$T/csi-plugin.log" 2>&1 &
_PIDS+=("$!")
wait_until 120 "the 50 sockets are registered" regs_are 50 || exit 1
f=$(figures "$from")
echo "# 50 sockets one at a time, creation to registration: $f"
check "50 sockets one at a time: all registered ($f)" test -n "$f"

# N directories across P plugins (20 by default; PLUGFS_DISCOVER_PLUGINS=1:
# N allocations of ONE plugin), their sockets created at once: a gRPC
# server per plugin binding its N/P sockets.
P=${PLUGFS_DISCOVER_PLUGINS:-20}
watches_ge() { [ "$(metric plugfs_discover_watches)" -ge "$1" ]; }
w0=$(metric plugfs_discover_watches)
for i in $(seq -w 1 "$N"); do mkdir -m 0755 "$ROOT/a$i"; done
wait_until 60 "the $N new directories are watched" watches_ge $((w0 + N)) || exit 1
from=$(($(wc -l <"$DAEMON_LOG") + 1))
t0=$(now_ms)
big=()
for k in $(seq 1 "$P"); do
	socks=()
	for i in $(seq -w 1 "$N"); do
		[ $((10#$i % P)) -eq $((k - 1)) ] && socks+=(--socket "$ROOT/a$i/csi.sock")
	done
	"$CSI_PYTHON" "$CSI_PLUGIN" "${socks[@]}" --flavour node --name "p$k.example.com" \
		--workers 16 >"$T/big$k.log" 2>&1 &
	_PIDS+=("$!")
	big+=("$!")
done
all_listen() { [ "$(cat "$T"/big*.log | grep -c listening)" -eq "$P" ]; }
wait_until 60 "the $P plugins listen on $N sockets" all_listen || exit 1
t1=$(now_ms)
wait_until 120 "$N allocations of $P plugin(s) are registered" regs_are $((N + 50)) || exit 1
t2=$(now_ms)
f=$(figures "$from")
echo "# $N sockets of $P plugin(s) at once: bound in $((t1 - t0)) ms; all served $((t2 - t1)) ms after the last was bound; creation to registration: $f"
check "$N allocations of $P plugin(s) served ($((t2 - t1)) ms after the last socket; the target 5 s is for an optimised build, the bound here 60 s)" test $((t2 - t1)) -le 60000
plugfs metrics | grep '^plugfs_discover' | sed 's/^/# /'
# All gone at once: deregistered.
t0=$(now_ms)
kill "${big[@]}"
rm -rf "$ROOT"/a*
wait_until 60 "$N allocations deregistered" regs_are 50
echo "# $N directories removed: all deregistered in $(($(now_ms) - t0)) ms"
stop_daemon
finish
