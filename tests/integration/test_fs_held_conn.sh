#!/usr/bin/env bash
# A consumer's open connection to a plugin does not go through plugfs: once
# connect() through csi.sock returned, the connection is the plugin's
# socket's, so it goes on working while plugfs re-executes (SIGUSR2), is
# killed with SIGKILL, is started again, and stops (SIGTERM, unmounting).
# A `plugfs watch' (a client of the control socket) is not kept: it ends
# with exit 3 when the daemon re-executes.  What README.md's "Operating
# plugfs" says of open connections and watchers.
. "$(dirname "$0")/lib.sh"
require_fuse
ECHO=$PLUGFS_SOURCE_DIR/tests/integration/echo_conn.py
SOCK=$T/run/a1/csi.sock

python3 "$ECHO" serve "$SOCK" &
_PIDS+=("$!")
wait_until 10 "the echo plugin listens" test -S "$SOCK" || exit 1
write_config
start_daemon
plugfs register -q --type csi-node --name held --alloc a1 --socket "$SOCK" || die "register a1"

python3 "$ECHO" hold "$MNT/plugins/csi-node/held/csi.sock" "$T/hold" &
HOLD=$!
_PIDS+=("$HOLD")
# ok_of: exchanges answered so far; more_than N: more than N, unbroken.
ok_of() { sed -n 's/^ok=\([0-9]*\) .*/\1/p' "$T/hold" 2>/dev/null; }
more_than() { grep -q 'broken=0' "$T/hold" && [ "$(ok_of)" -gt "$1" ]; }
# answers DESCRIPTION N: within 10 s, 5 exchanges more than N, unbroken.
answers() { wait_until 10 "$1" more_than "$(($2 + 5))" && pass "$1"; }
wait_until 10 "the consumer exchanges lines through csi.sock" more_than 2 || exit 1
check "the consumer's connection is to a1's socket itself" grep -q "peer=$SOCK\$" "$T/hold"

plugfs watch >"$T/watch.out" 2>"$T/watch.err" &
WATCH=$!
_PIDS+=("$WATCH")
wait_until 10 "plugfs watch is subscribed" \
	bash -c "'$PLUGFS_BIN' -c '$CFG' status --json | grep -Eq '\"watchers\": *[1-9]'" || exit 1

# 1. SIGUSR2: the daemon re-executes in place.
n=$(ok_of)
kill -USR2 "$DAEMON_PID"
wait_until 20 "the daemon re-executed" grep -q "resumed the FUSE connection" "$DAEMON_LOG" || exit 1
answers "the held connection answers after the re-exec" "$n"
wait_until 10 "plugfs watch ended" _gone "$WATCH"
wait "$WATCH"
check_eq "plugfs watch exits 3 (unreachable) when the daemon re-executes" 3 $?

# 2. SIGKILL: the mount is left dead behind (no systemd to keep it).
n=$(ok_of)
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
answers "the held connection answers with the daemon killed" "$n"
check "a new connect() through the dead mount fails meanwhile" \
	bash -c "! '$PLUGFS_DEMO_PLUGIN' --connect '$MNT/plugins/csi-node/held/csi.sock' 2>/dev/null"

# 3. A new daemon: the registration is back (the state file), the held
# connection goes on.
n=$(ok_of)
start_daemon
check_eq "the registration survived the kill" "$SOCK" "$(readlink "$MNT/plugins/csi-node/held/csi.sock")"
answers "the held connection answers after the new start" "$n"

# 4. SIGTERM: the daemon stops and unmounts.
n=$(ok_of)
stop_daemon
answers "the held connection answers with plugfs stopped" "$n"
check "it is still the one connection, never broken" grep -q 'broken=0' "$T/hold"
echo "# $(cat "$T/hold")"
kill -TERM "$HOLD"
wait "$HOLD"
finish
