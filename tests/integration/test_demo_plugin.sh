#!/usr/bin/env bash
# plugfs-demo-plugin: server and --connect client, argument errors, stale and
# live sockets, clean exit on SIGTERM/SIGINT.  No FUSE needed.
. "$(dirname "$0")/lib.sh"
DEMO=$PLUGFS_DEMO_PLUGIN
[ -x "$DEMO" ] || die "demo plugin not built at $DEMO"

# --- usage ---
"$DEMO" --help >"$T/out"
check_eq "--help exits 0" 0 $?
check "--help documents --socket, --alloc, --once, --connect" \
	grep -q -- '--socket PATH --alloc ID \[--once\]' "$T/out"
check "--help documents --connect" grep -q -- '--connect PATH' "$T/out"

expect_usage() { # DESCRIPTION REGEX ARGS...
	local d=$1 re=$2 rc
	shift 2
	"$DEMO" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	check_eq "$d: exit 2" 2 "$rc"
	check "$d: message names the problem" grep -Eq -- "$re" "$T/err"
	check_eq "$d: nothing on stdout" "" "$(cat "$T/out")"
}
expect_usage "no arguments" '--socket PATH is required'
expect_usage "no --alloc" '--alloc ID is required' --socket "$T/s.sock"
expect_usage "no --socket" '--socket PATH is required' --alloc a0
expect_usage "empty alloc" "--alloc: \`' must be 1-128 printable" --socket "$T/s.sock" --alloc ''
expect_usage "alloc with a space" "--alloc: \`a b' must be" --socket "$T/s.sock" --alloc 'a b'
expect_usage "alloc too long" '--alloc: .* must be 1-128' --socket "$T/s.sock" --alloc "$(printf 'a%.0s' $(seq 129))"
long="$T/$(printf 'd%.0s' $(seq 120))/csi.sock"
expect_usage "socket path over sun_path" 'longer than 107 bytes' --socket "$long" --alloc a0
check "too long path: nothing created" test ! -e "$long"
expect_usage "unknown option" "unrecognized option '--bogus'" --bogus
expect_usage "option without its value" "requires an argument" --socket
expect_usage "extra argument" "unexpected argument \`extra'" --socket "$T/s.sock" --alloc a0 extra
expect_usage "--connect with --alloc" '--connect cannot be combined' --connect "$T/s.sock" --alloc a0
expect_usage "--wait without --connect" '--wait only applies to --connect' --socket "$T/s.sock" --alloc a0 --wait 1
expect_usage "--wait not a number" "--wait: \`soon' is not a number" --connect "$T/s.sock" --wait soon
check "usage errors created no socket" test ! -e "$T/s.sock"

# --- serving: parent directories are created, every connection answered ---
S=$T/alloc/0a1b2c/csi.sock
start_demo_plugin "$S" 0a1b2c-node
P0=$DEMO_PID
check "parent directory created" test -d "$T/alloc/0a1b2c"
check "socket file is a socket" test -S "$S"
check_eq "connection answered with the alloc id" "0a1b2c-node" "$(demo_connect "$S")"
check_eq "answer ends in exactly one newline" "0a1b2c-node|" "$(demo_connect "$S" | tr '\n' '|')"
for _ in 1 2 3 4 5; do out=$(demo_connect "$S") || break; done
check_eq "five more connections answered" "0a1b2c-node" "$out"
ln -s "$S" "$T/link.sock"
check_eq "--connect follows a symlink (like csi.sock)" "0a1b2c-node" "$(demo_connect "$T/link.sock")"

# --- a live server on the path is not replaced ---
"$DEMO" --socket "$S" --alloc intruder 2>"$T/err"
check_eq "second server on a live socket: exit 1" 1 $?
check "second server: says another server listens" grep -q 'another server is listening there' "$T/err"
check_eq "first server still answers" "0a1b2c-node" "$(demo_connect "$S")"

# --- SIGTERM: exit 0, socket removed ---
kill -TERM "$P0"
wait "$P0"
check_eq "SIGTERM: exit 0" 0 $?
check "SIGTERM: socket removed" test ! -e "$S"
"$DEMO" --connect "$S" 2>"$T/err"
check_eq "--connect to a missing socket: exit 1" 1 $?
check "--connect names the path and the reason" grep -q "cannot connect to $S: No such file or directory" "$T/err"

# --- a stale socket (server killed with SIGKILL) is replaced ---
start_demo_plugin "$S" a-old
kill -KILL "$DEMO_PID"
wait "$DEMO_PID" 2>/dev/null
check "SIGKILL leaves a stale socket file" test -S "$S"
start_demo_plugin "$S" a-new
P1=$DEMO_PID
check_eq "stale socket replaced by the new server" "a-new" "$(demo_connect "$S")"

# --- a server removes only its own socket ---
rm -f "$S"
start_demo_plugin "$S" a-newer
P2=$DEMO_PID
kill -INT "$P1"
wait "$P1"
check_eq "SIGINT: exit 0" 0 $?
check_eq "an old server leaves the new server's socket alone" "a-newer" "$(demo_connect "$S")"
kill -TERM "$P2"
wait "$P2"

# --- --once ---
"$DEMO" --socket "$T/once.sock" --alloc once-1 --once 2>/dev/null &
P3=$!
_PIDS+=("$P3")
check_eq "--once answers" "once-1" "$("$DEMO" --connect "$T/once.sock" --wait 5)"
wait "$P3"
check_eq "--once: exit 0 after one connection" 0 $?
check "--once: socket removed" test ! -e "$T/once.sock"

# --- --wait retries until the server comes up ---
( sleep 0.5; exec "$DEMO" --socket "$T/late.sock" --alloc late --once 2>/dev/null ) &
_PIDS+=($!)
check_eq "--connect --wait waits for a late server" "late" "$("$DEMO" --connect "$T/late.sock" --wait 10)"
start=$(date +%s%N)
"$DEMO" --connect "$T/never.sock" --wait 0.3 2>/dev/null
rc=$?
el=$(( ($(date +%s%N) - start) / 1000000 ))
check_eq "--connect --wait on a missing socket: exit 1" 1 "$rc"
check "--connect --wait retried for about the time given ($el ms)" test "$el" -ge 300

# --- bind and path failures ---
echo data >"$T/file"
"$DEMO" --socket "$T/file" --alloc a0 2>"$T/err"
check_eq "path is a regular file: exit 1" 1 $?
check "regular file: refused with a reason" grep -q "exists and is not a socket; not replacing it" "$T/err"
check_eq "regular file left untouched" "data" "$(cat "$T/file")"
"$DEMO" --socket "$T/file/sub/csi.sock" --alloc a0 2>"$T/err"
check_eq "parent cannot be created: exit 1" 1 $?
check "parent cannot be created: one clear line" \
	bash -c "[ \$(wc -l <'$T/err') -eq 1 ] && grep -q 'cannot create the directory of $T/file/sub/csi.sock: Not a directory' '$T/err'"
finish
