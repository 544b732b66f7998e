# shellcheck shell=bash
# Shared helpers for plugfs integration tests.  Source it first thing:
#
#   . "$(dirname "$0")/lib.sh"
#   require_fuse          # only for tests that mount
#   write_config          # $T/plugfs.ini with mount, state and socket under $T
#   start_daemon          # plugfs mount in the background, waits for the mount
#   check / check_eq / expect_errno / wait_until ...
#   finish                # prints the summary; exit code says pass/fail
#
# Everything the test creates lives under $T (a mktemp -d).  The EXIT trap
# kills the processes listed in _PIDS (by PID), unmounts with fusermount3 -u,
# runs the on_cleanup hooks and removes $T, also when the test fails.  The
# daemon log is checked for sanitizer reports.
set -u
set -o pipefail

PLUGFS_BIN=${PLUGFS_BIN:?PLUGFS_BIN must point at the plugfs binary}
PLUGFS_BUILD_DIR=${PLUGFS_BUILD_DIR:-$(dirname "$PLUGFS_BIN")}
PLUGFS_SOURCE_DIR=${PLUGFS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PLUGFS_DEMO_PLUGIN=${PLUGFS_DEMO_PLUGIN:-$PLUGFS_BUILD_DIR/tools/plugfs-demo-plugin}
FS_HARNESS=${FS_HARNESS:-$PLUGFS_BUILD_DIR/tests/integration/fs-harness}
# The Debian 12 system the tests are written for: its python3 (with
# python3-grpcio, where contrib/install-deps.sh puts it) and tools, not a
# version manager's shims earlier in the PATH (each python3 through such a
# shim starts a dozen processes).
PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PLUGFS_SOURCE_DIR/tests/lsan.supp:print_suppressions=0}
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
_HOOKS=()
_PASSED=0
_FAILED=0
_TEST=$(basename "$0" .sh)

# _poll PID SECONDS COMMAND...: runs COMMAND (its stderr discarded) until
# it succeeds (returns 0), SECONDS (whole seconds) have passed (1) or, when
# PID is not empty, process PID has exited (2).  The pause between tries
# starts at 0.05 s and grows by half each time up to 0.5 s: a fact that
# comes at once is seen at once, and a long wait costs a try every 0.5 s,
# not 10 a second (a try of the sanitized CLI takes 0.1 s of CPU: side by
# side, the tests' waits were a core of the suite's CPU).
_poll() {
	local pid=$1 end=$((${EPOCHREALTIME/[.,]/} + $2 * 1000000)) pause=50000
	shift 2
	while :; do
		"$@" 2>/dev/null && return 0
		[ -z "$pid" ] || kill -0 "$pid" 2>/dev/null || return 2
		[ "${EPOCHREALTIME/[.,]/}" -lt "$end" ] || return 1
		sleep "0.$(printf '%06d' "$pause")"
		pause=$((pause * 3 / 2))
		[ "$pause" -le 500000 ] || pause=500000
	done
}
_gone() { ! kill -0 "$1" 2>/dev/null; }

# on_cleanup CMD...: the EXIT trap runs CMD (with its words as they are now)
# after it stopped the test's processes and unmounted its mounts, before it
# removes $T.  Hooks run newest first, also when the test fails or dies; what
# they print is shown, their exit status ignored.
on_cleanup() { _HOOKS+=("$(printf '%q ' "$@")"); }

