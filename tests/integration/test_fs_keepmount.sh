#!/usr/bin/env bash
# plugfs mount --keep-mount and plugfs stop-post, the unit's stop rule, with
# fake_fdstore.py playing systemd's file descriptor store.  Three SIGTERMs
# each followed by a start (systemctl restart) while a consumer loops
# connect() through a bind mount of a plugin directory, a registration made
# during one outage: 0 failed connects, every start resumed, the store kept.
# Then what stop-post does with the mount left after a SIGTERM: kept after a
# crash (SERVICE_RESULT=signal), detached after a stop (success); a dead
# mount is detached whatever the result; a hung daemon's mount is aborted
# and detached after a stop timeout.  Prints the figures.
. "$(dirname "$0")/lib.sh"
require_fuse
command -v python3 >/dev/null || die "python3 is not installed"

RESTARTS=3
mkdir -p "$T/sd"
touch "$T/sd/restart-on-exit" "$T/sd/hold"
on_cleanup rm -f "$T/sd/hold"
outlive_setup kx start_fake_systemd --keep-mount

started() { grep -c "ready: serving" "$DAEMON_LOG"; }
started_ge() { [ "$(started)" -ge "$1" ]; }
reg_rc=
for i in $(seq 1 "$RESTARTS"); do
	n=$(started)
	kill -TERM "$pid"
	if [ "$i" -eq 2 ]; then
		plugfs register --type csi-node --name kx --alloc a1 --socket "$T/run/a1/csi.sock" \
			>"$T/register.out" 2>&1
		reg_rc=$?
	fi
	wait_until --pid "$SD_PID" 30 "restart $i is served" started_ge $((n + 1)) || exit 1
	pid=$(cat "$T/sd/pid")
	consumer_moves_on "after restart $i"
done
stop_consumer
echo "# restarts (SIGTERM, start): $RESTARTS, connects tried: $tried, failed: $failed, longest stall: ${longest} ms"
check_eq "no connect through the bind mount failed across the restarts" 0 "$failed"
check_eq "the registration during an outage succeeds" 0 "$reg_rc"
check_eq "the new allocation is served through the bind mount" a1 \
	"$(demo_connect "$T/consumer/csi.sock" 2>&1)"
check_eq "each SIGTERM left the mount (stopped; the mount waits)" "$RESTARTS" \
	"$(grep -c 'the mount waits for the next start' "$DAEMON_LOG")"
check_eq "every start resumed" "$RESTARTS" "$(grep -c 'resumed the FUSE connection' "$DAEMON_LOG")"
check "no mount was made afresh after the first" \
	test "$(grep -c 'fs: mounted plugfs' "$DAEMON_LOG")" -eq 1
check "the store still holds the three" store_is "control fuse init "

# --- stop-post on the mount a SIGTERM left (the store still holds it) ---
rm -f "$T/sd/restart-on-exit"
kill -TERM "$pid"
wait_until 30 "the daemon exited" bash -c "! kill -0 $pid 2>/dev/null" || exit 1
check "after SIGTERM the mount is still there" is_mounted "$MNT"
out=$(SERVICE_RESULT=signal plugfs stop-post 2>&1)
check_eq "stop-post after a crash exits 0" 0 $?
check "after a crash it keeps a mount the store holds" is_mounted "$MNT"
echo "# $out"
out=$(SERVICE_RESULT=watchdog plugfs stop-post 2>&1)
check "after a watchdog kill it keeps the mount for the restart" is_mounted "$MNT"
echo "# $out"
out=$(SERVICE_RESULT=success plugfs stop-post 2>&1)
check_eq "stop-post after a clean stop exits 0" 0 $?
check "after a clean stop it detaches the mount" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
check_eq "a clean stop says one line: what it detached" "plugfs stop-post: detached $MNT" \
	"$(grep -v 'plugfs info: fs: detached' <<<"$out")"
echo "# $out"
rm -f "$T/sd/hold"
wait "$SD_PID"
check_eq "the service exits 0" 0 $?
out=$(SERVICE_RESULT=success plugfs stop-post 2>&1)
check_eq "stop-post with nothing mounted exits 0" 0 $?
# What the unit once ran here, fusermount3 -u, said "failed to unmount ...:
# Invalid argument" after every clean stop: stop-post says nothing.
check_eq "stop-post with nothing mounted says nothing (no unmount error)" "" "$out"

# --- outside systemd --keep-mount changes nothing: a stop unmounts ---
"$PLUGFS_BIN" -c "$CFG" mount --keep-mount >>"$DAEMON_LOG" 2>&1 &
DAEMON_PID=$!
_PIDS+=("$DAEMON_PID")
wait_until --pid "$DAEMON_PID" 30 "a daemon without a store serves $MNT" mount_answers "$MNT" || exit 1
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID"
check_eq "without a file descriptor store --keep-mount exits 0 on SIGTERM" 0 $?
check "and unmounts" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"

# --- a dead mount is detached whatever the result ---
"$PLUGFS_BIN" -c "$CFG" mount >>"$DAEMON_LOG" 2>&1 &
DAEMON_PID=$!
_PIDS+=("$DAEMON_PID")
wait_until --pid "$DAEMON_PID" 30 "a plain daemon serves $MNT" mount_answers "$MNT" || exit 1
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
out=$(SERVICE_RESULT=signal plugfs stop-post 2>&1)
check "after a crash without a store it detaches the dead mount" \
	bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
echo "# $out"

# --- a daemon that could not be stopped (timeout): its connection aborted,
# then detached ---
"$PLUGFS_BIN" -c "$CFG" mount >>"$DAEMON_LOG" 2>&1 &
DAEMON_PID=$!
wait_until --pid "$DAEMON_PID" 30 "a plain daemon serves $MNT" mount_answers "$MNT" || exit 1
kill -STOP "$DAEMON_PID"
out=$(SERVICE_RESULT=timeout plugfs stop-post 2>&1)
check_eq "stop-post after a stop timeout exits 0" 0 $?
check "after a stop timeout the hung daemon's mount is detached" \
	bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
echo "# $out"
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
finish
