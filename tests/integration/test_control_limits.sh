#!/usr/bin/env bash
# The [control] limits through a real daemon (docs/protocol.md, "Limits"):
# with max_clients = 2 two watchers (never idle, never closed to make room)
# are kept, a third connection gets one `unavailable` line and is closed,
# and a freed slot serves `plugfs list` again; with idle_timeout = 1 an idle connection gets an `unavailable` line
# and is closed, while a watcher and a pending wait are never idle.  Neither
# limit changes the registry, and the mount keeps being served throughout.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse

N=csi-node
STATUS='{"op":"status","id":"s"}'
WATCH='{"op":"watch","id":"w"}'

# holder NAME: a raw client that asks for status once, then watches and
# stays connected without a byte more (ctlraw --hold); answers go to
# $T/NAME.out.
# Waits until the daemon answered, so the client is accepted and counted.
# Sets HOLDER_PID.
holder() {
	printf '%s\n' "$STATUS" "$WATCH" | "$CTLRAW" --hold "$CTL" 120 >"$T/$1.out" 2>"$T/$1.err" &
	HOLDER_PID=$!
	_PIDS+=("$HOLDER_PID")
	wait_until --pid "$HOLDER_PID" 30 "the daemon answered $1's status and watch requests" \
		grep -q '"id":"w"' "$T/$1.out" || exit 1
}

# expect_unavailable DESC FILE REGEX: FILE's last line is an `unavailable`
# error whose message matches REGEX.
expect_unavailable() {
	local line
	line=$(tail -n 1 "$2")
	check_eq "$1: ok is false" false "$(jq -r .ok <<<"$line" 2>/dev/null)"
	check_eq "$1: code is unavailable" unavailable "$(jq -r .error.code <<<"$line" 2>/dev/null)"
	check "$1: the message says why ($3)" grep -Eq "$3" <<<"$(jq -r .error.message <<<"$line" 2>/dev/null)"
}

# mount_serves DESC: the registered plugin answers through the mount.
mount_serves() {
	check_eq "$1: csi.sock points at a0's socket" "$(sock_of a0)" "$(readlink "$MNT/plugins/$N/ebs/csi.sock")"
	check_eq "$1: connecting through the mount reaches a0" a0 "$(demo_connect "$MNT/plugins/$N/ebs/csi.sock" 2>&1)"
}

# ---------------------------------------------------------------- max_clients
# write_config already has a [control] section; sections may repeat.
write_config "[control]" "max_clients = 2"
start_daemon
demo a0
reg $N ebs a0
before=$(plugfs list --json | tree_of_json)
check "list shows the registration" grep -q "^$N ebs active=$(sock_of a0) a0=" <<<"$before"

holder h1
h1=$HOLDER_PID
holder h2
h2=$HOLDER_PID
check_eq "the second holder's status counts 2 clients" 2 "$(head -n 1 "$T/h2.out" | jq -r .clients)"

# A third connection: one line, then the daemon closes it (ctlraw exits 0
# only when the daemon closed the connection, within 10 s).  It sends
# nothing: a request the daemon never reads turns its close into a reset.
"$CTLRAW" --hold "$CTL" 10 </dev/null >"$T/third.out" 2>"$T/third.err"
check_eq "the third connection is closed by the daemon" 0 $?
check_eq "the third connection gets exactly one line" 1 "$(wc -l <"$T/third.out")"
expect_unavailable "third connection" "$T/third.out" 'too many clients.*control\.max_clients'

# The CLI against a full daemon shows the daemon's reason and exits 1, also
# when the daemon closed the connection before taking the request (the
# refusal line is read after the broken pipe).
plugfs list >"$T/list-full.out" 2>"$T/list-full.err"
check_eq "plugfs list while the daemon is full exits 1" 1 $?
check "plugfs list prints the daemon's unavailable line" \
	grep -q 'plugfs list: too many clients' "$T/list-full.err"
check "plugfs list prints nothing on stdout" test ! -s "$T/list-full.out"

