#!/usr/bin/env bash
# The five-minute walkthrough of README.md, as a script: every command it
# runs is printed first (`$ ...'), and every result the README promises is
# checked, so `bash contrib/walkthrough.sh' exits 0 only if the README is
# still true.  tests/integration/test_walkthrough.sh runs it.
#
# Needs a running plugfs daemon (as root, in another terminal:
# `bash contrib/run.sh').  Run as root (registering needs root or
# [control] group):
#
#   bash contrib/walkthrough.sh
#
# Environment (all optional):
#   PLUGFS_CONFIG        the config the daemon was started with (plugfs(8))
#   PLUGFS               the plugfs program (default: build/cli/plugfs of this
#                        checkout if built, else plugfs on $PATH)
#   PLUGFS_DEMO_PLUGIN   the demo plugin (default: the same way, from build/tools,
#                        else /usr/lib/plugfs/plugfs-demo-plugin of the package)
#   WALKTHROUGH_DIR      where the demo allocations put their sockets
#                        (default /tmp/plugfs-walkthrough)
#   WALKTHROUGH_PAUSE    seconds to pause between steps (default 0)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pick() { # NAME BUILD-PATH [INSTALLED-PATH]
	if [ -x "$here/$2" ]; then
		echo "$here/$2"
	elif [ -n "${3:-}" ] && [ -x "$3" ]; then
		echo "$3"
	else
		command -v "$1" || echo "$1"
	fi
}
PLUGFS=${PLUGFS:-$(pick plugfs build/cli/plugfs)}
# (the package installs the demo plugin off the PATH, in /usr/lib/plugfs)
DEMO=${PLUGFS_DEMO_PLUGIN:-$(pick plugfs-demo-plugin build/tools/plugfs-demo-plugin /usr/lib/plugfs/plugfs-demo-plugin)}
DIR=${WALKTHROUGH_DIR:-/tmp/plugfs-walkthrough}
PAUSE=${WALKTHROUGH_PAUSE:-0}
A1=3f2c9a10 # the first allocation of the demo plugin
A2=7be41d55 # its replacement

# What the transcript shows: `plugfs' and `plugfs-demo-plugin', as typed.
# (Background jobs run the programs themselves, so that $! is their pid.)
plugfs() { "$PLUGFS" "$@"; }
plugfs-demo-plugin() { "$DEMO" "$@"; }
# ls as in a terminal: names in columns (a later -l still wins).
ls() { command ls -C "$@"; }
# stop JOB PID: what `kill JOB' (%1, %2: the demo plugins, in the order they
# were started) does in the reader's terminal, to PID; waits for it to end.
stop() {
	printf '$ kill %s\n' "$1"
	kill -TERM "$2"
	wait "$2" || true
}

