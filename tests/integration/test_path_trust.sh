#!/usr/bin/env bash
# Paths another user could change are not trusted (docs/design.md, "Path
# trust"): user nobody plants symlinks and directories; the daemon refuses
# each start naming the directory and why, and creates or writes nothing
# where they point.  The CLI refuses a control socket that is not root's
# before it sends a byte.
. "$(dirname "$0")/lib.sh"
require_fuse
SYS_PY=/usr/bin/python3
[ -x "$SYS_PY" ] || die "$SYS_PY is missing"
NOBODY=$(id -u nobody)

ROOTONLY=$T/rootonly
mkdir -m 0700 "$ROOTONLY"
WW=$T/ww # world-writable, no sticky bit
mkdir -m 0777 "$WW"
STICKY=$T/sticky # like /tmp
mkdir -m 1777 "$STICKY"
write_config
# set_key KEY VALUE: rewrites the first `KEY = ...' line of the config.
set_key() { sed -i "0,/^$1 = .*/s||$1 = $2|" "$CFG"; }
# start_refused: `plugfs mount', expected to exit at once (output in
# $T/refused.log); one that comes up instead is stopped after 20 s.  Returns
# its exit status (143 when it had to be stopped).
start_refused() {
	local pid
	"$PLUGFS_BIN" -c "$CFG" mount >"$T/refused.log" 2>&1 &
	pid=$!
	_PIDS+=("$pid")
	if ! wait_until 20 "plugfs mount (pid $pid) refuses to start" _gone "$pid"; then
		kill -TERM "$pid"
	fi
	wait "$pid"
}
# refused DESC PATTERN: plugfs mount exits 1 and says PATTERN; nothing mounted.
refused() {
	start_refused
	check_eq "$1: plugfs mount exits 1" 1 "$?"
	check "$1: it says why" grep -q -- "$2" "$T/refused.log" ||
		sed 's/^/# /' "$T/refused.log"
	check "$1: nothing is mounted" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
}

# A symlink at the state path, planted in a world-writable directory.
as_nobody ln -s "$ROOTONLY/victim.db" "$WW/state.db"
set_key path "$WW/state.db"
refused "state symlink in a world-writable directory" \
	"state.path \`$WW/state.db': directory \`$WW' is writable by others (mode 0777) without the sticky bit"
check "no database was created at the symlink's target" test ! -e "$ROOTONLY/victim.db"

# The same in a sticky directory: the symlink itself is refused.
as_nobody ln -s "$ROOTONLY/victim.db" "$STICKY/state.db"
set_key path "$STICKY/state.db"
refused "state symlink in a sticky directory" "state.path \`$STICKY/state.db': is a symlink"
check "no database was created at the symlink's target" test ! -e "$ROOTONLY/victim.db"

# A state directory nobody made first.
as_nobody mkdir "$STICKY/statedir"
set_key path "$STICKY/statedir/state.db"
refused "a state directory owned by nobody" \
	"directory \`$STICKY/statedir' is owned by uid $NOBODY, not root"
check "no state file in it" test ! -e "$STICKY/statedir/state.db"

# A FIFO at the state path: named for what it is (SQLite would block on it
# or answer "disk I/O error").
mkfifo "$T/fifo.db"
set_key path "$T/fifo.db"
refused "a FIFO at the state path" "state.path \`$T/fifo.db': is a FIFO, not a regular file"

# A mountpoint whose parent is nobody's, a symlink in it to a root directory.
set_key path "$T/state.db"
as_nobody mkdir "$STICKY/mp"
as_nobody ln -s "$ROOTONLY" "$STICKY/mp/mnt"
set_key mountpoint "$STICKY/mp/mnt"
start_refused
check_eq "mountpoint under nobody's directory: plugfs mount exits 1" 1 "$?"
check "it names the directory" grep -q "mount.mountpoint \`$STICKY/mp/mnt': directory \`$STICKY/mp' is owned by uid $NOBODY" "$T/refused.log"
check "nothing is mounted on the symlink's target" bash -c "! grep -qs ' $ROOTONLY fuse' /proc/mounts"
set_key mountpoint "$MNT"

# The control socket in a world-writable directory without the sticky bit.
set_key socket "$WW/ctl.sock"
refused "control socket in a world-writable directory" \
	"control.socket \`$WW/ctl.sock': directory \`$WW' is writable by others"
set_key socket "$CTL"

# The CLI and a socket nobody bound: refused before anything is sent.
cat >"$T/fake.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(8); s.settimeout(5)
got = b""
try:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        got = c.recv(65536)
        c.sendall(b'{"ok":true,"status":"forged"}\n')
    except OSError:
        pass
except OSError:
    pass
print("received=%d" % len(got))
PY
as_nobody "$SYS_PY" "$T/fake.py" "$STICKY/ctl.sock" >"$T/fake.out" 2>&1 &
FAKE=$!
_PIDS+=("$FAKE")
wait_until 10 "nobody's socket is bound" test -S "$STICKY/ctl.sock"
sed -i "0,/^socket = .*/s||socket = $STICKY/ctl.sock|" "$CFG"
plugfs status >"$T/cli.out" 2>"$T/cli.err"
check_eq "the CLI refuses nobody's control socket (exit 3)" 3 $?
check "it says whose it is" grep -q "control.socket \`$STICKY/ctl.sock': owned by uid $NOBODY, not root" "$T/cli.err"
check "it printed no forged answer" bash -c "! grep -q forged '$T/cli.out'"
wait "$FAKE"
check_eq "nobody's server received nothing" "received=0" "$(cat "$T/fake.out")"

# The trusted layout still starts.
sed -i "0,/^socket = .*/s||socket = $CTL|" "$CFG"
start_daemon
check "a trusted layout serves" test -d "$MNT/plugins/csi-node"
stop_daemon
finish
