#!/usr/bin/env bash
# The daemon's life: restart on the same state (same tree, same inode
# numbers), kill -9 then a new start (stale mount recovered), a second daemon
# on a live mount refused, SIGTERM (exit 0, mount gone), readiness through
# $NOTIFY_SOCKET (path and abstract), SIGHUP reload, errors at start.
. "$(dirname "$0")/lib.sh"
require_fuse
write_config

S=$T/sockets
state_register csi-node ebs a0 "$S/a0/csi.sock" 1.0
state_register csi-node ebs a1 "$S/a1/csi.sock" 1.1
state_register csi-controller nfs n0 "$S/n0/csi.sock"

inodes() { (cd "$MNT" && find . | sort | while read -r p; do stat -c '%n %i %F' "$p"; done); }

check "a missing mountpoint" test ! -e "$MNT"
start_daemon
tree1=$(inodes)
check "the tree has the plugins" grep -q '^./plugins/csi-node/ebs/allocs/a1 ' <<<"$tree1"

# A second daemon on the live mount: refused, the first keeps serving.
"$PLUGFS_BIN" -c "$CFG" mount >"$T/second.out" 2>&1
rc=$?
check "a second daemon on a live mount fails" test "$rc" -ne 0
check "it says why" grep -q "a live plugfs mount is already at" "$T/second.out"
check_eq "the message is one line" 1 "$(wc -l <"$T/second.out")"
check_eq "the first daemon still serves" "$S/a1/csi.sock" "$(readlink "$MNT/plugins/csi-node/ebs/csi.sock")"
check_eq "one plugfs mount at the mountpoint" 1 "$(grep -c " $MNT fuse.plugfs" /proc/mounts)"

# SIGHUP: log level and cache_timeout applied, the rest reported.
sed -i -e 's/^cache_timeout = 60/cache_timeout = 5/' -e 's/^allow_other = true/allow_other = false/' "$CFG"
printf '[log]\nlevel = debug\n' >>"$CFG"
kill -HUP "$DAEMON_PID"
wait_until 60 "the daemon logs the reload" grep -q "reloaded" "$DAEMON_LOG"
check "SIGHUP applies the log level" grep -q "log level is now debug" "$DAEMON_LOG"
check "SIGHUP applies cache_timeout" grep -q "cache_timeout is now 5s" "$DAEMON_LOG"
check "SIGHUP names what needs a restart" grep -q "\[mount\] allow_other changed; restart" "$DAEMON_LOG"
check "the daemon survives SIGHUP" kill -0 "$DAEMON_PID"
printf '[bogus]\n' >>"$CFG"
kill -HUP "$DAEMON_PID"
wait_until 60 "the daemon logs the failed reload" grep -q "reload failed" "$DAEMON_LOG"
check "a bad config on SIGHUP is reported and the running one kept" grep -q "reload failed, keeping the running config" "$DAEMON_LOG"
write_config

stop_daemon

# Restart on the same state: same tree, same inode numbers.
start_daemon
check_eq "after a restart: same tree, same inode numbers" "$tree1" "$(inodes)"

# kill -9: the mount is left dead (ENOTCONN); a new start recovers it.
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
expect_errno "after kill -9 the mount answers" ENOTCONN stat -f "$MNT"
start_daemon
check "the stale mount was detached" grep -q "detached a stale fuse.plugfs mount at $MNT" "$DAEMON_LOG"
check_eq "one plugfs mount at the mountpoint" 1 "$(grep -c " $MNT fuse.plugfs" /proc/mounts)"
check_eq "the tree is back, same inode numbers" "$tree1" "$(inodes)"
stop_daemon

# SIGINT stops as cleanly as SIGTERM.
start_daemon
kill -INT "$DAEMON_PID"
wait "$DAEMON_PID"
check_eq "SIGINT: the daemon exits 0" 0 $?
check "SIGINT: the mount is gone" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
check "SIGINT: the control socket is gone" test ! -e "$CTL"

