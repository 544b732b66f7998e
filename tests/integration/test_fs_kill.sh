#!/usr/bin/env bash
# SIGKILL never leaves an unkillable daemon.  Trial 1: starts killed at a
# random moment in their first 300 ms, and as many killed the moment their
# mount shows in /proc/mounts (where a readiness check through the mount
# used to hang the process).  Trial 2b: kills in the first 60 ms after a
# SIGTERM, while the daemon stops under a reader.  Trial 2: kills while
# readers loop through the mount and a client switches the active
# allocation (so kernel invalidations are in flight).  Every process must be
# gone within 1 s of the kill, as the kernel tells it
# (plugfs-test-exit-timer: a pidfd turns readable once every thread has
# exited), and its guard process must go too; a process still there after
# 5 s is counted as hung, and its own FUSE connection is aborted here so the
# test goes on and CI never hangs.  Prints the figures.
. "$(dirname "$0")/lib.sh"
require_fuse

# Trial counts: the soak mode (PLUGFS_SOAK=1) runs 2 x 50 starts, 50 loaded
# kills and 20 kills while stopping.  The default run: 2 x 8 starts, 15
# loaded, 10 while stopping: each defect this test has caught (a readiness
# check through the mount, a notifier stuck on the kernel's inode lock, a
# stop that waited on its own mount) hung every kill that met its moment,
# and these counts meet each moment several times; the soak looks for the
# rarer ones.  About 50 s here (150 s with the soak's counts).
STARTS=${PLUGFS_KILL_STARTS:-$(soak 8 50)}
LOADED=${PLUGFS_KILL_LOADED:-$(soak 15 50)}
# A kill must be over within SLOW_MS: the longest exit measured here is
# 83 ms (trial 2, under load), so 1,000 ms is more than 10x that.
SLOW_MS=1000

