#!/usr/bin/env bash
# A config that blocks never wedges the daemon (docs/design.md, Lifecycle,
# "Reload").  The config is a symlink the test repoints: first at a FIFO
# (an open() of it without O_NONBLOCK waits for a writer for good), then at
# a file on a hung filesystem (a second plugfs mount whose daemon is
# stopped: the lookup blocks in the kernel, O_NONBLOCK or not).  Each time
# SIGHUP is refused in the log, a `reload' over the socket is answered with
# the reason, the housekeeping thread goes on taking signals, and SIGTERM
# still stops the daemon and unmounts.  Prints how long each took.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
write_config
mv "$CFG" "$T/real.ini"
mkdir "$T/conf"
ln -s "$T/real.ini" "$T/conf/plugfs.ini"
CFG=$T/conf/plugfs.ini
# ms_since T0: milliseconds since T0 (date +%s%N).
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
# raw_reload: the daemon's answer to a reload over the socket, in
# $T/answer; how long it took on stdout.  (The CLI reads the config itself
# first and would refuse it there.)
raw_reload() {
	local t0
	t0=$(date +%s%N)
	printf '{"op":"reload"}\n' | timeout 30 "$CTLRAW" "$CTL" >"$T/answer"
	ms_since "$t0"
}
# stops_on_sigterm WHAT: SIGTERM; the daemon must be gone within 20 s, exit
# 0, its mount gone.
stops_on_sigterm() {
	local t0 rc
	t0=$(date +%s%N)
	kill -TERM "$DAEMON_PID"
	if ! wait_until 20 "the daemon stops on SIGTERM with $1" _gone "$DAEMON_PID"; then
		DAEMON_PID=
		return 1
	fi
	echo "# SIGTERM with $1: the daemon was gone after $(ms_since "$t0") ms"
	wait "$DAEMON_PID"
	rc=$?
	check_eq "with $1: it exits 0 on SIGTERM" 0 "$rc"
	check "with $1: its mount is gone" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
	DAEMON_PID=
}

# --- a FIFO in the config's place ---
start_daemon
mkfifo "$T/fifo.ini"
ln -sfn "$T/fifo.ini" "$CFG"
t0=$(date +%s%N)
kill -HUP "$DAEMON_PID"
wait_until 10 "SIGHUP with a FIFO is refused" \
	grep -q "reload failed, keeping the running config: config file $CFG: expected a regular file" \
	"$DAEMON_LOG" || exit 1
echo "# SIGHUP with a FIFO: refused after $(ms_since "$t0") ms"
took=$(raw_reload)
echo "# reload over the socket with a FIFO: answered in $took ms"
check_eq "reload with a FIFO: refused, naming the file and the rule" \
	"reload: config file $CFG: expected a regular file; the running config is kept" \
	"$(jq -r .error.message "$T/answer")"
"$PLUGFS_BIN" -c "$CFG" reload 2>"$T/err"
check_eq "plugfs reload with a FIFO: exit 1" 1 $?
check "plugfs reload with a FIFO: it names the rule" grep -q "expected a regular file" "$T/err"
# The housekeeping thread is free: the next SIGHUP reloads.
ln -sfn "$T/real.ini" "$CFG"
kill -HUP "$DAEMON_PID"
wait_until 10 "the next SIGHUP reloads" grep -q "reloaded $CFG" "$DAEMON_LOG" || exit 1
pass "after a FIFO, SIGHUP still reloads"
ln -sfn "$T/fifo.ini" "$CFG"
kill -HUP "$DAEMON_PID"
wait_until 10 "SIGHUP with a FIFO is refused again" \
	eval '[ "$(grep -c "expected a regular file" "$DAEMON_LOG")" -ge 2 ]' || exit 1
stops_on_sigterm "a FIFO as its config" || exit 1

# --- the config on a filesystem that stopped answering ---
MNT2=$T/mnt2
mkdir -p "$MNT2"
sed -e "s|^mountpoint = .*|mountpoint = $MNT2|" -e "s|^path = .*|path = $T/state2.db|" \
	-e "s|^socket = .*|socket = $T/ctl2.sock|" "$T/real.ini" >"$T/plugfs2.ini"
"$PLUGFS_BIN" -c "$T/plugfs2.ini" mount >>"$T/daemon2.log" 2>&1 &
pid2=$!
_PIDS+=("$pid2")
_MOUNTS+=("$MNT2")
wait_until --pid "$pid2" 60 "the second daemon serves $MNT2" mount_answers "$MNT2" || exit 1
# On a failure while it is stopped: let it go first, so it stops on SIGTERM.
on_cleanup kill -CONT "$pid2"
ln -sfn "$T/real.ini" "$CFG"
# Without the leak check at exit: LeakSanitizer stops every thread with
# ptrace first, and the reader stuck in the hung lookup sleeps killable, so
# it never stops and the check waits for good (the process, without
# sanitizers, exits at once: exit_group kills it).
ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 start_daemon
kill -STOP "$pid2"
# Repointed without a look at the target (ln -f would stat it, and wait):
# a path the hung filesystem was never asked about, so no cached entry
# answers for it.
python3 -c 'import os, sys; os.symlink(sys.argv[1], sys.argv[2] + ".new"); os.replace(sys.argv[2] + ".new", sys.argv[2])' \
	"$MNT2/plugins/plugfs.ini" "$CFG"
t0=$(date +%s%N)
kill -HUP "$DAEMON_PID"
wait_until 20 "SIGHUP with the config on a hung filesystem gives up" \
	grep -q "reload failed, keeping the running config: $CFG: not read within 2000 ms" \
	"$DAEMON_LOG" || exit 1
echo "# SIGHUP with the config on a hung filesystem: given up after $(ms_since "$t0") ms"
took=$(raw_reload)
echo "# reload over the socket meanwhile: answered in $took ms"
check "reload meanwhile: refused, the earlier read named" \
	grep -q "reload: $CFG: an earlier read of it has not returned for [0-9]* s (a hung filesystem?)" \
	"$T/answer"
check_eq "reload meanwhile: unavailable" unavailable "$(jq -r .error.code "$T/answer")"
check "the mount still answers" mount_answers "$MNT"
stops_on_sigterm "its config on a hung filesystem" || exit 1
kill -CONT "$pid2"
check_daemon_log
finish
