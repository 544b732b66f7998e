#!/usr/bin/env bash
# The watchdog pings systemd (WATCHDOG=1 on $NOTIFY_SOCKET, every third of
# $WATCHDOG_USEC) while the FUSE loop keeps up, idle included, and stops
# pinging once requests wait and none is served: every worker held by a
# lookup that never answers (test fault PLUGFS_FAULT_HANG_LOOKUP).
# fake_fdstore.py plays systemd's notify socket and logs what it gets.
. "$(dirname "$0")/lib.sh"
require_fuse
command -v python3 >/dev/null || die "python3 is not installed"

write_config
mkdir -p "$T/sd"
WATCHDOG_USEC=600000 PLUGFS_FAULT_HANG_LOOKUP=hang \
	python3 "$PLUGFS_SOURCE_DIR/tests/integration/fake_fdstore.py" "$T/sd" \
	"$PLUGFS_BIN" -c "$CFG" mount >>"$DAEMON_LOG" 2>&1 &
SD_PID=$!
_PIDS+=("$SD_PID")
wait_until --pid "$SD_PID" 60 "the daemon serves $MNT" mount_answers "$MNT" || exit 1
pings() { grep -c '^WATCHDOG=1' "$T/sd/notify.log" 2>/dev/null; }
pings_ge() { [ "$(pings)" -ge "$1" ]; }
wait_until 10 "an idle daemon pings the watchdog" pings_ge 3
check "an idle daemon pings the watchdog" pings_ge 3
# Hold every worker (libfuse starts at most 10) and more.
for i in $(seq 1 14); do
	stat "$MNT/plugins/hang" >/dev/null 2>&1 &
	_PIDS+=("$!")
done
held() { grep -q 'watchdog: FUSE requests wait and none was served' "$DAEMON_LOG"; }
wait_until 10 "the daemon notices its loop is held" held
check "with every worker held the daemon says so" held
# A ping sent just before the hold was noticed may still be on its way into
# notify.log (the stand-in logs what it reads): let it land before counting.
sleep 0.5
n=$(pings)
sleep 1.5
check_eq "and sends no ping meanwhile" "$n" "$(pings)"
echo "# pings before the hold and after: $n, $(pings)"
# Free the held lookups: only aborting our own connection fails them.
abort_fuse_conn "$MNT"
# The aborted connection ends the daemon's loop; the stand-in for systemd
# stops with whatever daemon it runs (fake_fdstore.py kills it on SIGTERM).
kill -TERM "$SD_PID"
wait "$SD_PID"
pid=$(cat "$T/sd/pid")
check "the daemon is gone" bash -c "! kill -0 $pid 2>/dev/null"
finish
