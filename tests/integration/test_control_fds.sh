#!/usr/bin/env bash
# Out of file descriptors (docs/protocol.md, "Limits"): a daemon with a low
# RLIMIT_NOFILE and max_clients far above it, and more connections than it
# has fds.  Every client it cannot take gets a `too many clients' answer
# (through the fd it keeps in reserve), the control thread does not spin
# (its CPU time over a few seconds stays small), the warnings are
# rate-limited, and once the connections close the daemon serves again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
command -v python3 >/dev/null || die "python3 is not installed"
HOLD=$PLUGFS_SOURCE_DIR/tests/integration/hold_conns.py
NOFILE=64
CONNS=150

# The daemon under `ulimit -n $NOFILE' (soft and hard: nothing to raise to).
write_config "[control]" "max_clients = 1024" "idle_timeout = 0"
(ulimit -n "$NOFILE" && exec "$PLUGFS_BIN" -c "$CFG" mount) >>"$DAEMON_LOG" 2>&1 &
DAEMON_PID=$!
_PIDS+=("$DAEMON_PID")
wait_until --pid "$DAEMON_PID" 60 "the daemon serves $MNT" mount_answers "$MNT" || exit 1
check_eq "the daemon's fd limit is $NOFILE" "$NOFILE" \
	"$(awk '/^Max open files/ {print $4}' "/proc/$DAEMON_PID/limits")"
demo a0
reg csi-node ebs a0

# cpu_ticks: utime + stime of the daemon, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$DAEMON_PID/stat"; }
status_of() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" "$T/hold.status" 2>/dev/null; }
all_answered_or_open() {
	[ -f "$T/hold.status" ] || return 1
	# Every connection is either held (accepted) or was refused and closed.
	[ "$(status_of connected)" = "$CONNS" ] &&
		[ $(($(status_of open) + $(status_of refused))) -ge "$CONNS" ] &&
		[ "$(status_of refused)" -gt 0 ] && [ "$(status_of closed)" = "$(status_of refused)" ]
}
python3 "$HOLD" "$CTL" "$CONNS" "$T/hold.status" &
HOLD_PID=$!
_PIDS+=("$HOLD_PID")
wait_until 60 "each of $CONNS connections is held or refused" all_answered_or_open
cat "$T/hold.status"
check "some connections were refused" test "$(status_of refused)" -gt 0
check "some connections were taken" test "$(status_of open)" -gt 0
check_eq "every refused connection got one too-many-clients line" "$(status_of refused)" \
	"$(grep -c '"code":"unavailable".*too many clients: the daemon is out of file descriptors' "$T/hold.status.lines")"

# Held at the limit: the daemon rests.  A spinning control thread burns
# about 100 ticks a second (half of it with the other tests beside it); the
# daemon at rest, 0 or 1 tick in a second here: the bound, HZ / 10 ticks in
# 1 s, is 10x that and 5x below a spin.
HZ=$(getconf CLK_TCK)
t0=$(cpu_ticks)
sleep 1
t1=$(cpu_ticks)
echo "# daemon CPU over 1 s at the fd limit: $((t1 - t0)) ticks (CLK_TCK $HZ)"
check "the daemon does not spin at the fd limit ($((t1 - t0)) ticks in 1 s)" test $((t1 - t0)) -lt $((HZ / 10))

# A new client is told why.
plugfs status >"$T/st.out" 2>"$T/st.err"
check_eq "plugfs status at the fd limit exits 1" 1 $?
check "it says too many clients" grep -q 'plugfs status: too many clients' "$T/st.err"
# A burst of clients: every one answered, the warnings rate-limited.
for i in $(seq 1 40); do "$CTLRAW" "$CTL" 10 </dev/null >>"$T/burst.out" 2>&1 || echo "client $i: $?" >>"$T/burst.err"; done
check "every client of the burst got its answer" test ! -s "$T/burst.err"
check_eq "each got a too-many-clients line" 40 "$(grep -c 'too many clients' "$T/burst.out")"
n_warn=$(grep -c 'too many clients\|accept:' "$DAEMON_LOG")
check "the warnings are rate-limited ($n_warn lines)" test "$n_warn" -le 5
check "the mount is served meanwhile" test "$(readlink "$MNT/plugins/csi-node/ebs/csi.sock")" = "$(sock_of a0)"

# The connections close: the daemon serves again.
kill -TERM "$HOLD_PID"
wait "$HOLD_PID" 2>/dev/null
status_works() { plugfs status >/dev/null 2>&1; }
wait_until 30 "plugfs status works again" status_works
check "plugfs status works once the fds are free" status_works
reg csi-node ebs2 a0
check_eq "a registration works again" "$(sock_of a0)" "$(readlink "$MNT/plugins/csi-node/ebs2/csi.sock")"
stop_daemon
finish