# Stop signals that keep coming while the daemon shuts down (an impatient
# admin, a supervisor that repeats itself) still end in a clean stop.
start_daemon
pid=$DAEMON_PID
kill -TERM "$pid"
n=1
while kill -TERM "$pid" 2>/dev/null && [ "$n" -lt 100000 ]; do n=$((n + 1)); done
wait "$pid"
check_eq "SIGTERM x $n during shutdown: the daemon exits 0" 0 $?
check "... the mount is gone" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
check "... the control socket is gone" test ! -e "$CTL"
DAEMON_PID=

# SIGTERM with work pending: the daemon is stopped (SIGSTOP) while a lookup
# waits on the mount and a registration waits on the control socket, then
# gets SIGTERM and SIGCONT.  Whichever runs first (the lookup answered, the
# registration's invalidation sent, the loop stopped), it must exit 0 with
# the mount gone, and the waiting lookup and client must come back.
start_daemon
pid=$DAEMON_PID
kill -STOP "$pid"
timeout 120 stat "$MNT/plugins/csi-node/pending" >/dev/null 2>&1 &
stat_pid=$!
timeout 120 "$PLUGFS_BIN" -c "$CFG" register --type csi-node --name pending --alloc p0 \
	--socket "$S/p0/csi.sock" >/dev/null 2>"$T/pending.err" &
reg_pid=$!
_PIDS+=("$stat_pid" "$reg_pid")
# Both must be waiting before the SIGTERM (a client slow to start would
# find no daemon at all): the lookup is a request the connection holds
# (fusectl's waiting), the registration a connection in the listening
# socket's backlog (its Recv-Q).
fuse_waiting() { [ "$(cat "$(fuse_conn_dir "$MNT")/waiting" 2>/dev/null)" -ge 1 ]; }
# (The daemon's one listening socket, found by its pid: ss names it by the
# path it was bound at, a temporary one renamed to $CTL.)
ctl_backlog() { [ "$(ss -xlpH | awk -v p="pid=$DAEMON_PID," '$2 == "LISTEN" && index($0, p) { print $3 }')" -ge 1 ]; }
wait_until 30 "the lookup waits on the stopped daemon" fuse_waiting
wait_until 30 "the registration waits in the control socket's backlog" ctl_backlog
kill -TERM "$pid"
kill -CONT "$pid"
timeout 120 tail --pid="$pid" -f /dev/null
check "SIGTERM with a lookup and a registration pending: the daemon stops" bash -c "! kill -0 $pid 2>/dev/null"
wait "$pid"
check_eq "... and exits 0" 0 $?
check "... the mount is gone" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
wait "$stat_pid"
check "... the waiting lookup came back" test $? -ne 124
# The registration was answered by the stopping daemon, or its connection
# was closed unanswered and the CLI sends it again (for 30 s, see
# cli/ctlcli.c): to the next daemon, which answers it.  Either way the
# client comes back with its registration made, without waiting out that
# window.
DAEMON_PID=
start_daemon
wait "$reg_pid"
rc=$?; check_eq "... the waiting client came back, registered" 0 "$rc"; [ "$rc" = 0 ] || sed "s/^/#   /" "$T/pending.err"
check_eq "... pending is served" "$S/p0/csi.sock" "$(readlink "$MNT/plugins/csi-node/pending/csi.sock")"
stop_daemon

# An aborted connection (an admin's abort in /sys/fs/fuse/connections, or
# the daemon's own abort of a blocked invalidation): the stop still takes
# the mount away, not leave a dead one answering ENOTCONN to consumers.
start_daemon
pid=$DAEMON_PID
abort_fuse_conn "$MNT"
kill -TERM "$pid" 2>/dev/null
timeout 60 tail --pid="$pid" -f /dev/null
check "an aborted connection: the daemon stops" bash -c "! kill -0 $pid 2>/dev/null"
wait "$pid"
check_eq "... and exits 0" 0 $?
check "... the mount is gone" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
DAEMON_PID=

