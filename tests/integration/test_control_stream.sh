#!/usr/bin/env bash
# `list' at 10,000 registrations, streamed (docs/protocol.md, "list"): the
# line-per-plugin form and the one-line form parse whole and sorted, with a
# request pipelined behind them answered after; a watcher's event during a
# list on its connection comes after the list's end line; the walk's
# consistency (a plugin registered after the start is not in it, one
# deregistered before its turn is passed over); and a slow reader (1 byte
# per ms) or a client looping full lists stalls neither the other clients'
# `status' (p99 printed, bounded loosely) nor the mount.  `state dump --json'
# at 10,000 parses whole.  Timings are bounded loosely here; the benchmark
# (plugfs-bench --scale) measures.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
command -v jq >/dev/null || die "jq is missing (contrib/install-deps.sh installs it)"
command -v python3 >/dev/null || die "python3 is missing (contrib/install-deps.sh installs it)"
write_config "[probe]" "mode = none"
SC="python3 $(dirname "$0")/stream_client.py"

N=10000
S=$T/sockets
{
	printf '{"Plugins": {"csi-node": {'
	sep=
	for ((i = 0; i < N; i++)); do
		printf '%s"plugin-%05d": {"Type": "node", "AllocID": "a%05d", "ConnectionInfo": {"SocketPath": "%s/a%05d/csi.sock"}}' \
			"$sep" "$i" "$i" "$S" "$i"
		sep=', '
	done
	printf '}}}\n'
} >"$T/legacy.json"
check "state import of $N registrations" plugfs state import "$T/legacy.json"
start_daemon
D=$MNT/plugins/csi-node

out=$($SC lines "$CTL" $N)
check_eq "streamed list: $N plugin lines, sorted, counts in the end line, the status behind it answered after" \
	"plugins=$N registrations=$N last=plugin-09999" "$(echo $out)"
out=$($SC oneline "$CTL" $N)
check_eq "one-line list (clients before the stream): $N plugins, sorted" "plugins=$N" "$out"
plugfs list --json >"$T/list.json"
check_eq "list --json: $N plugins, in order" "$(seq -f 'plugin-%05g' 0 $((N - 1)) | md5sum)" \
	"$(jq -r '.plugins[].name' "$T/list.json" | md5sum)"
check_eq "list: a header and $N rows" $((N + 1)) "$(plugfs list | wc -l)"
check_eq "list --type csi-controller: none" '{"plugins":[]}' \
	"$(plugfs list --type csi-controller --json | jq -c .)"
check_eq "list rejects a stream that is not a boolean" \
	'invalid_argument list: field `stream'"'"' must be true or false, got a string' \
	"$(raw '{"op":"list","stream":"yes"}' | jq -r '"\(.error.code) \(.error.message)"')"

# A watcher lists on its own connection: the event of a registration made
# meanwhile is held until the list ended.  The walk is of the names at its
# start: held-1 (registered after) is not in it, plugin-09999 (deregistered
# before its turn) is passed over.
coproc WL { $SC watch_list "$CTL"; }
read -r -t 10 ready <&"${WL[0]}"
check_eq "watch_list client ready" ready "$ready"
check "register held-1 during the list" plugfs register --type csi-node --name held-1 --alloc h1 \
	--socket "$S/h1/csi.sock"
check "deregister plugin-09999 before its turn" plugfs deregister --type csi-node \
	--name plugin-09999 --alloc a09999
echo go >&"${WL[1]}"
read -r -t 30 out <&"${WL[0]}"
check_eq "the list passes over the plugin deregistered, lacks the one registered, and the event follows its end" \
	"listed=$((N - 1)) held_in_list=0 event_after_end=1" "$out"
check "register plugin-09999 again" plugfs register --type csi-node --name plugin-09999 \
	--alloc a09999 --socket "$S/a09999/csi.sock"
check "deregister held-1" plugfs deregister --type csi-node --name held-1 --alloc h1

# Fairness: a slow reader and a client looping full lists; another client's
# status and the mount still answer.
$SC slow "$CTL" 6 >"$T/slow.out" 2>&1 &
SLOW=$!
_PIDS+=("$SLOW")
$SC loop "$CTL" 6 >"$T/loop.out" 2>&1 &
LOOP=$!
_PIDS+=("$LOOP")
sleep 0.5
st=$($SC status "$CTL" 4)
echo "# status while a slow reader and a looping lister stream: $st"
p99=$(sed -n 's/.*p99_ms=\([0-9.]*\).*/\1/p' <<<"$st")
# The bounds: 1.5 s, 10x and more the p99 of 72 ms (max 120 ms) measured
# here with the other tests beside it; a server held up by the slow reader
# would keep them waiting for its 6 s.
check "status answered (n >= 20) within p99 < 1500 ms" \
	python3 -c "import sys; n=int('${st}'.split()[0][2:]); sys.exit(0 if n >= 20 and float('$p99') < 1500 else 1)"
t0=$(ms)
check_eq "the mount answers meanwhile" "$S/a04321/csi.sock" "$(readlink "$D/plugin-04321/csi.sock")"
el=$(($(ms) - t0))
echo "# readlink while the lists stream: ${el} ms"
check "readlink within 1500 ms (${el} ms)" test "$el" -lt 1500
wait "$SLOW"
check_eq "the slow reader was never dropped (exit 0)" 0 $?
echo "# $(cat "$T/slow.out")"
wait "$LOOP"
check_eq "the looping lister finished its lists" 0 $?
echo "# looping lister: $(cat "$T/loop.out")"
check "it listed at least once" grep -q 'lists=[1-9]' "$T/loop.out"
check_eq "the daemon still serves after the slow reader left" $N "$(plugfs status --json | jq .plugins)"

stop_daemon
plugfs state dump --json >"$T/dump.json"
check_eq "state dump --json: $N plugins, in order" "$(seq -f 'plugin-%05g' 0 $((N - 1)) | md5sum)" \
	"$(jq -r '.plugins[].name' "$T/dump.json" | md5sum)"
check_daemon_log
finish