# All tasks of pid have exited (a zombie leader with a thread left in the
# kernel still lists that thread).
gone() {
	local t s
	[ -d "/proc/$1" ] || return 0
	for t in /proc/"$1"/task/*; do
		s=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "$t/status" 2>/dev/null)
		case "$s" in "" | Z | X) ;; *) return 1 ;; esac
	done
	return 0
}
now_ms() { date +%s%3N; }
guards() { pgrep -x plugfs-guard -P "$1" 2>/dev/null; }

hung=0
slow=0
worst=0
TIMER=$PLUGFS_BUILD_DIR/tests/integration/plugfs-test-exit-timer
[ -x "$TIMER" ] || die "$TIMER is missing: build the tests first"
mkfifo "$T/kt.in" "$T/kt.out" "$T/gate"
# timer_start PID: starts plugfs-test-exit-timer on PID, before the moment
# of the kill and before any load, so its start-up neither delays the kill nor
# waits for a CPU behind the load; kill_and_time starts one itself when
# none is waiting.
KT=
KT_FOR=
KT_GUARD=
timer_start() {
	"$TIMER" "$1" <"$T/kt.in" >"$T/kt.out" &
	KT=$!
	KT_FOR=$1
	# Its guard, looked up now, before any load (pgrep under the load
	# takes seconds); none yet for a start still at its gate.
	KT_GUARD=$(guards "$1")
	exec {KT_W}>"$T/kt.in" {KT_R}<"$T/kt.out"
	read -r -t 30 KT_SAID <&"$KT_R" || KT_SAID=
}
# kill_and_time PID: SIGKILL through plugfs-test-exit-timer, which times the
# exit from the kernel's side (the pidfd of PID turns readable once every thread
# has exited) and stops the load ($LOAD_PIDS, whole process groups) once
# the kill is sent; the time goes into $worst.  A process still there after
# 5 s is counted as hung and its connection aborted.  Then waits up to 5 s
# for its guard to be gone.
kill_and_time() {
	local pid=$1 t0 el g r
	[ "$KT_FOR" = "$pid" ] || timer_start "$pid"
	g=${KT_GUARD:-$(guards "$pid")}
	r=$KT_SAID
	t0=$(now_ms)
	if [ "$r" = ready ]; then
		echo "kill ${LOAD_PIDS:-}" >&"$KT_W"
		read -r -t 30 r <&"$KT_R" || r=
	fi
	exec {KT_W}>&- {KT_R}<&-
	wait "$KT"
	KT_FOR=
	case "$r" in
	gone) el=0 ;; # exited before the kill
	[0-9]*) el=$r ;;
	hung)
		el=$(($(now_ms) - t0))
		hung=$((hung + 1))
		echo "# pid $pid still there ${el} ms after SIGKILL:"
		grep -H . /proc/"$pid"/task/*/stat 2>/dev/null | head -n 12 | sed 's/^/#   /'
		cat /proc/"$pid"/task/*/stack 2>/dev/null | head -n 20 | sed 's/^/#   /'
		abort_fuse_conn "$MNT"
		while ! gone "$pid" && [ $(($(now_ms) - t0)) -lt 10000 ]; do sleep 0.05; done
		;;
	*)
		fail "plugfs-test-exit-timer said [$r] for pid $pid"
		kill -KILL "$pid" 2>/dev/null
		el=0
		;;
	esac
	[ "$el" -gt "$SLOW_MS" ] && [ "$r" != hung ] && slow=$((slow + 1))
	[ "$el" -gt "$worst" ] && worst=$el
	if [ -n "$g" ]; then
		t0=$(now_ms)
		# Gone: exited (a zombie until whoever it was left to reaps it).
		while ! gone "$g" && [ $(($(now_ms) - t0)) -lt 5000 ]; do sleep 0.01; done
		if ! gone "$g"; then
			echo "# guard $g of $pid still there"
			hung=$((hung + 1))
		fi
	fi
}

write_config
# --- trial 1: kills while starting ------------------------------------
for i in $(seq 1 $((2 * STARTS))); do
	# The start waits at the gate until its timer is ready, so the timer's
	# own start-up does not shift the moment of the kill.
	(
		exec <"$T/gate"
		exec "$PLUGFS_BIN" -c "$CFG" mount </dev/null >>"$DAEMON_LOG" 2>&1
	) &
	pid=$!
	disown "$pid" # no job report for the kill
	timer_start "$pid"
	exec {gate}>"$T/gate"
	exec {gate}>&-
	if [ $((i % 2)) -eq 0 ]; then
		sleep "0.$(printf '%03d' $((RANDOM % 300)))"
	else
		t0=$(now_ms)
		until is_mounted "$MNT" || [ $(($(now_ms) - t0)) -gt 10000 ]; do :; done
	fi
	kill_and_time "$pid"
done
echo "# starts killed: $((2 * STARTS)), hung: $hung, slower than 1 s: $slow, longest: ${worst} ms"
check_eq "trial 1: no start killed in its first 300 ms hangs" 0 "$hung"
check_eq "trial 1: every killed start is gone within 1 s" 0 "$slow"
trial1_worst=$worst

# The next start recovers whatever the kills left at the mountpoint.
start_daemon
disown "$DAEMON_PID"
check "a start after the kills serves the mount" test -d "$MNT/plugins/csi-node"
kill_and_time "$DAEMON_PID"
_PIDS=()

# --- trial 2: kills under load ------------------------------------------
hung=0
slow=0
worst=0
reads=0
E=$MNT/plugins/csi-node/kp
reader() { # loops until killed; counts nothing (the mount dies under it)
	while :; do
		readlink "$E/csi.sock" >/dev/null 2>&1
		ls "$E/allocs" >/dev/null 2>&1
		cat "$E/info" >/dev/null 2>&1
	done
}
switcher() { # registers a0, a1, a2 in turn, a new version each time
	local n=1
	while :; do
		"$PLUGFS_BIN" -c "$CFG" register --type csi-node --name kp --alloc "a$((n % 3))" \
			--socket "/run/kp/a$((n % 3))/csi.sock" --version "v$n" >/dev/null 2>&1
		n=$((n + 1))
	done
}
export -f reader switcher
export E PLUGFS_BIN CFG
for i in $(seq 1 "$LOADED"); do
	start_daemon
	disown "$DAEMON_PID"
	plugfs register --type csi-node --name kp --alloc a0 --socket /run/kp/a0/csi.sock >/dev/null ||
		fail "trial 2 run $i: first registration"
	timer_start "$DAEMON_PID"
	# Each load loop is a process group of its own (setsid), so that the
	# kill stops it with the child it is running.
	setsid bash -c reader &
	r1=$!
	setsid bash -c reader &
	r2=$!
	setsid bash -c switcher &
	sw=$!
	sleep "0.$(printf '%03d' $((50 + RANDOM % 250)))"
	readlink "$E/csi.sock" >/dev/null 2>&1 && reads=$((reads + 1))
	LOAD_PIDS="$r1 $r2 $sw"
	kill_and_time "$DAEMON_PID"
	LOAD_PIDS=
	kill -KILL -- "-$r1" "-$r2" "-$sw" 2>/dev/null
	wait "$r1" "$r2" "$sw" 2>/dev/null
	_PIDS=()
done
echo "# loaded kills: $LOADED, hung: $hung, slower than 1 s: $slow, longest: ${worst} ms"
check_eq "trial 2: no daemon killed under readers and switches hangs" 0 "$hung"
check_eq "trial 2: every one is gone within 1 s" 0 "$slow"
trial2_worst=$worst
check "trial 2: the mount was served before each kill" test "$reads" -ge $((LOADED * 9 / 10))

# --- trial 2b: kills while stopping -------------------------------------
hung=0
slow=0
worst=0
STOPS=${PLUGFS_KILL_STOPS:-$(soak 10 20)}
for i in $(seq 1 "$STOPS"); do
	start_daemon
	disown "$DAEMON_PID"
	plugfs register --type csi-node --name kp --alloc "a$i" --socket "/run/kp/a$i/csi.sock" \
		>/dev/null 2>&1
	reader &
	r1=$!
	timer_start "$DAEMON_PID"
	kill -TERM "$DAEMON_PID"
	sleep "0.0$(printf '%02d' $((RANDOM % 60)))"
	kill_and_time "$DAEMON_PID"
	kill -KILL "$r1" 2>/dev/null
	wait "$r1" 2>/dev/null
	_PIDS=()
done
echo "# kills while stopping: $STOPS, hung: $hung, slower than 1 s: $slow, longest: ${worst} ms"
check_eq "trial 2b: no daemon killed while it stops hangs" 0 "$hung"
check_eq "trial 2b: every one is gone within 1 s" 0 "$slow"

# --- trial 3: a thread of the daemon inside the kernel ---------------------
# A lookup in csi-node/ that the daemon never answers (test fault) holds the
# directory's inode lock; a registration there makes the notifier's
# invalidation wait on that lock inside the kernel, where SIGKILL cannot
# reach it.  The guard must abort the connection so the process can exit.
hung=0
slow=0
worst=0
PLUGFS_FAULT_HANG_LOOKUP=hang start_daemon
disown "$DAEMON_PID"
stat "$MNT/plugins/csi-node/hang" >/dev/null 2>&1 &
looker=$!
plugfs register --type csi-node --name other --alloc a0 --socket /run/other/a0/csi.sock \
	>/dev/null 2>&1 &
client=$!
t0=$(now_ms)
until grep -qs '^State:[[:space:]]*D' /proc/"$DAEMON_PID"/task/*/status ||
	[ $(($(now_ms) - t0)) -gt 10000 ]; do sleep 0.02; done
check "trial 3: a daemon thread waits inside the kernel on its own mount" \
	grep -qs '^State:[[:space:]]*D' /proc/"$DAEMON_PID"/task/*/status
# The exit waits for the guard: 500 ms of grace, then its abort (515 to
# 534 ms measured here).  Its bound is the timer's 5 s (hung), 10x that.
SLOW_MS=5000
kill_and_time "$DAEMON_PID"
SLOW_MS=1000
check_eq "trial 3: the daemon is not left hanging (gone within 5 s)" 0 "$hung"
check_eq "trial 3: it is gone within 5 s" 0 "$slow"
check "trial 3: the guard aborted the connection" grep -q 'guard: .*aborted FUSE connection' "$DAEMON_LOG"
wait "$looker" "$client" 2>/dev/null
check "trial 3: the blocked lookup and the client returned" bash -c "! kill -0 $looker 2>/dev/null && ! kill -0 $client 2>/dev/null"
_PIDS=()
echo "# trial 3: gone ${worst} ms after SIGKILL"

# --- a hung daemon at the mountpoint does not hang the next start ---------
start_daemon
disown "$DAEMON_PID"
stopped=$DAEMON_PID
kill -STOP "$stopped"
# The second daemon has a control socket and a state file of its own: the
# stopped one still holds its listening socket.
sed -e "s|$CTL|$T/ctl2.sock|" -e "s|$STATE|$T/state2.db|" "$CFG" >"$T/second.ini"
n0=$(grep -c 'ready: serving' "$DAEMON_LOG")
t0=$(now_ms)
"$PLUGFS_BIN" -c "$T/second.ini" mount >>"$DAEMON_LOG" 2>&1 &
DAEMON_PID=$!
disown "$DAEMON_PID"
until [ "$(grep -c 'ready: serving' "$DAEMON_LOG")" -gt "$n0" ] || [ $(($(now_ms) - t0)) -gt 20000 ] ||
	! kill -0 "$DAEMON_PID" 2>/dev/null; do sleep 0.05; done
el=$(($(now_ms) - t0))
check "a start over a hung plugfs mount aborts that connection and serves" \
	grep -q 'does not answer within .* aborting its FUSE connection' "$DAEMON_LOG"
check "the new mount answers" test -d "$MNT/plugins/csi-node"
echo "# start over a hung mount: ready after ${el} ms"
kill -KILL "$stopped"
kill_and_time "$DAEMON_PID"
_PIDS=()
echo "# figures: trial1 longest ${trial1_worst} ms; trial2 longest ${trial2_worst} ms;" \
	"guard aborts: $(grep -c 'guard: .*aborted' "$DAEMON_LOG")"
finish
