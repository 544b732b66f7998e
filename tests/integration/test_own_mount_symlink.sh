#!/usr/bin/env bash
# No thread of the daemon looks a path up in its own mount, reached through
# a symlink neither.  `register' refuses a socket whose path leads into the
# mount through a symlink (on the way, or the socket itself), naming the
# field and the rule, as it refuses one written under the mountpoint.  A
# registration stored with a path that leads there only later (a directory
# on its way swapped for a symlink to the mount after it was registered) is
# never probed there: a re-exec's first round, which runs before the new
# program serves the mount, marks it dead with the reason at once instead
# of waiting in a lookup nobody answers (consumers stalled for the probe's
# timeout).  Prints the consumer's longest stall across the re-exec.
. "$(dirname "$0")/lib.sh"
require_fuse

# Nothing cached in the kernel (cache_timeout = 0): a consumer's connect
# through the mount needs the daemon, and waits while its start does.  A
# probe timeout of 5 s: what a start that waits for it would take.
start_uncached() {
	sed -i 's/^cache_timeout = .*/cache_timeout = 0/' "$CFG"
	printf '[probe]\ntimeout = 5\n' >>"$CFG"
	start_daemon
}
outlive_setup own start_uncached

# --- register through a symlink to the mount: refused ----------------------
ln -s "$MNT" "$T/link"
out=$(plugfs register --type csi-node --name own --alloc via-link \
	--socket "$T/link/plugins/csi-node/own/csi.sock" 2>&1)
rc=$?
echo "# register through a symlink to the mount: exit $rc: $out"
check_eq "a socket through a symlink to the mount is refused (exit 1)" 1 "$rc"
check "the refusal names the field and the rule" \
	grep -q "field \`socket' must not lead into the plugfs mount $MNT" <<<"$out"
# The socket itself a symlink into the mount.
ln -s "$MNT/plugins/csi-node/own/csi.sock" "$T/sock-link"
out=$(plugfs register --type csi-node --name own --alloc last-link --socket "$T/sock-link" 2>&1)
rc=$?
echo "# register of a socket that is a symlink into the mount: exit $rc: $out"
check_eq "a socket that is a symlink into the mount is refused (exit 1)" 1 "$rc"
check "nothing was stored" bash -c "! \"$PLUGFS_BIN\" -c \"$CFG\" show csi-node own | grep -Eq 'via-link|last-link'"
# Whatever was accepted goes (without the refusal: so that the re-exec
# below measures the stored registration alone).
for a in via-link last-link; do
	plugfs deregister --type csi-node --name own --alloc "$a" -q >/dev/null 2>&1
done
# A symlink that leads elsewhere is fine.
ln -s "$T/run/a1" "$T/a1-link"
check "a socket through a symlink outside the mount is accepted" \
	plugfs register --type csi-node --name other --alloc a1 --socket "$T/a1-link/csi.sock"

# --- a stored path that leads into the mount later --------------------------
# Registered while $T/sw is a directory (no plugin there: dead, its
# directory watched), then $T/sw is moved away and a symlink to the mount
# put in its place: its watch sees nothing (its directory only moved), so
# nothing probes it until the re-exec's first round.
mkdir -p "$T/sw/d"
plugfs register --type csi-node --name own --alloc swapped --socket "$T/sw/d/csi.sock" \
	>/dev/null || die "register of the path swapped later"
mv "$T/sw" "$T/sw.old"
ln -s "$MNT" "$T/sw"
# A fresh consumer measure: only the re-exec's stall.
stop_consumer
echo "# before the re-exec: connects tried: $tried, failed: $failed, longest stall: ${longest} ms"
rm -f "$T/consumer.stop" "$T/consumer.good" "$T/consumer.out"
start_consumer a0 a1
kill -USR2 "$pid"
wait_until --pid "$pid" 30 "the re-exec resumed the mount" resumed_ge 1 || exit 1
consumer_moves_on "after the re-exec"
stop_consumer
echo "# re-exec with a stored path into the mount: connects tried: $tried, failed: $failed, longest stall: ${longest} ms"
probe_ms=$(grep 'ready: serving' "$DAEMON_LOG" | tail -n 1 | sed -n 's/.*connect pass \([0-9.]*\).*/\1/p')
echo "# the re-exec's connect pass took ${probe_ms:-?} ms (the probe timeout is 5000 ms)"
check_eq "no connect through the bind mount failed" 0 "$failed"
check "the re-exec's connect pass did not wait for the probe timeout (${probe_ms:-?} ms < 2500)" \
	test -n "$probe_ms" -a "${probe_ms%.*}" -lt 2500
check "the consumer's longest stall across the re-exec is under 3500 ms (${longest} ms)" \
	test "$longest" -lt 3500
show=$(plugfs show csi-node own --json 2>&1)
echo "# $show" | head -c 2000
echo
dead_reason() {
	plugfs show csi-node own --json |
		python3 -c 'import json,sys
p=json.load(sys.stdin)
r=[x for x in p["registrations"] if x["alloc"]=="swapped"][0]
h=r.get("health",{})
sys.exit(0 if h.get("state")=="dead" and "own mount" in (h.get("error") or "") else 1)'
}
wait_until --pid "$pid" 10 "the swapped registration is dead, the reason named" dead_reason &&
	pass "the swapped registration is dead, the reason named"
check "the daemon log names no timeout of the swapped path" \
	bash -c "! grep -q 'swapped.*timeout' '$DAEMON_LOG'"
check_eq "a0 is still served" a0 "$(demo_connect "$MNT/plugins/csi-node/own/csi.sock" 2>&1)"
stop_daemon
finish
