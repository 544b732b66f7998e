#!/usr/bin/env bash
# Idle clients do not lock others out (docs/protocol.md, "Limits"):
#  - a request must be complete within control.idle_timeout of its first
#    byte: bytes without a newline do not restart the idle timer;
#  - at control.max_clients, a new client closes the client idle longest
#    (1 s or more without a request, not watching, not waiting) instead of
#    being refused;
#  - max_clients / 8 slots are root's: clients of other uids that fill the
#    rest (busy ones, that cannot be closed) refuse only clients of other
#    uids, and root's `plugfs status` is still served.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
command -v python3 >/dev/null || die "python3 is not installed"
getent group daemon >/dev/null || die "group daemon is missing"
# Copies where nobody can read and run them, wherever the checkout and the
# build are (a private clone directory is not nobody's to enter).
install -m 0755 "$PLUGFS_SOURCE_DIR/tests/integration/hold_conns.py" "$T/hold_conns.py"
install -m 0755 "$PLUGFS_BIN" "$T/plugfs"
HOLD=$T/hold_conns.py
TRICKLE=$PLUGFS_SOURCE_DIR/tests/integration/trickle.py

write_config "[control]" "max_clients = 8" "idle_timeout = 2" "group = daemon"
start_daemon

# ---------------------------------------------- a deadline from the first byte
python3 "$TRICKLE" "$CTL" 10 >"$T/trickle.out"
head -n 1 "$T/trickle.out"
ms=$(sed -n 's/^closed_after_ms=//p' "$T/trickle.out")
check "a client trickling spaces is closed by the daemon" test -n "$ms"
# Not before the 2 s, and long before the client stops trickling (10 s):
# a deadline from the last byte would close it at 12 s.  The upper bound,
# 8 s, leaves 6 s to an overshoot measured here under 50 ms.
check "within idle_timeout (2 s) of its first byte, not later (${ms:-never} ms)" \
	test "${ms:-99999}" -ge 1900 -a "${ms:-99999}" -lt 8000
check "it is told the request was not completed" \
	grep -q '"code":"unavailable".*a request was not completed (no newline) within 2 s' "$T/trickle.out"

# ---------------------------------------------- idle clients make room
python3 "$HOLD" "$CTL" 8 "$T/idle.status" &
IDLE_PID=$!
_PIDS+=("$IDLE_PID")
st() { sed -n "s/.*$2=\([0-9]*\).*/\1/p" "$1" 2>/dev/null; }
wait_until 30 "8 idle clients are connected" eval '[ "$(st "$T/idle.status" open)" = 8 ]' || exit 1
sleep 1.2 # idle for a second: they may be closed to make room
ok=0
for _ in $(seq 1 20); do plugfs status >/dev/null 2>>"$T/status.err" && ok=$((ok + 1)); done
check_eq "20 of 20 plugfs status are served while idle clients hold every slot" 20 "$ok"
check "no status was refused" test ! -s "$T/status.err"
wait_until 10 "the idle clients were closed to make room" eval '[ "$(st "$T/idle.status" closed)" -ge 1 ]'
check "a closed idle client is told why" \
	grep -q '"code":"unavailable".*closing this idle connection.*to make room for a new client (control.max_clients 8)' "$T/idle.status.lines"
kill -TERM "$IDLE_PID"
wait "$IDLE_PID" 2>/dev/null

# ---------------------------------------------- root's reserve
# 7 busy watchers of uid nobody (in control.group, so it may connect): the
# 7 slots not reserved for root.  An 8th client of nobody is refused; root
# is served.
# (The system's python3: nobody may not run one installed under /root.)
SYS_PY=/usr/bin/python3
[ -x "$SYS_PY" ] || die "$SYS_PY is missing"
mkdir "$T/nobody" && chown nobody "$T/nobody"
# setpriv itself in the background (not as_nobody_in, a function: a
# subshell), so that $! is the holder and the kill reaches it.
setpriv --reuid=nobody --regid=nogroup --groups=daemon -- "$SYS_PY" "$HOLD" "$CTL" 7 "$T/nobody/busy.status" '{"op":"watch"}' &
BUSY_PID=$!
_PIDS+=("$BUSY_PID")
wait_until 30 "7 watchers of nobody are answered" eval '[ "$(st "$T/nobody/busy.status" answered)" = 7 ]' || exit 1
sleep 1.2
as_nobody_in daemon "$T/plugfs" -c "$CFG" status >"$T/nobody.out" 2>"$T/nobody.err"
check_eq "an 8th client of nobody is refused (exit 1)" 1 $?
check "it is told the slots not reserved for root are busy" \
	grep -q 'plugfs status: too many clients: the 7 slots not reserved for root are busy' "$T/nobody.err"
plugfs status >"$T/root.out" 2>"$T/root.err"
check_eq "root's plugfs status is served" 0 $?
check_eq "the watchers are all still connected" 7 "$(st "$T/nobody/busy.status" open)"
kill -TERM "$BUSY_PID"
wait "$BUSY_PID" 2>/dev/null
stop_daemon
finish
