#!/usr/bin/env bash
# A plugin that daemonises ([probe] mode = connect, interval 1, failures
# 2): its parent calls listen(), forks the server and exits, and the
# parent's pid number is then taken by an unrelated process (take_pid.py).
# SO_PEERCRED of every connection still names that pid.  kill -9 of the
# server (its socket file stays: connects are refused) must fail over to
# the older allocation by the rounds; before, the pidfd watched the
# unrelated process, the verifying probe named the same stale pid, and the
# rounds skipped the registration: no failover after 30 s, health `alive,
# failures 0'.  The listener's identity now comes from SO_PEERPIDFD: an
# exited listener names no pid, and the probes decide.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
write_config "[probe]" "mode = connect" "interval = 1" "timeout = 0.5" "failures = 2"
start_daemon
E=$MNT/plugins/csi-node/p

demo a1
reg csi-node p a1
mkdir -p "$T/alloc/a2"
mkfifo "$T/release"
python3 "$PLUGFS_SOURCE_DIR/tests/integration/forked_listener.py" "$(sock_of a2)" a2 \
	"$T/a2.server" "$T/release" >>"$T/forked.log" 2>&1 &
parent=$!
_PIDS+=("$parent")
wait_until --pid "$parent" 10 "the plugin forked its server" test -s "$T/a2.server" || exit 1
server=$(cat "$T/a2.server")
_PIDS+=("$server")
echo go >"$T/release"
wait "$parent" 2>/dev/null
python3 "$PLUGFS_SOURCE_DIR/tests/integration/take_pid.py" "$parent" "$T/taker" \
	>>"$T/forked.log" 2>&1 &
_PIDS+=($!)
wait_until 30 "take_pid.py tried pid $parent" test -s "$T/taker" || exit 1
taker=$(cat "$T/taker")
[ "$taker" = none ] || _PIDS+=("$taker")
echo "# the parent's pid $parent is now held by: $taker ($(cat "/proc/$parent/comm" 2>/dev/null))"
check_eq "an unrelated process holds the listener's pid" "$parent" "$taker"

reg csi-node p a2
expect_active "the daemonised plugin, newer, is active" csi-node p a2
check_eq "a2 is alive" alive "$(health_of a2)"

t0=$(ms)
kill -KILL "$server"
# A round's failure every 1 s, two of them: about 2 s measured (1.3 to 2.1
# s); 30 s is over ten times that.
wait_until 30 "a2's server killed: csi.sock leads to a1" link_is a1
echo "# failover after the kill of the server: $(($(ms) - t0)) ms"
expect_active "a1 after the daemonised plugin's server died" csi-node p a1
check_eq "a2 is dead" dead "$(health_of a2)"
stop_daemon
check_daemon_log
finish
