#!/usr/bin/env bash
# A probe of a socket on a hung filesystem stalls nothing else.  The socket
# paths of a3 and a4 lie on a second plugfs mount whose daemon is stopped
# (SIGSTOP): a lookup there blocks in the kernel until it answers, and a
# non-blocking connect() does that lookup (a5, probed with csi, too: its
# connect goes first, on the connector threads, not in libcurl).  Their connects run on connector
# threads that stay stuck; meanwhile `register' of them answers within the
# probe timeout (dead, "timeout"), the other registrations keep being probed
# (a2 dies: csi.sock fails over to a1 in the usual time), the mount keeps
# answering, and a SIGTERM still stops the daemon at once.  Once the hung
# filesystem answers again (SIGCONT), a3 and a4 are probed normally.
# The hung filesystem never answers until SIGCONT: whatever waited on it
# would wait for ever, so each "answers" here is bounded by a functional
# margin (a 30 s timeout, 60 times the probe timeout), not a timing; how
# fast failover is, is plugfs-bench-liveness's figure.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
write_config "[probe]" "mode = connect" "interval = 0.2" "timeout = 0.5" "failures = 3"
E=$MNT/plugins/csi-node/p

# The filesystem that will hang: a second daemon, its own mount and state.
MNT2=$T/mnt2 CTL2=$T/ctl2.sock
mkdir -p "$MNT2"
sed -e "s|^mountpoint = .*|mountpoint = $MNT2|" -e "s|^path = .*|path = $T/state2.db|" \
	-e "s|^socket = .*|socket = $CTL2|" "$CFG" >"$T/plugfs2.ini"
"$PLUGFS_BIN" -c "$T/plugfs2.ini" mount >>"$T/daemon2.log" 2>&1 &
pid2=$!
_PIDS+=("$pid2")
_MOUNTS+=("$MNT2")
wait_until --pid "$pid2" 60 "the second daemon serves $MNT2" mount_answers "$MNT2" || exit 1
# On a failure while it is stopped: let it go first, so it stops on SIGTERM.
on_cleanup kill -CONT "$pid2"
start_daemon


demo a1
demo a2
pid_a2=$DEMO_PID
reg csi-node p a1
reg csi-node p a2
expect_active "before the hang" csi-node p a2

kill -STOP "$pid2"
hung3=$MNT2/plugins/csi-node/hung/a3.sock
hung4=$MNT2/plugins/csi-node/hung/a4.sock
timeout 30 "$PLUGFS_BIN" -c "$CFG" register --type csi-node --name p --alloc a3 --socket "$hung3" \
	>"$T/reg.out" 2>"$T/reg.err"
check_eq "register of a socket on a hung filesystem answers, and succeeds" 0 $?
check "register warns that a3 is dead (timeout)" grep -q "warning: a3 is dead (timeout)" "$T/reg.err"
timeout 30 "$PLUGFS_BIN" -c "$CFG" register --type csi-node --name p --alloc a4 --socket "$hung4" \
	>/dev/null 2>"$T/reg4.err"
check_eq "a second one answers too" 0 $?
check "register warns that a4 is dead (timeout)" grep -q "warning: a4 is dead (timeout)" "$T/reg4.err"
# The csi probe too (libcurl's own connect() would block there): a5 with
# --probe csi on the hung filesystem.
hung5=$MNT2/plugins/csi-node/hung/a5.sock
timeout 30 "$PLUGFS_BIN" -c "$CFG" register --type csi-node --name p --alloc a5 --socket "$hung5" \
	--probe csi >/dev/null 2>"$T/reg5.err"
check_eq "register --probe csi of a socket on the hung filesystem answers, and succeeds" 0 $?
check "register warns that a5 is dead (timeout)" grep -q "warning: a5 is dead (timeout)" "$T/reg5.err"
expect_active "the hung ones do not take over" csi-node p a2
check_eq "a3 is dead" dead "$(health_of a3)"
check_eq "a3's error" timeout "$(error_of a3)"

# The other probes go on: a2 dies, csi.sock fails over to a1.
kill -KILL "$pid_a2"
wait "$pid_a2" 2>/dev/null
wait_until 10 "csi.sock leads to a1 after a2 died, two probes stuck" link_is a1
check "the mount answers: ls of the plugin" timeout 30 bash -c "ls '$E' | grep -qx csi.sock"
check "status answers" timeout 30 "$PLUGFS_BIN" -c "$CFG" status
# Two more probe rounds with the filesystem still hung.
r=$(probe_rounds)
wait_until 10 "two more probe rounds" rounds_past $((r + 2))
check_eq "a3 is still dead (timeout) while its filesystem hangs" "dead timeout" \
	"$(health_of a3) $(error_of a3)"

# The filesystem answers again: the stuck connects return, probes resume.
kill -CONT "$pid2"
wait_until 10 "a3's probe sees its real error (no such file)" error_is a3 "no such file"
wait_until 10 "a4's probe sees its real error (no such file)" error_is a4 "no such file"
wait_until 10 "a5's csi probe sees its real error (no such file)" error_is a5 "no such file"
expect_active "after the hang" csi-node p a1

# A stop is never held up by a stuck connect: a daemon stopped while a
# connect is stuck.  Not a3's or a4's: the kernel now answers their lookups
# from its cache of the names the second mount said do not exist; a6's
# path it never looked up.  LeakSanitizer's check at exit stops every
# thread with ptrace, which a thread stuck in a FUSE request never obeys:
# that daemon runs without it (the one above was checked, with nothing
# stuck at its stop).
stop_daemon
kill -STOP "$pid2"
ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 start_daemon
hung6=$MNT2/plugins/csi-node/hung6/a6.sock
timeout 30 "$PLUGFS_BIN" -c "$CFG" register --type csi-node --name p --alloc a6 --socket "$hung6" \
	>/dev/null 2>"$T/reg6.err"
check_eq "register of a6 on the hung filesystem answers" 0 $?
check "a6 is dead (timeout): its connect is stuck" grep -q "warning: a6 is dead (timeout)" "$T/reg6.err"
r=$(probe_rounds)
wait_until 10 "a probe round with a6's connect stuck" rounds_past $((r + 1))
kill -TERM "$DAEMON_PID"
wait_until 10 "the daemon stops on SIGTERM with connects stuck" _gone "$DAEMON_PID" || exit 1
wait "$DAEMON_PID"
check_eq "it exits 0" 0 $?
check "its mount is gone" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
DAEMON_PID=
kill -CONT "$pid2"
kill -TERM "$pid2"
wait_until 10 "the second daemon stops" _gone "$pid2"
finish
