#!/usr/bin/env bash
# Discovery without hooks: a [discover.t] section over a root, and real CSI
# plugins (csi_plugin.py, python3-grpcio) creating their sockets below it.
# Each is identified (GetPluginInfo, GetPluginCapabilities, NodeGetInfo) and
# served at MNT/plugins/<type>/<name>/csi.sock, with source discover.t; a
# second allocation of a plugin becomes active, its socket removed gives
# the first back, a directory removed deregisters; a stuck plugin holds
# back no other, one that answers late is registered once it answers, a
# name the rules refuse, one no text takes (a NUL byte, 256 bytes) and a
# symlink in the root are skipped with one line each; an explicit
# deregister holds until the socket is created again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
. "$(dirname "$0")/csi_lib.sh"
require_fuse
. "$(dirname "$0")/discover_lib.sh"
write_config "[discover.t]" "root = $ROOT" "[probe]" "mode = connect"
start_daemon

start_plugin a1 node node.example.com
wait_until 20 "node.example.com is served from a1" served csi-node node.example.com a1 || exit 1
took "a node plugin" a1
check_eq "a1: its source is discover.t" discover.t \
	"$(plugfs show csi-node node.example.com --json | jq -r '.registrations[0].source')"
check_eq "a1: kind node, version from GetPluginInfo" "node 1.0.0" \
	"$(plugfs show csi-node node.example.com --json | jq -r '.registrations[0] | "\(.kind) \(.version)"')"

start_plugin c1 controller ctl.example.com
wait_until 20 "ctl.example.com is served as a controller" served csi-controller ctl.example.com c1
took "a controller plugin" c1
check "the controller is not a node plugin" test ! -e "$MNT/plugins/csi-node/ctl.example.com"

start_plugin m1 monolith mono.example.com
wait_until 20 "mono.example.com is served as a controller" served csi-controller mono.example.com m1
wait_until 20 "mono.example.com is served as a node plugin" served csi-node mono.example.com m1
took "a monolith" m1
check_eq "the monolith's kind under both types" "monolith monolith" \
	"$(for t in csi-controller csi-node; do plugfs show $t mono.example.com --json | jq -r '.registrations[0].kind'; done | xargs)"

# A second allocation of the same plugin: active; its socket gone: a1 again.
start_plugin a2 node node.example.com
wait_until 20 "a2 of node.example.com is active" served csi-node node.example.com a2
took "a second allocation" a2
rm "$ROOT/a2/csi.sock"
wait_until 20 "a2's socket removed: a1 is active again" served csi-node node.example.com a1
check "a2 is deregistered" test ! -e "$MNT/plugins/csi-node/node.example.com/allocs/a2"
kill "$P_a2"
# a1's directory removed: the plugin is gone.
kill "$P_a1"
wait "$P_a1" 2>/dev/null
rm -rf "$ROOT/a1"
wait_until 20 "a1's directory removed: node.example.com is gone" \
	test ! -e "$MNT/plugins/csi-node/node.example.com"

# A stuck plugin (accepts, never answers) beside: the others come as ever.
csi_hang "$ROOT/h1/csi.sock"
start_plugin b1 node b.example.com
wait_until 20 "b.example.com is served beside a stuck plugin" served csi-node b.example.com b1
took "a node plugin beside a stuck one" b1
check "the stuck one is not registered" bash -c "! grep -q 'alloc h1' '$DAEMON_LOG'"
wait_until 20 "the stuck one is asked again" grep -q "$ROOT/h1/csi.sock does not answer yet" "$DAEMON_LOG"

# One that answers only after 3 s: registered once it answers.
start_plugin l1 node late.example.com --answer-after 3
wait_until 30 "late.example.com is served once it answers" served csi-node late.example.com l1
took "a plugin answering after 3 s" l1
check "the late one did not answer at first" grep -q "$ROOT/l1/csi.sock does not answer yet" "$DAEMON_LOG"

