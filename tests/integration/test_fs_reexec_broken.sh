#!/usr/bin/env bash
# An upgrade with a broken binary never costs the mount (docs/design.md,
# Lifecycle, "SIGUSR2").  The daemon runs from a copy of plugfs in $T/bin,
# which the test replaces the way an upgrade does (a new file renamed over
# it) with a 0-byte executable, a script that fails, and a good binary held
# open for writing (ETXTBSY); then SIGUSR2 each time.  The daemon warns
# that the binary on disk does not run and re-executes the running program
# instead: same PID, the mount resumed, a consumer looping connect() through
# a bind mount never fails.  Then a new program whose start fails (the test
# fault PLUGFS_FAULT_TAKEOVER) hands the mount back to the one that handed it
# over, and with no program to execute at all (PLUGFS_FAULT_REEXEC) the
# mount is resumed in the same process.  Prints the consumer's figures.
. "$(dirname "$0")/lib.sh"
require_fuse
REAL=$PLUGFS_BIN
mkdir -p "$T/bin"
install -m 0755 "$REAL" "$T/bin/plugfs"
BIN=$T/bin/plugfs
# The daemon runs $BIN; the CLI stays the build's.
daemon_from_bin() { PLUGFS_BIN=$BIN start_daemon "$@"; }
outlive_setup rx daemon_from_bin

# replace_with KIND: what an upgrade leaves at $BIN (renamed over it, so the
# running program's file is the old, deleted one).
replace_with() {
	case $1 in
	empty) : >"$BIN.new" ;;
	script) printf '#!/bin/sh\necho "upgrade: broken" >&2\nexit 1\n' >"$BIN.new" ;;
	busy) cp "$REAL" "$BIN.new" ;;
	esac
	chmod 0755 "$BIN.new"
	mv -f "$BIN.new" "$BIN"
}
# reexec_keeps_mount WHAT WARNING: SIGUSR2; the mount is resumed by the same
# process, the consumer goes on, and the log says WARNING.
reexec_keeps_mount() {
	local n
	n=$(resumed)
	kill -USR2 "$pid"
	wait_until --pid "$pid" 30 "the mount is resumed after SIGUSR2 with $1" resumed_ge $((n + 1)) ||
		exit 1
	consumer_moves_on "after SIGUSR2 with $1"
	check "with $1: the daemon kept its PID" kill -0 "$pid"
	check "with $1: it says why, at warning level" grep -q -- "$2" "$DAEMON_LOG"
	check "with $1: the mount answers" mount_answers "$MNT"
	check "with $1: the control socket answers" bash -c "\"$REAL\" -c \"$CFG\" status >/dev/null"
}

replace_with empty
reexec_keeps_mount "a 0-byte binary" \
	"plugfs warn: re-exec: the binary on disk $BIN does not run (cannot execute it: Exec format error); re-executing the running program"
replace_with script
reexec_keeps_mount "a script that fails" \
	"plugfs warn: re-exec: the binary on disk $BIN does not run (\`$BIN version' exited with status 1); re-executing the running program"
replace_with busy
exec 9>>"$BIN"
reexec_keeps_mount "a binary held open for writing" \
	"plugfs warn: re-exec: the binary on disk $BIN does not run (cannot execute it: Text file busy); re-executing the running program"
exec 9>&-
# The same binary, free again: the upgrade goes ahead.
n=$(grep -c "re-executing $BIN (pid $pid)" "$DAEMON_LOG")
reexec_keeps_mount "a good binary" "re-executing $BIN (pid $pid), keeping the mount"
check "with a good binary: the binary on disk was executed" \
	test "$(grep -c "re-executing $BIN (pid $pid)" "$DAEMON_LOG")" -gt "$n"
# A registration goes on as ever.
plugfs register --type csi-node --name rx --alloc a1 --socket "$T/run/a1/csi.sock" >/dev/null
check_eq "a registration after the broken upgrades succeeds" 0 $?
check_eq "it is served through the bind mount" a1 "$(demo_connect "$T/consumer/csi.sock" 2>&1)"
stop_consumer
echo "# broken binaries: 3 and a good one, connects tried: $tried, failed: $failed, longest stall: ${longest} ms"
check "the consumer connected many times" test "$tried" -ge 20
check_eq "no connect through the bind mount failed" 0 "$failed"
check_eq "one guard process is left" 1 "$(pgrep -x plugfs-guard -P "$pid" | wc -l)"
stop_daemon

# A new program that executes but cannot take the mount over (its start
# fails) gives it back to the program that handed it over.
PLUGFS_FAULT_TAKEOVER=fail daemon_from_bin
pid=$DAEMON_PID
n=$(resumed)
kill -USR2 "$pid"
wait_until --pid "$pid" 30 "the mount is handed back and resumed" resumed_ge $((n + 1)) || exit 1
check "a failed takeover: logged as an error" \
	grep -q "plugfs error: cannot take over the mount: test fault PLUGFS_FAULT_TAKEOVER" "$DAEMON_LOG"
check "a failed takeover: the mount is handed back" \
	grep -q "plugfs warn: handing the mount back to the program that handed it over (pid $pid)" "$DAEMON_LOG"
check "a failed takeover: the daemon kept its PID" kill -0 "$pid"
check "a failed takeover: the mount answers" mount_answers "$MNT"
check_eq "a failed takeover: the registration is served" a1 \
	"$(demo_connect "$MNT/plugins/csi-node/rx/csi.sock" 2>&1)"
stop_daemon

# Nothing can be executed at all: the mount is resumed in this process.
PLUGFS_FAULT_REEXEC=fail daemon_from_bin
pid=$DAEMON_PID
n=$(resumed)
kill -USR2 "$pid"
wait_until --pid "$pid" 30 "the mount is resumed in the same process" resumed_ge $((n + 1)) || exit 1
check "no exec: it says so at warning level" \
	grep -q "plugfs warn: cannot re-execute the running program either: Exec format error; resuming the mount in this process" "$DAEMON_LOG"
check "no exec: the daemon kept its PID" kill -0 "$pid"
check "no exec: the mount answers" mount_answers "$MNT"
check_eq "no exec: the registration is served" a1 \
	"$(demo_connect "$MNT/plugins/csi-node/rx/csi.sock" 2>&1)"
plugfs deregister --type csi-node --name rx --alloc a1 >/dev/null
check_eq "no exec: the control socket takes changes" 0 $?
check_eq "no exec: one guard process" 1 "$(pgrep -x plugfs-guard -P "$pid" | wc -l)"
stop_daemon
check_daemon_log
finish