# Readiness: READY=1 on $NOTIFY_SOCKET once the mount answers (path and
# abstract socket).
notify_test() { # NOTIFY_SOCKET-VALUE DESCRIPTION
	local rpid
	"$FS_HARNESS" notify-recv "$1" 90 >"$T/notify.out" 2>&1 &
	rpid=$!
	_PIDS+=("$rpid")
	wait_until --pid "$rpid" 60 "fs-harness notify-recv listens on $1" grep -q listening "$T/notify.out"
	NOTIFY_SOCKET=$1 start_daemon
	wait "$rpid"
	check "$2: READY=1 received" grep -qx "READY=1" "$T/notify.out"
	check "$2: MAINPID is the daemon" grep -qx "MAINPID=$DAEMON_PID" "$T/notify.out"
	stop_daemon
}
notify_test "$T/notify.sock" "NOTIFY_SOCKET path"
notify_test "@plugfs-test-$$-notify" "NOTIFY_SOCKET abstract"

# Errors at start: one clear line, exit non-zero, nothing mounted.
start_error() { # DESCRIPTION REGEX ARGS...
	local d=$1 re=$2 rc
	shift 2
	timeout 20 "$PLUGFS_BIN" "$@" >"$T/err.out" 2>&1
	rc=$?
	check "$d: exit non-zero" test "$rc" -ne 0 -a "$rc" -ne 124
	check "$d: the message says why" grep -Eq "$re" "$T/err.out"
	check_eq "$d: one line" 1 "$(wc -l <"$T/err.out")"
	check "$d: nothing mounted" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
}
touch "$T/afile"
start_error "mountpoint not a directory" "mountpoint .*afile' is not a directory" \
	-c "$CFG" mount --mountpoint "$T/afile"
printf '[mount]\nbogus = 1\n' >"$T/bad.ini"
start_error "bad config" "bogus" -c "$T/bad.ini" mount
start_error "missing config file" "nope.ini" -c "$T/nope.ini" mount
head -c 4096 /dev/urandom >"$T/garbage.db"
sed "s|^path = .*|path = $T/garbage.db|" "$CFG" >"$T/garbage.ini"
start_error "unusable state file" "state file .*garbage.db" -c "$T/garbage.ini" mount
check_eq "unusable state file: the file is named once" 1 "$(grep -o 'garbage.db' "$T/err.out" | wc -l)"
"$PLUGFS_BIN" -c "$CFG" mount --bogus >"$T/err.out" 2>&1
check_eq "an unknown option is a usage error" 2 $?
check "it names the option" grep -q -- "--bogus" "$T/err.out"

# No /dev/fuse (hidden in a private mount namespace): one clear line.
: >"$T/nofuse"
unshare -m bash -c "mount --bind '$T/nofuse' /dev/fuse && exec '$PLUGFS_BIN' -c '$CFG' mount" \
	>"$T/err.out" 2>&1
rc=$?
check "no /dev/fuse: exit non-zero" test "$rc" -ne 0
check "no /dev/fuse: the message says so" grep -q "/dev/fuse is missing" "$T/err.out"
check_eq "no /dev/fuse: one line" 1 "$(wc -l <"$T/err.out")"

# --mountpoint overrides the config and missing parents are created.
"$PLUGFS_BIN" -c "$CFG" mount --mountpoint "$T/deep/er/mnt" >>"$DAEMON_LOG" 2>&1 &
pid=$!
_PIDS+=("$pid")
_MOUNTS+=("$T/deep/er/mnt")
wait_until --pid "$pid" 60 "the daemon serves $T/deep/er/mnt" mount_answers "$T/deep/er/mnt"
# (csi-node/pending is there: the SIGTERM test above registered it.)
check_eq "--mountpoint: parents created 0755, tree served" "755 755 ebs" \
	"$(stat -c %a "$T/deep") $(stat -c %a "$T/deep/er") $(ls "$T/deep/er/mnt/plugins/csi-node" | grep -vx pending)"
kill -TERM "$pid"
wait "$pid"
check_eq "--mountpoint daemon exits 0" 0 $?
finish
