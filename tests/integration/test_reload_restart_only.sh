#!/usr/bin/env bash
# plugfs reload after a change only a restart applies, the control socket's
# path among them: the reload reaches the running daemon (its process id,
# --pid or systemd's $MAINPID in ExecReload=, names the socket it listens
# on: /proc/PID/fd), exits 0, names every change it cannot apply on
# standard error, and the daemon goes on serving with its running values
# (the old socket, mountpoint and state file).  Before, a new [control]
# socket made the reload dial the new path and exit 3 ("no plugfs
# daemon"): `systemctl reload' failed and nothing was applied or named.
# The process must be plugfs, listening on the socket it holds: a root
# process that is not is refused before anything is sent; a daemon of the
# binary an upgrade replaced is asked.
. "$(dirname "$0")/lib.sh"
require_fuse
write_config "[log]" "level = info"
start_daemon
pid=$DAEMON_PID
cp "$CFG" "$T/running.ini"
start_demo_plugin "$T/run/a0/csi.sock" a0
plugfs register --type csi-node --name rs --alloc a0 --socket "$T/run/a0/csi.sock" >/dev/null ||
	die "register"

check_eq "the unit's ExecReload= passes the main pid" "/usr/bin/plugfs reload --pid \$MAINPID" \
	"$(unit_setting ExecReload)"

# serving: the daemon goes on with its running values.
serving() {
	check "$1: the running socket answers" \
		bash -c "\"$PLUGFS_BIN\" -c \"$T/running.ini\" status >/dev/null"
	check_eq "$1: the running mount serves a0" a0 \
		"$(demo_connect "$MNT/plugins/csi-node/rs/csi.sock" 2>&1)"
	check "$1: the daemon is the same process" kill -0 "$pid"
}

# reload_names WHAT KEY...: `plugfs reload' as ExecReload= runs it (with
# $MAINPID), then with --pid: exit 0, each KEY named on stderr.
reload_names() {
	local what=$1 rc k how
	shift
	for how in mainpid pid; do
		if [ "$how" = mainpid ]; then
			MAINPID=$pid "$PLUGFS_BIN" -c "$CFG" reload >"$T/out" 2>"$T/err"
		else
			"$PLUGFS_BIN" -c "$CFG" reload --pid "$pid" >"$T/out" 2>"$T/err"
		fi
		rc=$?
		echo "# $what ($how): exit $rc: $(tr '\n' ' ' <"$T/err")"
		check_eq "$what ($how): exit 0" 0 "$rc"
		for k in "$@"; do
			check "$what ($how): $k is named on stderr as restart-only" \
				bash -c "grep 'applied only by a restart' '$T/err' | grep -qF '$k'"
		done
		check "$what ($how): it says a restart applies it" grep -q "restart" "$T/err"
	done
}

# --- the control socket's path alone ---
sed -i "s|^socket = .*|socket = $T/ctl2.sock|" "$CFG"
"$PLUGFS_BIN" -c "$CFG" reload >"$T/out" 2>"$T/err"
rc=$?
echo "# a new [control] socket, no pid: exit $rc: $(tr '\n' ' ' <"$T/err")"
check_eq "a new [control] socket without a pid: no daemon there (exit 3)" 3 "$rc"
reload_names "a new [control] socket" "[control] socket"
check "the new socket path was not created" test ! -e "$T/ctl2.sock"
serving "after a new [control] socket"

# --- the socket, the mountpoint and the state path together ---
sed -i "s|^mountpoint = .*|mountpoint = $T/mnt2|; s|^path = .*|path = $T/state2.db|" "$CFG"
reload_names "a new socket, mountpoint and state path" "[control] socket" "[mount] mountpoint" \
	"[state] path"
check "the new state file was not created" test ! -e "$T/state2.db"
check "nothing is mounted at the new mountpoint" bash -c "! grep -qs ' $T/mnt2 fuse' /proc/mounts"
serving "after a new socket, mountpoint and state path"