pids=()
cleanup() {
	local rc=$? p
	set +e
	if [ -n "${registered-}" ]; then
		for a in $registered; do
			plugfs deregister --type csi-node --name demo --alloc "$a" >/dev/null 2>&1
		done
	fi
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$DIR"
	[ "$rc" -eq 0 ] && echo "# The walkthrough is done; everything it started is stopped."
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n## %s\n' "$*"; sleep "$PAUSE"; }
# run CMD...: prints the command as typed, then runs it.
run() { printf '$ %s\n' "$*"; "$@"; }
# expect WHAT EXPECTED ACTUAL: stops the walkthrough when the README is wrong.
expect() {
	if [ "$2" != "$3" ]; then
		echo "walkthrough: FAILED: $1: expected [$2], got [$3]" >&2
		exit 1
	fi
	echo "# ok: $1"
}

step "0. plugfs is running"
if ! run plugfs status; then
	echo "walkthrough: the daemon is not reachable; start it first (bash contrib/run.sh)" >&2
	exit 1
fi
MNT=$(plugfs status --json | sed -n 's/.*"mountpoint": *"\([^"]*\)".*/\1/p')
[ -n "$MNT" ] || { echo "walkthrough: plugfs status --json gave no mountpoint" >&2; exit 1; }
P=$MNT/plugins/csi-node/demo
run ls "$MNT/plugins/"

step "1. Start allocation $A1 of a demo CSI node plugin, its socket in its own directory"
mkdir -p "$DIR"
printf '$ %s\n' "plugfs-demo-plugin --socket $DIR/$A1/csi.sock --alloc $A1 &"
"$DEMO" --socket "$DIR/$A1/csi.sock" --alloc "$A1" &
pids+=($!)
plugfs-demo-plugin --connect "$DIR/$A1/csi.sock" --wait 5 >/dev/null

step "2. Register it"
run plugfs register --type csi-node --name demo --alloc "$A1" \
	--socket "$DIR/$A1/csi.sock" --kind node --version 1.0.0
registered=$A1

step "3. Look at the plugin under the mount"
run ls -l "$P/"
run ls -l "$P/allocs/"
run cat "$P/info"
expect "csi.sock points at $A1's socket" "$DIR/$A1/csi.sock" "$(readlink "$P/csi.sock")"

step "4. Connect through the stable path"
run plugfs-demo-plugin --connect "$P/csi.sock"
expect "the connection reached $A1" "$A1" "$(plugfs-demo-plugin --connect "$P/csi.sock")"

step "5. Roll to a second allocation, $A2, while plugfs watch follows the events"
echo "# in a third terminal: plugfs watch --type csi-node"
"$PLUGFS" watch --type csi-node >"$DIR/watch.log" 2>&1 &
wpid=$!
pids+=("$wpid")
# Let watch subscribe before the changes (status counts the watchers).
for _ in $(seq 100); do
	plugfs status --json | grep -Eq '"watchers": *[1-9]' && break
	sleep 0.1
done
printf '$ %s\n' "plugfs-demo-plugin --socket $DIR/$A2/csi.sock --alloc $A2 &"
"$DEMO" --socket "$DIR/$A2/csi.sock" --alloc "$A2" &
pids+=($!)
plugfs-demo-plugin --connect "$DIR/$A2/csi.sock" --wait 5 >/dev/null
run plugfs register --type csi-node --name demo --alloc "$A2" \
	--socket "$DIR/$A2/csi.sock" --kind node --version 1.1.0
registered="$A1 $A2"
run readlink "$P/csi.sock"
expect "csi.sock switched to $A2 as soon as register returned" "$DIR/$A2/csi.sock" "$(readlink "$P/csi.sock")"
expect "the connection reaches $A2" "$A2" "$(plugfs-demo-plugin --connect "$P/csi.sock")"
run cat "$P/info"
expect "info lists both, the active one first" "$A2 $A1" "$(awk '{printf "%s%s", (NR > 1 ? " " : ""), $1}' "$P/info")"

step "6. The old allocation stops: deregister it"
run plugfs deregister --type csi-node --name demo --alloc "$A1"
registered=$A2
stop %1 "${pids[0]}"
run ls "$P/allocs/"
expect "only $A2 is left" "$A2" "$(ls "$P/allocs/")"
expect "csi.sock still leads to $A2" "$A2" "$(plugfs-demo-plugin --connect "$P/csi.sock")"
run plugfs show csi-node demo

step "7. What plugfs watch saw"
for _ in $(seq 50); do grep -q "deregistered.*$A1" "$DIR/watch.log" && break; sleep 0.1; done
kill -TERM "$wpid" 2>/dev/null || true
wait "$wpid" 2>/dev/null || true
# (what the third terminal shows)
printf '$ %s\n' "plugfs watch --type csi-node"
cat "$DIR/watch.log"
expect "watch saw $A2 registered" 1 "$(grep -c " registered .*$A2" "$DIR/watch.log")"
expect "watch saw the switch $A1 -> $A2" 1 "$(grep -c "active.*$A1 -> $A2" "$DIR/watch.log")"
expect "watch saw $A1 deregistered" 1 "$(grep -c "deregistered.*$A1" "$DIR/watch.log")"

step "8. Clean up: the last deregistration removes the plugin from the tree"
run plugfs deregister --type csi-node --name demo --alloc "$A2"
registered=
run ls "$MNT/plugins/csi-node/"
expect "the plugin is gone" "no" "$([ -e "$P" ] && echo yes || echo no)"
stop %2 "${pids[2]}"