_cleanup() {
	local rc=$?
	local p m i
	for p in "${_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${_PIDS[@]}"; do
		_poll "" 5 _gone "$p" || kill -KILL "$p" 2>/dev/null
	done
	for m in "${_MOUNTS[@]}" "$MNT"; do
		if grep -qs " $m fuse" /proc/mounts; then
			# A process stuck on a mount whose daemon died (an in-process
			# daemon crashing) only dies once the connection is aborted.
			abort_fuse_conn "$m"
			fusermount3 -u "$m" 2>/dev/null || fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	for ((i = ${#_HOOKS[@]} - 1; i >= 0; i--)); do
		eval "${_HOOKS[i]}"
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
	local d
	d=$(fuse_conn_dir "$1") || return 0
	[ -w "$d/abort" ] && echo 1 >"$d/abort"
	return 0
}
# fuse_conn_dir MNT: prints the fusectl directory of the FUSE connection
# mounted at MNT (/sys/fs/fuse/connections/<its device's number>, fusectl
# mounted when needed); fails when nothing is mounted there.
fuse_conn_dir() {
	local dev id ctl=/sys/fs/fuse/connections
	dev=$(awk -v m="$1" '$5 == m { d = $3 } END { print d }' /proc/self/mountinfo)
	[ -n "$dev" ] && [ -d "$ctl" ] || return 1
	id=$(( (${dev%%:*} << 20) | ${dev##*:} ))
	[ -e "$ctl/$id" ] || mount -t fusectl none "$ctl" 2>/dev/null
	echo "$ctl/$id"
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

# soak DEFAULT SOAK: the count of a trial: SOAK under PLUGFS_SOAK=1 (the
# soak mode, contrib/test.sh: long trials before a release or after a change
# to the lifecycle), DEFAULT in the README's test command.  Each call site
# says why DEFAULT still proves its claim.
soak() { if [ "${PLUGFS_SOAK:-0}" = 1 ]; then echo "$2"; else echo "$1"; fi; }

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

# wait_until [--pid PID] SECONDS DESCRIPTION COMMAND...: waits until COMMAND
# succeeds, running it every 0.05 to 0.5 s (_poll) for at most SECONDS
# (its stderr is discarded).  Quiet when it succeeds; otherwise the test fails with "timed
# out after SECONDS s waiting until DESCRIPTION" (or, with --pid, as soon as
# process PID has exited: "gave up waiting until DESCRIPTION") and it returns
# 1: add `|| exit 1' where the test cannot go on.
wait_until() {
	local pid='' secs what
	if [ "$1" = --pid ]; then
		pid=$2
		shift 2
	fi
	secs=$1 what=$2
	shift 2
	_poll "$pid" "$secs" "$@"
	case $? in
	0) return 0 ;;
	1) fail "timed out after $secs s waiting until $what" ;;
	*) fail "gave up waiting until $what: process $pid exited" ;;
	esac
	return 1
}

# errno_message NAME: prints the C library's message for the errno NAME
# (ENOENT: "No such file or directory"), what a command prints for it.
# Fails for a name the system does not know.
errno_message() {
	python3 -c 'import errno, os, sys; print(os.strerror(getattr(errno, sys.argv[1])))' "$1" 2>/dev/null
}

# expect_errno DESCRIPTION ERRNO COMMAND...: COMMAND (a file operation: stat,
# mkdir, ls, a function...) must fail with ERRNO (ENOENT, EROFS, EACCES,
# ENOTCONN...): a non-zero exit status and the message of ERRNO on its stderr
# (it runs in the C locale).  One pass or fail.
expect_errno() {
	local d=$1 name=$2 msg
	shift 2
	msg=$(errno_message "$name") || die "expect_errno: unknown errno name \`$name'"
	if LC_ALL=C "$@" >/dev/null 2>"$T/errno.err"; then
		fail "$d: succeeded, expected $name"
	elif grep -qF -- "$msg" "$T/errno.err"; then
		pass "$d: $name"
	else
		fail "$d: expected $name ($msg), got: $(cat "$T/errno.err")"
	fi
}

# as_nobody CMD...: runs CMD as the user nobody, group nogroup and no
# supplementary group (setpriv).  as_nobody_in GROUP CMD...: the same with
# GROUP as its one supplementary group.
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
as_nobody_in() { setpriv --reuid=nobody --regid=nogroup --groups="$1" -- "${@:2}"; }

# unit_setting KEY: the value of the last KEY= line of contrib/plugfs.service.
unit_setting() { grep -E "^$1=" "$PLUGFS_SOURCE_DIR/contrib/plugfs.service" | tail -n 1 | cut -d= -f2-; }

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

# small_state_disk: the state file on a 2 MiB tmpfs of its own at $T/small
# (unmounted on exit), for the tests of a full or small disk
# (test_state_full, test_state_small): sets STATE=$T/small/state.db.  Call
# it before write_config.
small_state_disk() {
	mkdir -p "$T/small"
	mount -t tmpfs -o size=2m,mode=0755 plugfs-test "$T/small" || die "cannot mount a tmpfs"
	on_cleanup umount -l "$T/small"
	STATE=$T/small/state.db
}

is_mounted() { grep -qs " $1 fuse" /proc/mounts; }
# mount_answers MNT: a plugfs mount at MNT answers.  statfs is never answered
# from a cache: a dead mount left by a killed daemon fails it until a new
# daemon replaced it.
mount_answers() {
	is_mounted "$1" && stat -f "$1" >/dev/null 2>&1 && stat "$1/plugins" >/dev/null 2>&1
}

# start_daemon [ARGS...]: starts `plugfs -c $CFG mount ARGS` and waits (60 s)
# until the mount answers.  Sets DAEMON_PID.
start_daemon() {
	"$PLUGFS_BIN" -c "$CFG" mount "$@" >>"$DAEMON_LOG" 2>&1 &
	DAEMON_PID=$!
	_PIDS+=("$DAEMON_PID")
	wait_until --pid "$DAEMON_PID" 60 "the daemon (pid $DAEMON_PID) serves $MNT" \
		mount_answers "$MNT" || exit 1
}

# mount_to_exit LOG [ARGS...]: `plugfs -c $CFG mount ARGS` that is expected
# not to come up: runs it (stopped by the EXIT trap should it keep running),
# its output in LOG, and returns its exit status.
mount_to_exit() {
	local pid
	"$PLUGFS_BIN" -c "$CFG" mount "${@:2}" >"$1" 2>&1 &
	pid=$!
	_PIDS+=("$pid")
	wait "$pid"
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
# state_register TYPE NAME ALLOC SOCKET [VERSION]: adds a registration to the
# state file offline (fs-harness register); the test dies when it cannot.
state_register() { harness register "$@" || die "cannot prepare the state: register $*"; }
# state_script FILE: the registers and deregisters of FILE, one a line
# (`register TYPE NAME ALLOC SOCKET [VERSION]', `deregister TYPE NAME
# ALLOC'), made offline in one process; the test dies when one fails.
state_script() { harness script <"$1" || die "cannot prepare the state from $1"; }

# plugfs ARGS...: the CLI with this test's config.
plugfs() { "$PLUGFS_BIN" -c "$CFG" "$@"; }

# start_fake_systemd [MOUNT ARGS...]: `plugfs mount' under fake_fdstore.py
# (systemd's notify socket and file descriptor store, $T/sd), waits until it
# serves and the store holds its three fds.  Sets SD_PID (the stand-in) and
# pid (the daemon); store_is "NAMES " compares the stored names.
store_is() { [ "$(sort "$T/sd/store" 2>/dev/null | tr '\n' ' ')" = "$1" ]; }
start_fake_systemd() {
	mkdir -p "$T/sd"
	python3 "$PLUGFS_SOURCE_DIR/tests/integration/fake_fdstore.py" "$T/sd" \
		"$PLUGFS_BIN" -c "$CFG" mount "$@" >>"$DAEMON_LOG" 2>&1 &
	SD_PID=$!
	_PIDS+=("$SD_PID")
	wait_until --pid "$SD_PID" 60 "the daemon serves $MNT" mount_answers "$MNT" || exit 1
	wait_until --pid "$SD_PID" 10 "the store holds fuse, init and control" \
		store_is "control fuse init " || exit 1
	pid=$(cat "$T/sd/pid")
}

# bind_consumer DIR: bind-mounts the plugin directory DIR at $T/consumer, as
# a container would (undone on exit).
bind_consumer() {
	mkdir -p "$T/consumer"
	mount --bind "$1" "$T/consumer" || die "bind mount of $1"
	on_cleanup umount -l "$T/consumer"
}

# start_consumer ALLOC...: a consumer of a bind mount of a plugin directory
# at $T/consumer: loops connect() through $T/consumer/csi.sock in the
# background, a connect failing unless one of ALLOC answers, and times the
# longest stall between two good ones; returns once it made a good one.
# consumer_good: its good connects so far; consumer_moves_on WHAT: waits
# until it made two more (the second begun after the call), a check.  stop_consumer
# stops it and sets tried, failed and longest (ms), printing the first
# failures.
start_consumer() {
	(
		local tried=0 good=0 failed=0 longest=0 last=$EPOCHREALTIME now gap out a ok
		while [ ! -e "$T/consumer.stop" ]; do
			tried=$((tried + 1))
			ok=
			if out=$(demo_connect "$T/consumer/csi.sock" 2>&1); then
				for a in "$@"; do [ "$out" = "$a" ] && ok=1; done
			fi
			if [ -n "$ok" ]; then
				now=$EPOCHREALTIME
				gap=$(((${now/./} - ${last/./}) / 1000))
				[ "$gap" -gt "$longest" ] && longest=$gap
				last=$now
				good=$((good + 1))
				echo "$good" >"$T/consumer.good"
			else
				failed=$((failed + 1))
				echo "connect $tried: $out" >>"$T/consumer.log"
			fi
		done
		echo "$tried $failed $longest" >"$T/consumer.out"
	) &
	_CONSUMER_PID=$!
	_PIDS+=("$_CONSUMER_PID")
	wait_until --pid "$_CONSUMER_PID" 30 "the consumer connects through $T/consumer" \
		_consumer_past 1 || exit 1
}
consumer_good() {
	local n
	n=$(cat "$T/consumer.good" 2>/dev/null)
	echo "${n:-0}"
}
_consumer_past() { [ "$(consumer_good)" -ge "$1" ]; }
consumer_moves_on() {
	local n
	n=$(consumer_good)
	wait_until --pid "$_CONSUMER_PID" 30 "the consumer connects again $1" _consumer_past $((n + 2)) &&
		pass "the consumer connects again $1"
}
stop_consumer() {
	touch "$T/consumer.stop"
	wait "$_CONSUMER_PID"
	read -r tried failed longest <"$T/consumer.out"
	[ -s "$T/consumer.log" ] && head -n 5 "$T/consumer.log" | sed 's/^/#   /'
	return 0
}

# --- A mount that outlives its process (test_fs_fdstore, test_fs_reexec,
# test_fs_keepmount) ---

# outlive_setup NAME START [ARGS...]: the config, two demo plugins a0 and a1
# ($T/run/aN/csi.sock), the daemon started by START ARGS (start_daemon,
# start_fake_systemd ...), csi-node/NAME registered to a0, its directory
# bind-mounted at $T/consumer and a consumer looping through it
# (start_consumer a0 a1).  Sets pid, the daemon's.
outlive_setup() {
	local name=$1
	shift
	write_config
	start_demo_plugin "$T/run/a0/csi.sock" a0
	start_demo_plugin "$T/run/a1/csi.sock" a1
	"$@"
	pid=${DAEMON_PID:-$pid}
	plugfs register --type csi-node --name "$name" --alloc a0 --socket "$T/run/a0/csi.sock" \
		>/dev/null || die "first registration"
	bind_consumer "$MNT/plugins/csi-node/$name"
	check_eq "the bind mount reaches a0" a0 "$(demo_connect "$T/consumer/csi.sock" 2>&1)"
	start_consumer a0 a1
}

# resumed: how many times the daemon log says a FUSE connection was
# resumed; resumed_ge N: at least N.
resumed() { grep -c "resumed the FUSE connection" "$DAEMON_LOG"; }
resumed_ge() { [ "$(resumed)" -ge "$1" ]; }

# start_switch_load NAME: a client switching csi-node/NAME between a0 and
# a1 (registering each in turn) and a reader looping readlink, ls and cat
# through $MNT/plugins/csi-node/NAME, in the background.  stop_switch_load
# stops them and sets regs (registrations sent), regfail (of them failed)
# and readfail (reader rounds with a failure), printing the first errors.
start_switch_load() {
	local e=$MNT/plugins/csi-node/$1
	rm -f "$T/switch.stop"
	(
		n=0
		while [ ! -e "$T/switch.stop" ]; do
			a=a$((n % 2))
			plugfs register --type csi-node --name "$1" --alloc "$a" \
				--socket "$T/run/$a/csi.sock" >/dev/null 2>>"$T/switch.err" ||
				echo "register $n failed" >>"$T/switch.fail"
			n=$((n + 1))
		done
		echo "$n" >"$T/switch.out"
	) &
	_SWITCH_PID=$!
	_PIDS+=("$_SWITCH_PID")
	(
		bad=0
		while [ ! -e "$T/switch.stop" ]; do
			readlink "$e/csi.sock" >/dev/null && ls "$e/allocs" >/dev/null &&
				cat "$e/info" >/dev/null || bad=$((bad + 1))
		done
		echo "$bad" >"$T/reader.out"
	) 2>>"$T/reader.err" &
	_READER_PID=$!
	_PIDS+=("$_READER_PID")
}
stop_switch_load() {
	touch "$T/switch.stop"
	wait "$_SWITCH_PID" "$_READER_PID"
	regs=$(cat "$T/switch.out")
	regfail=$(cat "$T/switch.fail" 2>/dev/null | wc -l)
	readfail=$(cat "$T/reader.out")
	{ head -n 10 "$T/switch.fail" "$T/switch.err" "$T/reader.err"; } 2>/dev/null | sed 's/^/#   /'
	return 0
}

# finish: the last line of every test.  The daemon log's check, then the
# summary; the test fails when a check failed, and also when none of its own
# checks passed (a script that checked nothing proved nothing: the daemon
# log's check does not count).
finish() {
	local own=$_PASSED
	[ -f "$DAEMON_LOG" ] && check_daemon_log
	if [ "$own" -eq 0 ]; then
		echo "not ok - $_TEST: no check passed (a test that checks nothing fails)"
		_FAILED=$((_FAILED + 1))
	fi
	echo "$_TEST: $_PASSED passed, $_FAILED failed"
	[ "$_FAILED" -eq 0 ]
	exit $?
}
