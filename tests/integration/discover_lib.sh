# shellcheck shell=bash
# Helpers of the discovery tests (test_discover_*.sh): a root at $ROOT and
# csi_plugin.py's plugins creating their sockets below it.  Source after
# lib.sh, control_lib.sh and csi_lib.sh.
ROOT=$T/plugins
mkdir -m 0755 "$ROOT"

# served TYPE NAME ALLOC: the plugin's csi.sock leads to ALLOC's socket.
served() { [ "$(readlink "$MNT/plugins/$1/$2/csi.sock")" = "$ROOT/$3/csi.sock" ]; }
now_ms() { echo $((${EPOCHREALTIME/[.,]/} / 1000)); }
# start_plugin ALLOC FLAVOUR NAME [ARGS]: csi_plugin.py on ROOT/ALLOC/csi.sock;
# sets P_<ALLOC> to its pid and T0 to the time it was asked to start.
start_plugin() {
	local a=$1 f=$2 n=$3
	shift 3
	mkdir -p -m 0755 "$ROOT/$a"
	T0=$(now_ms)
	csi_plugin "$ROOT/$a/csi.sock" --flavour "$f" --name "$n" "$@"
	printf -v "P_$a" %s "$CSI_PID"
}
# stop_plugin ALLOC: kills ALLOC's plugin and waits for it.
stop_plugin() {
	local v="P_$1"
	kill "${!v}" 2>/dev/null
	wait "${!v}" 2>/dev/null
	return 0
}
# took WHAT ALLOC: prints the time since T0 and what the daemon logged for ALLOC.
took() { echo "# $1: $(($(now_ms) - T0)) ms from the plugin's start to served (daemon: $(grep -o "alloc $2, socket [^ ]* ([0-9]* ms after the socket was created)" "$DAEMON_LOG" | tail -n 1 | grep -o '[0-9]* ms after'))"; }
# seq_of TYPE NAME ALLOC: that registration's seq.
seq_of() { plugfs show "$1" "$2" --json | jq -r --arg a "$3" '.registrations[] | select(.alloc == $a) | .seq'; }
# metric NAME: the daemon's value of the metric NAME (plugfs metrics);
# rescans_ge N: the discovery has rescanned at least N times.
metric() { plugfs metrics | awk -v m="$1" '$1 == m { print $2 }'; }
rescans_ge() { [ "$(metric plugfs_discover_rescans_total)" -ge "$1" ]; }
