# shellcheck shell=bash
# Helpers shared by the control-socket tests (test_control_*.sh,
# test_e2e_*.sh).  Source after lib.sh.

CTLRAW=$PLUGFS_BUILD_DIR/tests/integration/plugfs-test-ctlraw
STORM=$PLUGFS_BUILD_DIR/tests/integration/plugfs-test-storm
command -v jq >/dev/null || die "jq is missing (contrib/install-deps.sh installs it)"
[ -x "$CTLRAW" ] || die "$CTLRAW is missing: build the tests first"

# plugfs_bg ARGS... &: the CLI in the background, as the process itself (exec),
# so that $! is the plugfs process: a kill reaches it, not a subshell that
# leaves it running.  Add $! to _PIDS for the cleanup.
plugfs_bg() { exec "$PLUGFS_BIN" -c "$CFG" "$@"; }

# sock_of ALLOC: where the demo plugin of ALLOC listens.
sock_of() { printf '%s/alloc/%s/csi.sock' "$T" "$1"; }

# demo ALLOC...: starts a demo plugin per alloc.
demo() {
	local a
	for a in "$@"; do start_demo_plugin "$(sock_of "$a")" "$a"; done
}

# reg TYPE NAME ALLOC [more register args]: register through the CLI.
reg() {
	local t=$1 n=$2 a=$3
	shift 3
	plugfs register --type "$t" --name "$n" --alloc "$a" --socket "$(sock_of "$a")" "$@" >/dev/null ||
		fail "register $t/$n $a exited $?"
}
dereg() {
	plugfs deregister --type "$1" --name "$2" --alloc "$3" >/dev/null ||
		fail "deregister $1/$2 $3 exited $?"
}

# expect_active DESC TYPE NAME ALLOC: through the mount (readlink and a real
# connect) and through show --json.
expect_active() {
	local d=$1 t=$2 n=$3 a=$4 link got
	link=$(readlink "$MNT/plugins/$t/$n/csi.sock")
	check_eq "$d: $t/$n/csi.sock points at the socket of $a" "$(sock_of "$a")" "$link"
	got=$(demo_connect "$MNT/plugins/$t/$n/csi.sock" 2>&1)
	check_eq "$d: connecting to $t/$n/csi.sock reaches $a" "$a" "$got"
	got=$(plugfs show "$t" "$n" --json | jq -r .active)
	check_eq "$d: show --json says $a is active" "$a" "$got"
}

# expect_order DESC TYPE NAME "A1 A0 ...": the list order (active first).
expect_order() {
	local got
	got=$(plugfs show "$2" "$3" --json | jq -r '[.registrations[].alloc] | join(" ")')
	check_eq "$1: $2/$3 list order" "$4" "$got"
}

# expect_gone DESC TYPE NAME: no directory under the mount, show says there
# is no registration.
expect_gone() {
	local rc
	check "$1: $2/$3 is gone from the mount" test ! -e "$MNT/plugins/$2/$3"
	plugfs show "$2" "$3" >/dev/null 2>"$T/show.err"
	rc=$?
	check_eq "$1: show $2/$3 exits 1" 1 "$rc"
	check "$1: show $2/$3 says it has no registration" \
		grep -qx "plugfs show: plugin $2/$3 has no registration" "$T/show.err"
}

# watchers_are N: the daemon counts N watchers.  clients_at_least N: it
# counts N clients or more, the status request that asks included.
watchers_are() { [ "$(plugfs status --json | jq .watchers)" = "$1" ]; }
clients_at_least() { [ "$(plugfs status --json | jq .clients)" -ge "$1" ]; }

restart_daemon() {
	stop_daemon
	start_daemon
}

# raw LINE...: sends the lines as they are to the control socket and prints
# the answers.
raw() { printf '%s\n' "$@" | "$CTLRAW" "$CTL"; }

# The registry as the mount shows it, one line per plugin:
#   TYPE NAME active=<csi.sock target> ALLOC=<target>... (allocs sorted)
tree_of_mount() {
	local tdir ndir a line
	for tdir in "$MNT"/plugins/*/; do
		for ndir in "$tdir"*/; do
			[ -d "$ndir" ] || continue
			line="$(basename "$tdir") $(basename "$ndir") active=$(readlink "$ndir/csi.sock")"
			for a in $(ls "$ndir/allocs" | LC_ALL=C sort); do
				line+=" $a=$(readlink "$ndir/allocs/$a")"
			done
			printf '%s\n' "$line"
		done
	done | LC_ALL=C sort
}
# The same lines from `list --json` on stdin.
tree_of_json() {
	jq -r '.plugins[] | "\(.type) \(.name) active=\(.registrations[0].socket)" +
		([.registrations[]] | sort_by(.alloc) | map(" \(.alloc)=\(.socket)") | join(""))' |
		LC_ALL=C sort
}

# --- the liveness tests (a plugin $E = $MNT/plugins/TYPE/NAME; csi-node/p
# for health_of and error_of) ---

# ms: now, in milliseconds (for the figures the tests print).
ms() { date +%s%3N; }
# link_is ALLOC: $E/csi.sock points at the socket of ALLOC (sock_of).
link_is() { [ "$(readlink "$E/csi.sock")" = "$(sock_of "$1")" ]; }
# health_of ALLOC, error_of ALLOC: the health state and the last probe error
# of ALLOC's registration of csi-node/p, from show --json.
health_of() { plugfs show csi-node p --json | jq -r --arg a "$1" '.registrations[] | select(.alloc == $a) | .health.state'; }
error_of() { plugfs show csi-node p --json | jq -r --arg a "$1" '.registrations[] | select(.alloc == $a) | .health.error'; }
# error_is ALLOC ERROR: error_of ALLOC is ERROR.
error_is() { [ "$(error_of "$1")" = "$2" ]; }
# probe_rounds: the probe rounds the daemon counted (plugfs metrics);
# rounds_past N: at least N.
probe_rounds() { plugfs metrics | awk '$1 == "plugfs_probe_rounds_total" { printf "%d\n", $2 }'; }
rounds_past() { [ "$(probe_rounds)" -ge "$1" ]; }
