#!/usr/bin/env bash
# The control socket file: 0660 from the start, a live daemon's socket is
# never taken over, a stale one (the daemon was killed) is replaced, a file
# that is not a socket is never replaced, a killed start's private
# directory is removed by the next start, and a clean stop removes it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
write_config
start_daemon

check_eq "the control socket is a 0660 socket of root" "660 root socket" "$(stat -c '%a %U %F' "$CTL")"
check_eq "nothing else was left next to it" "ctl.sock" "$(cd "$T" && ls -d ctl.sock .plugfs-* 2>/dev/null | xargs)"

# A second daemon (another mountpoint, same control socket) must not take
# the live socket over.
mkdir -p "$T/mnt2"
mount_to_exit "$T/second.log" --mountpoint "$T/mnt2"
check "a second daemon on a live control socket fails to start" test $? -ne 0
check "it says a daemon is answering there" grep -q "a daemon is answering on $CTL" "$T/second.log"
check "it left no mount behind" bash -c "! grep -qs ' $T/mnt2 fuse' /proc/mounts"
plugfs status >/dev/null
check_eq "the first daemon still serves" 0 $?

# Killed without a chance to clean up: the socket file stays behind, stale.
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
check "a killed daemon leaves its socket file" test -S "$CTL"
plugfs status >/dev/null 2>"$T/err"
check_eq "the stale socket is unreachable (exit 3)" 3 $?
# Private directories of starts killed early (mkdtemp's, 0700): the next
# start removes those empty or holding only the socket, and nothing else.
leftover() { mkdir -m 0700 "$T/$1" && touch -d '1 minute ago' "$T/$1"; }
leftover .plugfs-Empty1
leftover .plugfs-Sock01
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$T/.plugfs-Sock01/s"
touch -d '1 minute ago' "$T/.plugfs-Sock01"
leftover .plugfs-Other1
echo keep >"$T/.plugfs-Other1/s"
touch -d '1 minute ago' "$T/.plugfs-Other1"
leftover .plugfs-Wide01
chmod 0755 "$T/.plugfs-Wide01"
mkdir -m 0700 "$T/.plugfs-Young1"
leftover .plugfs-notours
leftover target
ln -s target "$T/.plugfs-Link01"
start_daemon
check "a leftover empty private directory is removed" test ! -e "$T/.plugfs-Empty1"
check "a leftover private directory with only its socket is removed" test ! -e "$T/.plugfs-Sock01"
check "the removal is logged" grep -q "removed $T/.plugfs-Sock01, left by a start" "$DAEMON_LOG"
check_eq "a directory holding something else, one not 0700, one just made, another name and a symlink stay" \
	".plugfs-Link01 .plugfs-Other1 .plugfs-Wide01 .plugfs-Young1 .plugfs-notours" \
	"$(cd "$T" && echo .plugfs-*)"
check_eq "what the kept directory holds is intact" keep "$(cat "$T/.plugfs-Other1/s")"
plugfs status >/dev/null
check_eq "a new daemon replaced the stale socket" 0 $?
check_eq "the new socket is 0660 too" 660 "$(stat -c '%a' "$CTL")"

# A clean stop removes the socket.
stop_daemon
check "a clean stop removes the socket" test ! -e "$CTL"

# A regular file at the path is never replaced.
echo precious >"$CTL"
mount_to_exit "$T/file.log"
check "a daemon does not start over a regular file" test $? -ne 0
check "it says the path is not a socket" grep -q "$CTL exists and is not a socket; refusing to replace it" "$T/file.log"
check_eq "the file is untouched" precious "$(cat "$CTL")"
check "no mount is left" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
rm -f "$CTL"
finish
