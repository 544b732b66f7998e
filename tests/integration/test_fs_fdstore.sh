#!/usr/bin/env bash
# The mount outlives a crash through systemd's file descriptor store, here
# played by fake_fdstore.py (the protocol of sd_pid_notify_with_fds and
# $LISTEN_FDS; the real systemd is another test's): a fresh mount hands the
# FUSE connection, its FUSE_INIT and the control socket to the store; after
# each of three SIGKILLs the restarted daemon resumes them.  A consumer
# loops connect() through a bind mount of a plugin directory meanwhile, and
# a registration is made during one outage: 0 failed connects, the
# registration waits and is served after.  Then five SIGKILLs under a reader
# and a client switching allocations: 0 failed reads.  A SIGTERM then
# empties the store (FDSTOREREMOVE=1) and unmounts.  Prints the figures.
. "$(dirname "$0")/lib.sh"
require_fuse
command -v python3 >/dev/null || die "python3 is not installed"

KILLS=3
outlive_setup rx start_fake_systemd

reg_rc=
for i in $(seq 1 "$KILLS"); do
	kill -KILL "$pid"
	if [ "$i" -eq 2 ]; then
		plugfs register --type csi-node --name rx --alloc a1 --socket "$T/run/a1/csi.sock" \
			>"$T/register.out" 2>&1
		reg_rc=$?
	fi
	wait_until --pid "$SD_PID" 30 "restart $i resumed the mount" resumed_ge "$i" || exit 1
	pid=$(cat "$T/sd/pid")
	consumer_moves_on "after restart $i"
done
stop_consumer
echo "# SIGKILLs: $KILLS, connects tried: $tried, failed: $failed, longest stall: ${longest} ms"
# The control socket from the store listens for the restarted process (it
# calls listen() again), which reload --pid requires of the socket it asks.
plugfs reload --pid "$pid" >"$T/reload.out" 2>&1
rc=$?
echo "# reload --pid $pid after the restarts: exit $rc: $(tr '\n' ' ' <"$T/reload.out")"
check_eq "reload --pid of the restarted daemon: exit 0" 0 "$rc"
check_eq "no connect through the bind mount failed" 0 "$failed"
check_eq "the registration during an outage succeeds" 0 "$reg_rc"
check_eq "the new allocation is served through the bind mount" a1 \
	"$(demo_connect "$T/consumer/csi.sock" 2>&1)"
check_eq "every restart resumed" "$KILLS" "$(resumed)"
check "the store still holds the three" store_is "control fuse init "
check "no mount was made afresh after the first" \
	test "$(grep -c 'fs: mounted plugfs' "$DAEMON_LOG")" -eq 1

# SIGKILLs while a client switches the active allocation back and forth and
# a reader loops through the mount: every read is answered (requests the
# killed process had read are resent, its open handles are served from the
# nodes).  A registration the killed process had accepted but not answered
# fails with it; one made while no daemon runs waits and succeeds.
start_switch_load rx
n0=$(resumed)
for i in 1 2 3 4 5; do
	sleep "0.$(printf '%03d' $((100 + RANDOM % 200)))"
	kill -KILL "$pid"
	wait_until --pid "$SD_PID" 30 "restart $i under switches resumed the mount" \
		resumed_ge $((n0 + i)) || exit 1
	pid=$(cat "$T/sd/pid")
done
sleep 0.2
stop_switch_load
echo "# SIGKILLs under switches: 5, reads failed: $readfail, registrations: $regs, failed: $regfail"
check_eq "no read through the mount failed across the kills" 0 "$readfail"
check "registrations went on after the kills" test "$regs" -gt "$regfail"

# A clean stop lets go of the store and unmounts.
kill -TERM "$pid"
wait "$SD_PID"
check_eq "the service exits 0 on SIGTERM" 0 $?
check "the store is empty after SIGTERM" store_is ""
check "the mount is gone after SIGTERM" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
finish
