# shellcheck shell=bash
# Shared helpers for plugfs integration tests.  Source it first thing:
#
#   . "$(dirname "$0")/lib.sh"
#   require_fuse          # only for tests that mount
#   write_config          # $T/plugfs.ini with mount, state and socket under $T
#   start_daemon          # plugfs mount in the background, waits for the mount
#   ...
#   finish                # prints the summary; exit code says pass/fail
#
# Everything the test creates lives under $T (a mktemp -d).  The EXIT trap
# kills the daemons it started (by PID), unmounts with fusermount3 -u and
# removes $T, also when the test fails.  The daemon log is checked for
# sanitizer reports.
set -u
set -o pipefail

PLUGFS_BIN=${PLUGFS_BIN:?PLUGFS_BIN must point at the plugfs binary}
PLUGFS_BUILD_DIR=${PLUGFS_BUILD_DIR:-$(dirname "$PLUGFS_BIN")}
PLUGFS_SOURCE_DIR=${PLUGFS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PLUGFS_DEMO_PLUGIN=${PLUGFS_DEMO_PLUGIN:-$PLUGFS_BUILD_DIR/tools/plugfs-demo-plugin}
FS_HARNESS=${FS_HARNESS:-$PLUGFS_BUILD_DIR/tests/integration/fs-harness}
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

T=$(mktemp -d /tmp/plugfs-test.XXXXXX)
chmod 0755 "$T"
MNT=$T/mnt
CFG=$T/plugfs.ini
STATE=$T/state.db
CTL=$T/ctl.sock
DAEMON_PID=
DAEMON_LOG=$T/daemon.log
_PIDS=()
_MOUNTS=()
_PASSED=0
_FAILED=0
_TEST=$(basename "$0" .sh)

_cleanup() {
	local rc=$?
	local p m
	for p in "${_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${_PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	for m in "${_MOUNTS[@]}" "$MNT"; do
		if grep -qs " $m fuse" /proc/mounts; then
			# A process stuck on a mount whose daemon died (an in-process
			# daemon crashing) only dies once the connection is aborted.
			abort_fuse_conn "$m"
			fusermount3 -u "$m" 2>/dev/null || fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -f "$DAEMON_LOG" ]; then
		echo "--- daemon log ($DAEMON_LOG) ---"
		tail -n 60 "$DAEMON_LOG"
	fi
	rm -rf "$T"
	exit "$rc"
}
# abort_fuse_conn MNT: fails every request of the FUSE connection mounted
# at MNT (through fusectl, mounted when needed), so that nothing stays blocked
# on a daemon that is gone.
abort_fuse_conn() {
	local dev id ctl=/sys/fs/fuse/connections
	dev=$(awk -v m="$1" '$5 == m { d = $3 } END { print d }' /proc/self/mountinfo)
	[ -n "$dev" ] && [ -d "$ctl" ] || return 0
	id=$(( (${dev%%:*} << 20) | ${dev##*:} ))
	[ -e "$ctl/$id" ] || mount -t fusectl none "$ctl" 2>/dev/null
	[ -w "$ctl/$id/abort" ] && echo 1 >"$ctl/$id/abort"
	return 0
}

trap _cleanup EXIT
trap 'exit 130' INT TERM

# Tests that need FUSE call this: without root, /dev/fuse or fusermount3 they
# say why and skip (77), but under CI=true they fail.
require_fuse() {
	local why=
	[ "$(id -u)" -eq 0 ] || why="not running as root"
	[ -c /dev/fuse ] || why="/dev/fuse is missing"
	command -v fusermount3 >/dev/null || why="fusermount3 is not installed"
	if [ -n "$why" ]; then
		if [ "${CI:-}" = "true" ]; then
			echo "FAIL: $_TEST needs FUSE: $why (CI=true: not skipping)"
			exit 1
		fi
		echo "SKIP: $_TEST needs FUSE: $why"
		exit 77
	fi
}

pass() { _PASSED=$((_PASSED + 1)); echo "ok - $*"; }
fail() { _FAILED=$((_FAILED + 1)); echo "not ok - $*"; }
# check DESCRIPTION COMMAND...: passes when the command succeeds.
check() { local d=$1; shift; if "$@"; then pass "$d"; else fail "$d"; fi; }
# check_eq DESCRIPTION EXPECTED ACTUAL
check_eq() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: expected [$2], got [$3]"; fi
}
# die MESSAGE: fail now (cleanup still runs).
die() { echo "not ok - $*"; exit 1; }

# write_config [EXTRA INI LINES...]: the config every test starts from.
# Extra lines are appended verbatim, e.g. "[log]" "level = debug".
write_config() {
	cat >"$CFG" <<INI
[mount]
mountpoint = $MNT
socket_name = csi.sock
allow_other = true
cache_timeout = 60

[state]
path = $STATE
synchronous = normal

[control]
socket = $CTL

[registry]
types = csi-controller csi-node
INI
	local l
	for l in "$@"; do printf '%s\n' "$l" >>"$CFG"; done
}

is_mounted() { grep -qs " $1 fuse" /proc/mounts; }

# start_daemon [ARGS...]: starts `plugfs -c $CFG mount ARGS` and waits (60 s)
# until the mount answers.  Sets DAEMON_PID.
start_daemon() {
	"$PLUGFS_BIN" -c "$CFG" mount "$@" >>"$DAEMON_LOG" 2>&1 &
	DAEMON_PID=$!
	_PIDS+=("$DAEMON_PID")
	for _ in $(seq 600); do
		# statfs is never answered from a cache: a dead mount left by a
		# killed daemon fails it until the new daemon replaced it.
		if is_mounted "$MNT" && stat -f "$MNT" >/dev/null 2>&1 &&
			stat "$MNT/plugins" >/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.1
	done
	die "daemon did not come up (pid $DAEMON_PID)"
}

# stop_daemon: SIGTERM, expects exit code 0 and the mount gone.
stop_daemon() {
	local rc
	kill -TERM "$DAEMON_PID"
	wait "$DAEMON_PID"
	rc=$?
	check_eq "daemon exits 0 on SIGTERM" 0 "$rc"
	check "mount is gone after SIGTERM" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
	DAEMON_PID=
}

# Fails on sanitizer reports or runtime errors in the daemon log.
check_daemon_log() {
	if grep -Eq 'AddressSanitizer|LeakSanitizer|ThreadSanitizer|UndefinedBehaviorSanitizer|runtime error:' "$DAEMON_LOG" 2>/dev/null; then
		fail "sanitizer report in the daemon log"
		grep -E -A20 'Sanitizer|runtime error:' "$DAEMON_LOG" | head -60
	else
		pass "no sanitizer report in the daemon log"
	fi
}

# start_demo_plugin SOCKET ALLOC: runs plugfs-demo-plugin in the background
# (killed by the EXIT trap) and waits (30 s) until it answers on SOCKET.
# Sets DEMO_PID.  `demo_connect PATH` prints the alloc id that answers there.
start_demo_plugin() {
	"$PLUGFS_DEMO_PLUGIN" --socket "$1" --alloc "$2" >>"$T/demo-plugin.log" 2>&1 &
	DEMO_PID=$!
	_PIDS+=("$DEMO_PID")
	"$PLUGFS_DEMO_PLUGIN" --connect "$1" --wait 30 >/dev/null ||
		die "demo plugin $2 did not come up on $1"
}
demo_connect() { "$PLUGFS_DEMO_PLUGIN" --connect "$1"; }

# harness CMD ARGS...: fs-harness on this test's state file and types, e.g.
# `harness register csi-node ebs a0 /run/a0/csi.sock 1.0` (offline).
harness() { "$FS_HARNESS" "$1" -s "$STATE" -t csi-controller -t csi-node "${@:2}"; }

# plugfs ARGS...: the CLI with this test's config.
plugfs() { "$PLUGFS_BIN" -c "$CFG" "$@"; }

finish() {
	[ -f "$DAEMON_LOG" ] && check_daemon_log
	echo "$_TEST: $_PASSED passed, $_FAILED failed"
	[ "$_FAILED" -eq 0 ]
	exit $?
}
