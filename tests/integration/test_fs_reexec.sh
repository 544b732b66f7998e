#!/usr/bin/env bash
# The mount outlives the process: SIGUSR2 re-executes the daemon in place
# (same PID) and hands it the FUSE connection, its FUSE_INIT and the
# listening control socket.  A consumer that bind-mounted a plugin directory
# loops connect() through it to a real plugin socket across three re-execs
# in a row, and a registration of a new allocation is made during one of
# them: no connect fails, the registration is not refused and is served
# after, the PID stays, one guard process remains, and SIGTERM then
# unmounts a resumed mount.  Prints tried/failed/longest stall.
. "$(dirname "$0")/lib.sh"
require_fuse

REEXECS=3
outlive_setup rx start_daemon

reg_rc=
for i in $(seq 1 "$REEXECS"); do
	kill -USR2 "$pid"
	if [ "$i" -eq 2 ]; then
		# During the handover: waits in the control socket's backlog.
		plugfs register --type csi-node --name rx --alloc a1 --socket "$T/run/a1/csi.sock" \
			>"$T/register.out" 2>&1
		reg_rc=$?
	fi
	wait_until --pid "$pid" 30 "re-exec $i resumed the mount" resumed_ge "$i" || exit 1
	consumer_moves_on "after re-exec $i"
done
stop_consumer
echo "# re-execs: $REEXECS, connects tried: $tried, failed: $failed, longest stall: ${longest} ms"
check_eq "no connect through the bind mount failed" 0 "$failed"
check_eq "the registration during a re-exec succeeds" 0 "$reg_rc"
check_eq "the new allocation is served through the bind mount" a1 \
	"$(demo_connect "$T/consumer/csi.sock" 2>&1)"
check "the daemon kept its PID" kill -0 "$pid"
check_eq "it re-executed $REEXECS times" "$REEXECS" "$(resumed)"
check_eq "one guard process is left" 1 "$(pgrep -x plugfs-guard -P "$pid" | wc -l)"
check "the control socket answers" bash -c "\"$PLUGFS_BIN\" -c \"$CFG\" status >/dev/null"
check "the tree lists the new allocation" test -L "$MNT/plugins/csi-node/rx/allocs/a1"
check "no error in the daemon log" bash -c "! grep -Eiq 'error|cannot' '$DAEMON_LOG'"

# Re-execs while a client switches the active allocation back and forth
# (kernel invalidations in flight) and a reader loops through the mount.
start_switch_load rx
n0=$(resumed)
for i in 1 2 3 4 5; do
	kill -USR2 "$pid"
	wait_until --pid "$pid" 30 "re-exec $i under switches resumed the mount" resumed_ge $((n0 + i)) || exit 1
	sleep 0.2
done
stop_switch_load
echo "# re-execs under switches: 5, registrations: $regs, failed: $regfail"
check_eq "no registration failed during re-execs" 0 "$regfail"
check_eq "no read through the mount failed during re-execs" 0 "$readfail"
check "the daemon kept its PID under switches" kill -0 "$pid"
stop_daemon

# A SIGKILL after a re-exec: the guard of the new program is in place, the
# process and its guard go.
# gone PID: every task of PID has exited (a zombie counts as gone).
gone() {
	local t st
	[ -d "/proc/$1" ] || return 0
	for t in /proc/"$1"/task/*; do
		st=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "$t/status" 2>/dev/null)
		case "$st" in "" | Z | X) ;; *) return 1 ;; esac
	done
}
start_daemon
pid=$DAEMON_PID
disown "$pid"
n=$(resumed)
kill -USR2 "$pid"
wait_until --pid "$pid" 30 "a re-exec resumed the mount" resumed_ge $((n + 1)) || exit 1
guard=$(pgrep -x plugfs-guard -P "$pid")
check "the re-executed daemon has a guard" test -n "$guard"
# Gone, not a timing: a guard that outlived its daemon would stay for ever.
both_gone() { gone "$pid" && { [ -z "$guard" ] || gone "$guard"; }; }
kill -KILL "$pid"
wait_until 10 "a killed re-executed daemon and its guard are gone" both_gone
gone "$pid" || abort_fuse_conn "$MNT"
finish