# A name the rules refuse: one line, nothing registered.
start_plugin x1 node 'bad name!'
wait_until 20 "the refused name is logged" grep -q "discover.t: $ROOT/x1/csi.sock: .*name.*not registered" "$DAEMON_LOG"
check "x1 is not registered" bash -c "! grep -q 'alloc x1' '$DAEMON_LOG'"
grep "$ROOT/x1/csi.sock" "$DAEMON_LOG" | sed 's/^/# /'

# A name no text takes (a NUL byte in it; 256 bytes) is an answer too:
# refused with its cause, not taken for no answer and asked again.
start_plugin x2 node x --name-hex 62616400
start_plugin x3 node x --name-hex "$(printf '6e%.0s' {1..256})"
for a in x2 x3; do
	# Its answer, not a connection refused before the plugin listens.
	wait_until 20 "$a's answer is logged" grep -qE "$ROOT/$a/csi.sock(: .*not registered| does not answer yet \(plugin name)" "$DAEMON_LOG"
	grep "$ROOT/$a/csi.sock" "$DAEMON_LOG" | sed 's/^/# /'
done
check "a name with a NUL byte: refused, its cause named" \
	grep -q "discover.t: $ROOT/x2/csi.sock: its identity is refused: plugin name has a NUL byte; not registered" "$DAEMON_LOG"
check "a name of 256 bytes: refused, its cause named" \
	grep -q "discover.t: $ROOT/x3/csi.sock: its identity is refused: plugin name longer than 255 bytes; not registered" "$DAEMON_LOG"
# (A plugin slow to listen may be asked again before its first answer, a
# connection refused: what matters is what follows the answer.)
asked_after_refusal() {
	awk -v s="$ROOT/$1/csi.sock" 'index($0, s ": its identity is refused") { r = 1; next }
		r && index($0, s " does not answer yet") { n++ } END { print n + 0 }' "$DAEMON_LOG"
}
check_eq "neither is asked again after its answer" "0 0" "$(asked_after_refusal x2) $(asked_after_refusal x3)"
check "neither answer is taken for no answer" \
	bash -c "! grep -qE '$ROOT/x[23]/csi.sock does not answer yet \\(plugin name' '$DAEMON_LOG'"

# A symlink planted where a directory is expected: skipped, one warning,
# however many times it is looked at again.
mkdir -m 0755 "$T/elsewhere"
csi_plugin "$T/elsewhere/csi.sock" --flavour node --name sym.example.com
ln -s "$T/elsewhere" "$ROOT/sym"
wait_until 20 "the symlink is skipped with a warning" grep -q "discover.t: $ROOT/sym: a symlink where a directory is expected; skipped" "$DAEMON_LOG"
touch -h "$ROOT/sym"
sleep 0.5
touch -h "$ROOT/sym"
sleep 1
check_eq "the symlink: one warning" 1 "$(grep -c "$ROOT/sym: a symlink" "$DAEMON_LOG")"
check "nothing behind the symlink is registered" test ! -e "$MNT/plugins/csi-node/sym.example.com"

# An explicit deregister holds until the socket is created again.
plugfs deregister --type csi-node --name b.example.com --alloc b1 >/dev/null
check "b1 deregistered by hand: gone" test ! -e "$MNT/plugins/csi-node/b.example.com"
touch "$ROOT/b1/csi.sock" 2>/dev/null
touch "$ROOT/b1/other"
sleep 2
check "b1 stays deregistered while its socket is the same" test ! -e "$MNT/plugins/csi-node/b.example.com"
grep "b.example.com" "$DAEMON_LOG" | sed 's/^/# /'
kill "$P_b1"
wait "$P_b1" 2>/dev/null
start_plugin b1 node b.example.com
wait_until 20 "b1's socket created again: registered again" served csi-node b.example.com b1

plugfs metrics >"$T/m.txt"
grep '^plugfs_discover' "$T/m.txt" | sed 's/^/# /'
check "metrics: discovered registrations counted by source" \
	grep -q '^plugfs_registrations_by_source{source="discover.t"} [1-9]' "$T/m.txt"
check "metrics: the watches" grep -q '^plugfs_discover_watches [1-9]' "$T/m.txt"
stop_daemon
finish