check "the first holder is still connected" kill -0 "$h1"
check "the second holder is still connected" kill -0 "$h2"
check_eq "the first holder got nothing but its two answers" 2 "$(wc -l <"$T/h1.out")"
mount_serves "while full"

# Free a slot: the daemon notices the close on its own; poll until list works.
kill -TERM "$h1"
wait "$h1" 2>/dev/null
list_into() { plugfs list --json >"$1"; }
wait_until 30 "a freed slot serves plugfs list" list_into "$T/list-free.json"
check "plugfs list works again once a slot is free" test $? -eq 0
check_eq "the registry is unchanged" "$before" "$(tree_of_json <"$T/list-free.json")"
check "the second holder is still connected" kill -0 "$h2"
mount_serves "after a slot was freed"
kill -TERM "$h2"
wait "$h2" 2>/dev/null
stop_daemon

# ---------------------------------------------------------------- idle_timeout
write_config "[control]" "idle_timeout = 1"
start_daemon
before=$(plugfs list --json | tree_of_json)
check "the registration survived the restart" grep -q "^$N ebs active=" <<<"$before"

plugfs_bg watch --json >"$T/watch.out" 2>"$T/watch.err" &
wpid=$!
_PIDS+=("$wpid")
wait_until 30 "the daemon counts the watcher" watchers_are 1 || exit 1

# An idle client that never sent a byte: closed by the daemon within 30 s
# (ctlraw fails when the connection stays open longer), not before 1 s.
start=$(date +%s%N)
"$CTLRAW" --hold "$CTL" 30 </dev/null >"$T/idle.out" 2>"$T/idle.err"
rc=$?
elapsed=$((($(date +%s%N) - start) / 1000000))
check_eq "an idle connection is closed by the daemon" 0 "$rc"
check "it was kept for the timeout first (${elapsed} ms)" test "$elapsed" -ge 900
check_eq "the idle connection gets exactly one line" 1 "$(wc -l <"$T/idle.out")"
expect_unavailable "idle connection" "$T/idle.out" '1 s without activity.*control\.idle_timeout'

# A client that asked once and then went quiet: its answer, then the close.
printf '%s\n' "$STATUS" | "$CTLRAW" --hold "$CTL" 30 >"$T/idle2.out" 2>"$T/idle2.err"
check_eq "a client quiet after a request is closed by the daemon" 0 $?
check_eq "it gets its answer and one more line" 2 "$(wc -l <"$T/idle2.out")"
check_eq "its request was answered first" true "$(head -n 1 "$T/idle2.out" | jq -r .ok)"
expect_unavailable "quiet client" "$T/idle2.out" 'without activity.*control\.idle_timeout'

# A pending wait is never idle: it ends with its own timeout (3 s > 1 s).
plugfs wait $N late --timeout 3 >"$T/wait.out" 2>"$T/wait.err"
rc=$?
check_eq "a wait longer than idle_timeout ends with its own timeout (exit 1)" 1 "$rc"
check "the wait says timed out, not unavailable" grep -q 'timed out' "$T/wait.err"
check "the wait was not closed as idle" bash -c "! grep -q 'idle_timeout' '$T/wait.err'"

# The watcher has been connected well past the timeout by now.
check "the watcher is still running" kill -0 "$wpid"
check_eq "the daemon still counts the watcher" 1 "$(plugfs status --json | jq .watchers)"
check_eq "the watcher saw no event and no error" "" "$(cat "$T/watch.out" "$T/watch.err")"
check_eq "the registry is unchanged" "$before" "$(plugfs list --json | tree_of_json)"
mount_serves "with idle_timeout"

# And it still works: a registration reaches it.
demo a1
reg $N other a1
wait_until 30 "the watcher printed the registration of other" grep -Eq \
	'"event":"registered".*"name":"other"|"name":"other".*"event":"registered"' "$T/watch.out"
check "the watcher gets the next event" test $? -eq 0
kill -TERM "$wpid"
wait "$wpid" 2>/dev/null
stop_daemon
finish
