#!/usr/bin/env bash
# `plugfs wait --timeout S` also waits for the daemon within S: started before
# plugfs (a hook that runs while plugfs starts), it returns 0 once the daemon
# is up and the plugin registered; with no daemon, or a stale socket, it exits
# 3 after S saying so; without --timeout it exits 3 at once.  No figure is
# judged: a wait is at least its timeout (time never runs fast), a hang is
# caught by a 30 s guard, and whether the daemon wait counts against S is
# told by the order of events (a wait that restarted S when the daemon came
# up would end S after that, not S after its own start).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
write_config
N=csi-node
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# No daemon, no socket: about the timeout, then exit 3 with why.
check "no control socket before the daemon starts" test ! -e "$CTL"
start=$(date +%s%N)
timeout 30 "$PLUGFS_BIN" -c "$CFG" wait $N early --timeout 1 >"$T/nod.out" 2>"$T/nod.err"
rc=$?
elapsed=$(ms_since "$start")
check_eq "wait --timeout 1 with no daemon exits 3 (not stopped by the 30 s guard)" 3 "$rc"
check "it tried for the whole timeout (${elapsed} ms)" test "$elapsed" -ge 900
check "it says no daemon came up within the timeout" \
	grep -q "^plugfs wait: no daemon came up within 1 s (--timeout)" "$T/nod.err"
check "and why the last try failed" grep -q "^plugfs wait: no plugfs daemon: $CTL does not exist" "$T/nod.err"
check "it printed nothing on stdout" test ! -s "$T/nod.out"

# Without --timeout: today's behaviour, exit 3 at once (one try).
timeout 30 "$PLUGFS_BIN" -c "$CFG" wait $N early >/dev/null 2>"$T/once.err"
check_eq "wait without --timeout and no daemon exits 3 (not stopped by the 30 s guard)" 3 $?
check "with the plain unreachable message" grep -q "^plugfs wait: no plugfs daemon: $CTL does not exist" "$T/once.err"
check "not the waiting one" bash -c "! grep -q 'came up' '$T/once.err'"

# A stale socket (nobody listens: connect is refused) is waited out the same.
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$CTL" ||
	die "cannot make a stale socket"
plugfs wait $N early --timeout 0.5 >/dev/null 2>"$T/stale.err"
check_eq "wait --timeout 0.5 on a stale socket exits 3" 3 $?
check "it says no daemon came up" grep -q "no daemon came up within 0.5 s" "$T/stale.err"
check "and that the socket is stale" grep -q "the socket is stale" "$T/stale.err"

# Started before the daemon (the stale socket still there): waits for it,
# then for the registration.
plugfs_bg wait $N early --timeout 30 >"$T/early.out" 2>"$T/early.err" &
wpid=$!
_PIDS+=("$wpid")
sleep 0.5
check "wait keeps trying while the daemon is not up" kill -0 $wpid
start_daemon
demo a0
wait_until 60 "the daemon counts the waiter" clients_at_least 2
check "wait is still waiting for the registration" kill -0 $wpid
reg $N early a0
wait $wpid
check_eq "wait started before the daemon exits 0 once it registered" 0 $?
check "it prints the active alloc" grep -q "^csi-node/early: active a0 " "$T/early.out"
check "and no error" test ! -s "$T/early.err"

# The time spent waiting for the daemon counts against --timeout: 4 s from
# its start, the daemon started 2 s later; had the daemon's start begun the
# 4 s anew, it would end after that start plus 4 s.  The gap between the
# two outcomes is the 2 s before the daemon's start: what the wait itself
# costs past its timeout (about 100 ms here) would have to reach that.
stop_daemon
start=$(date +%s%N)
plugfs_bg wait $N late --timeout 4 >/dev/null 2>"$T/late.err" &
wpid=$!
_PIDS+=("$wpid")
sleep 2
up=$(ms_since "$start")
start_daemon
wait $wpid
rc=$?
elapsed=$(ms_since "$start")
check_eq "wait for a plugin nobody registers exits 1 after its timeout" 1 "$rc"
check "it ended within 4 s of its start, not of the daemon's (${up} ms later): ${elapsed} ms" \
	test "$elapsed" -lt $((up + 4000))
check "it waited its whole timeout (${elapsed} ms)" test "$elapsed" -ge 3900
check "it timed out on the plugin" grep -q "csi-node/late has no active registration: timed out" "$T/late.err"
stop_daemon
check_daemon_log
finish