# --- the other settings only a restart applies (socket back as it runs) ---
cp "$T/running.ini" "$CFG"
sed -i 's/^synchronous = .*/synchronous = full/; s/^allow_other = .*/allow_other = false/; s/^socket_name = .*/socket_name = plugin.sock/' "$CFG"
sed -i "s|^socket = .*|&\nmax_clients = 32\nidle_timeout = 60|" "$CFG"
printf '[probe]\ntimeout = 3\n' >>"$CFG"
reload_names "other restart-only settings" "[state] synchronous" "[mount] allow_other" \
	"[mount] socket_name" "[control] max_clients" "[control] idle_timeout" "[probe] timeout"
"$PLUGFS_BIN" -c "$CFG" reload >"$T/out" 2>"$T/err"
check_eq "other restart-only settings without a pid: exit 0 (the socket did not move)" 0 $?
serving "after the other restart-only settings"

# refused_pid DESCRIPTION PID: `reload --pid PID' exits 3 and says PID is not
# plugfs (its output in $T/out and $T/err).
refused_pid() {
	local rc
	"$PLUGFS_BIN" -c "$CFG" reload --pid "$2" >"$T/out" 2>"$T/err"
	rc=$?
	echo "# $1: exit $rc: $(cat "$T/out" "$T/err")"
	check_eq "$1: exit 3" 3 "$rc"
	check "$1: the message says the process is not plugfs" grep -q "process $2 is not plugfs" "$T/err"
}
# A pid that is no plugfs daemon (a shell): unreachable, said so.
refused_pid "--pid of a process without a control socket (a shell)" "$$"

# A root process that is no plugfs: it listens on a socket in a root-owned
# directory and holds its file O_PATH, as the daemon does, answering every
# line as a daemon would.  Refused before a byte is sent (before, the CLI
# sent it {"op":"reload"}, printed "reloaded /etc/anything-the-listener-says"
# and exited 0 while the daemon reloaded nothing).
mkdir -m 0755 "$T/imp"
python3 -c '
import os, socket, sys
d = sys.argv[1]
s = socket.socket(socket.AF_UNIX)
s.bind(d + "/ctl.sock")
s.listen(8)
held = os.open(d + "/ctl.sock", os.O_PATH)
open(d + "/ready", "w").close()
while True:
    c, _ = s.accept()
    line = c.makefile("rb").readline()
    with open(d + "/got", "ab") as f:
        f.write(line)
    c.sendall(b"{\"ok\":true,\"config\":\"/etc/anything-the-listener-says\"}\n")
    c.close()
' "$T/imp" &
imp=$!
_PIDS+=("$imp")
wait_until --pid "$imp" 30 "the impostor listens" test -e "$T/imp/ready" || exit 1
refused_pid "--pid of a root process that is not plugfs" "$imp"
check "nothing was sent to it" test ! -s "$T/imp/got"
check "nothing was printed as reloaded" test ! -s "$T/out"
stop_daemon

# An upgrade: the daemon runs a binary the package then replaces at its path
# (its /proc/PID/exe reads "PATH (deleted)"); the CLI now at that path asks
# it.  A copy elsewhere is another program; after a re-exec (SIGUSR2) the
# daemon runs the new file.
cp "$T/running.ini" "$CFG"
mkdir "$T/bin"
cp "$PLUGFS_BIN" "$T/bin/plugfs"
build_bin=$PLUGFS_BIN
PLUGFS_BIN=$T/bin/plugfs
start_daemon
PLUGFS_BIN=$build_bin
cp "$PLUGFS_BIN" "$T/bin/plugfs.new" && mv "$T/bin/plugfs.new" "$T/bin/plugfs"
upgraded() {
	"$T/bin/plugfs" -c "$CFG" reload --pid "$DAEMON_PID" >"$T/out" 2>"$T/err"
	rc=$?
	echo "# $1: exit $rc: $(cat "$T/out" "$T/err")"
	check_eq "$1: exit 0" 0 "$rc"
}
upgraded "the CLI after an upgrade asks the daemon of the binary it replaced"
refused_pid "the daemon is not the program of a copy at another path" "$DAEMON_PID"
kill -USR2 "$DAEMON_PID"
wait_until --pid "$DAEMON_PID" 30 "the re-exec resumed the mount" resumed_ge 1 || exit 1
upgraded "the CLI after an upgrade asks the daemon re-executed from it"
stop_daemon
finish
