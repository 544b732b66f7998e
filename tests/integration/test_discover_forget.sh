#!/usr/bin/env bash
# forget_after: a discovered registration dead that long is deregistered,
# not before; one that answers again before its deadline is kept.  A
# plugin killed with -9 leaves its socket behind, dead (its listener's
# pidfd says so at once); a plugin stopped (SIGSTOP) keeps its socket and
# its process but no longer answers GetPluginInfo ([probe] mode csi), and
# answers again on SIGCONT.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
. "$(dirname "$0")/csi_lib.sh"
require_fuse
. "$(dirname "$0")/discover_lib.sh"
FORGET=5
write_config "[discover.t]" "root = $ROOT" "forget_after = $FORGET" \
	"[probe]" "mode = csi" "interval = 0.2" "failures = 2" "timeout = 1"
start_daemon
# health TYPE NAME ALLOC: that registration's health, "" when not registered.
health() { plugfs show "$1" "$2" --json 2>/dev/null | jq -r --arg a "$3" '.registrations[]? | select(.alloc == $a) | .health.state'; }
health_is() { [ "$(health csi-node "$1" "$2")" = "$3" ]; }

start_plugin k1 node kill.example.com
start_plugin s1 node stop.example.com
wait_until 20 "kill.example.com is served from k1" served csi-node kill.example.com k1 || exit 1
wait_until 20 "stop.example.com is served from s1" served csi-node stop.example.com s1 || exit 1
wait_until 20 "k1 is alive" health_is kill.example.com k1 alive || exit 1
wait_until 20 "s1 is alive" health_is stop.example.com s1 alive || exit 1

# Stopped: dead, then answering again before its deadline: kept.  Its
# deadline runs while k1's part below goes on: no wait of its own.
t0=$(now_ms)
kill -STOP "$P_s1"
wait_until 20 "s1 is dead while stopped" health_is stop.example.com s1 dead || {
	kill -CONT "$P_s1"
	exit 1
}
s1_dead=$(now_ms)
kill -CONT "$P_s1"
echo "# s1 dead $((s1_dead - t0)) ms after SIGSTOP, continued at once"
wait_until 20 "s1 answers again" health_is stop.example.com s1 alive || exit 1

# Killed with -9: its socket stays, dead; deregistered after forget_after.
t0=$(now_ms)
kill -9 "$P_k1"
wait "$P_k1" 2>/dev/null
check "k1's socket is left behind" test -S "$ROOT/k1/csi.sock"
wait_until 20 "k1 is dead" health_is kill.example.com k1 dead || exit 1
echo "# k1 dead $(($(now_ms) - t0)) ms after kill -9"
# The deadline is at least forget_after - 1 s after the death (the time of
# death is kept in whole seconds): look 1.5 s after it was seen dead (a
# wait inside the forget_after one below, which it does not lengthen).
sleep 1.5
check_eq "k1 is still registered 1.5 s after its death (forget_after $FORGET)" dead \
	"$(health csi-node kill.example.com k1)"
wait_until 30 "k1 is deregistered after forget_after" test ! -e "$MNT/plugins/csi-node/kill.example.com" || exit 1
took_ms=$(($(now_ms) - t0))
echo "# k1 deregistered $took_ms ms after kill -9 (forget_after $FORGET s)"
check "k1 deregistered no sooner than forget_after - 1 s ($took_ms ms)" test "$took_ms" -ge $(((FORGET - 1) * 1000))
check "the log says why" grep -q "discover.t: deregistered csi-node/kill.example.com alloc k1: dead for [0-9]* s (forget_after $FORGET)" "$DAEMON_LOG"
grep "kill.example.com" "$DAEMON_LOG" | sed 's/^/# /'
# Forgotten: held, not registered again while its socket is the same one,
# also after a rescan of its directory.
r0=$(metric plugfs_discover_rescans_total)
# (The directory's own change time: an event on it, a rescan of it.)
touch "$ROOT/k1"
wait_until 20 "k1's directory is rescanned" rescans_ge $((r0 + 1))
check "k1 stays deregistered while its dead socket is the same" test ! -e "$MNT/plugins/csi-node/kill.example.com"

# s1 past its deadline (forget_after + 2 s after it was seen dead; k1's
# part above took longer than that, so this rarely waits).
left=$((s1_dead + (FORGET + 2) * 1000 - $(now_ms)))
[ "$left" -gt 0 ] && sleep "$(awk -v l="$left" 'BEGIN { printf "%.3f", l / 1000 }')"
check_eq "s1, alive again before its deadline, is kept past forget_after" alive \
	"$(health csi-node stop.example.com s1)"
check "s1 was not forgotten" bash -c "! grep -q 'stop.example.com alloc s1: dead for' '$DAEMON_LOG'"
stop_daemon
finish
