#!/usr/bin/env bash
# Discovery across restarts: what changed under the root while plugfs was
# down (SIGTERM, then kill -9) is reconciled at start, before READY: a
# socket removed is deregistered, a new one registered, an unchanged one
# keeps its place (the newest by ctime active); an allocation deregistered
# by hand stays so across both while its socket is the same (the hold is
# in the state file), and is registered again once its socket is created
# again (or its change time moved while plugfs was down).  Then `plugfs reload' adds a section (its plugin registered) and
# removes one (its registrations deregistered).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
. "$(dirname "$0")/csi_lib.sh"
require_fuse
. "$(dirname "$0")/discover_lib.sh"
command -v sqlite3 >/dev/null || die "sqlite3 is missing (contrib/install-deps.sh installs it)"
write_config "[discover.t]" "root = $ROOT"
start_plugin a1 node p.example.com
start_plugin a2 node p.example.com
start_plugin g1 controller gone.example.com
start_plugin x1 node held.example.com
start_plugin x2 node held.example.com

# ready_after WHAT: the daemon's log says WHAT (a line matching it) before
# its last `ready:' line.
ready_after() {
	awk -v w="$1" '$0 ~ w { seen = NR } /plugfs info: ready:/ { r = NR } END { exit !(seen && seen < r) }' "$DAEMON_LOG"
}

start_daemon
check "at start: p.example.com served from a2 (the newest) before ready" served csi-node p.example.com a2
check "at start: gone.example.com served" served csi-controller gone.example.com g1
check "the registrations were made before ready" ready_after "discover.t: registered csi-node/p.example.com alloc a2"
s1=$(seq_of csi-node p.example.com a1)
s2=$(seq_of csi-node p.example.com a2)
echo "# seq a1=$s1 a2=$s2"
check "a1 registered before a2 (ctime order)" test "$s1" -lt "$s2"
check "held.example.com served from x2" served csi-node held.example.com x2
# holds: the rows of the state file's holds table, "source alloc" each.
holds() { sqlite3 -readonly "$STATE" "SELECT source || ' ' || alloc FROM holds ORDER BY alloc"; }
plugfs deregister --type csi-node --name held.example.com --alloc x2 >/dev/null
check "x2 deregistered by hand: x1 active" served csi-node held.example.com x1
wait_until 10 "the hold of x2 is in the state file" eval '[ "$(holds)" = "discover.t x2" ]'

# Down (SIGTERM): g1's directory goes, n1 comes.
stop_daemon
stop_plugin g1
rm -rf "$ROOT/g1"
start_plugin n1 node new.example.com
: >"$DAEMON_LOG.1"
mv "$DAEMON_LOG" "$DAEMON_LOG.1"
start_daemon
check "after SIGTERM: the removed one is gone at once" test ! -e "$MNT/plugins/csi-controller/gone.example.com"
check "after SIGTERM: the new one is served at once" served csi-node new.example.com n1
check "after SIGTERM: n1 registered before ready" ready_after "discover.t: registered csi-node/new.example.com alloc n1"
check "after SIGTERM: g1 deregistered before ready" ready_after "discover.t: deregistered csi-controller/gone.example.com alloc g1: its directory is gone"
check "after SIGTERM: a2 still active" served csi-node p.example.com a2
check_eq "after SIGTERM: a1 and a2 keep their places" "$s1 $s2" \
	"$(seq_of csi-node p.example.com a1) $(seq_of csi-node p.example.com a2)"
check "after SIGTERM: x2 (deregistered by hand, its socket the same) stays deregistered" \
	test ! -e "$MNT/plugins/csi-node/held.example.com/allocs/x2"
check "after SIGTERM: x1 active" served csi-node held.example.com x1
check "after SIGTERM: the log says one allocation is held" grep -q "discover: 1 allocation held from before the start" "$DAEMON_LOG"

# Down (kill -9): a2's socket goes.
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=
stop_plugin a2
rm -f "$ROOT/a2/csi.sock"
cat "$DAEMON_LOG" >>"$DAEMON_LOG.1"
: >"$DAEMON_LOG"
start_daemon
check "after kill -9: a2's socket gone: a1 active at once" served csi-node p.example.com a1
check "after kill -9: a2 is deregistered" test ! -e "$MNT/plugins/csi-node/p.example.com/allocs/a2"
check "after kill -9: a2 deregistered before ready" ready_after "discover.t: deregistered csi-node/p.example.com alloc a2: its socket is gone"
check_eq "after kill -9: a1 keeps its place" "$s1" "$(seq_of csi-node p.example.com a1)"
check "after kill -9: n1 still served" served csi-node new.example.com n1
check "after kill -9: x2 stays deregistered" test ! -e "$MNT/plugins/csi-node/held.example.com/allocs/x2"
check_eq "after kill -9: the hold is still stored" "discover.t x2" "$(holds)"
# x2's socket created again (a new inode): registered again, the hold gone.
stop_plugin x2
start_plugin x2 node held.example.com
wait_until 20 "x2's socket created again: registered and active again" served csi-node held.example.com x2
wait_until 10 "its hold is deleted from the state file" eval '[ -z "$(holds)" ]'
# Held again, then its socket's change time moved while plugfs was down (a
# chmod; what an inode number handed on to a new socket would look like):
# not the socket held, so registered again at start.
plugfs deregister --type csi-node --name held.example.com --alloc x2 >/dev/null
wait_until 10 "held again: stored" eval '[ "$(holds)" = "discover.t x2" ]'
stop_daemon
chmod 0700 "$ROOT/x2/csi.sock"
cat "$DAEMON_LOG" >>"$DAEMON_LOG.1"
: >"$DAEMON_LOG"
start_daemon
check "its change time moved while down: x2 registered and active again at start" served csi-node held.example.com x2
check_eq "the stale hold is deleted" "" "$(holds)"

# Reload: a section added (its root's plugin registered), then the first
# removed (its registrations deregistered).
ROOT2=$T/plugins2
mkdir -m 0755 "$ROOT2" "$ROOT2/r1"
csi_plugin "$ROOT2/r1/csi.sock" --flavour node --name r.example.com
printf '%s\n' "[discover.u]" "root = $ROOT2" >>"$CFG"
plugfs reload >/dev/null
check_eq "reload adding [discover.u]: exit 0" 0 $?
wait_until 20 "the added section's plugin is served" \
	eval '[ "$(readlink "$MNT/plugins/csi-node/r.example.com/csi.sock")" = "$ROOT2/r1/csi.sock" ]'
check_eq "its source is discover.u" discover.u \
	"$(plugfs show csi-node r.example.com --json | jq -r '.registrations[0].source')"
write_config "[discover.u]" "root = $ROOT2"
plugfs reload >/dev/null
check_eq "reload removing [discover.t]: exit 0" 0 $?
wait_until 20 "the removed section's registrations are deregistered" \
	test ! -e "$MNT/plugins/csi-node/p.example.com" -a ! -e "$MNT/plugins/csi-node/new.example.com"
check "the other section's plugin stays" test -e "$MNT/plugins/csi-node/r.example.com/csi.sock"
check "the log says why" grep -q "discover.t: deregistered csi-node/p.example.com alloc a1: its section is removed" "$DAEMON_LOG"
stop_daemon
cat "$DAEMON_LOG.1" >>"$DAEMON_LOG"
finish
