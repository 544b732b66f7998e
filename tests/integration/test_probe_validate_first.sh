#!/usr/bin/env bash
# A `register' is validated whole before its socket is probed: a request
# refused for its socket (outside socket_roots, relative, with `..'), its
# name, its type or an option never makes the daemon (root) connect to a
# socket, let alone write a csi call into it.  recorder.py listens on each
# socket such a request names and counts the connections it accepts; a
# valid registration of a recorder socket under the roots is the control
# (it is connected to: the recorder sees what a probe does).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
ROOT=$T/roots
write_config "socket_roots = $ROOT" "[probe]" "mode = connect" "interval = 60" "timeout = 1" \
	"failures = 1"
mkdir -p "$T/cwd"
OUT=$T/outside/victim.sock DOTS=$T/outside/dots.sock REL=$T/cwd/rel.sock
OKS=$ROOT/ok/csi.sock BADNAME=$ROOT/badname/csi.sock BADTYPE=$ROOT/badtype/csi.sock
BADOPT=$ROOT/badopt/csi.sock
python3 "$PLUGFS_SOURCE_DIR/tests/integration/recorder.py" "$T/conns.log" "$OUT" "$DOTS" "$REL" \
	"$OKS" "$BADNAME" "$BADTYPE" "$BADOPT" >>"$T/recorder.log" 2>&1 &
_PIDS+=("$!")
wait_until 30 "the recorder listens" test -S "$BADOPT" || exit 1
# The daemon's working directory holds rel.sock: a relative path resolved
# against it would reach the recorder.
cd "$T/cwd" || die "cd $T/cwd"
start_daemon
cd / || die "cd /"
conns_to() { grep -c "^$1 accepted$" "$T/conns.log" 2>/dev/null || true; }
bytes_to() { awk -v s="$1" '$1 == s && $2 ~ /^[0-9]+$/ { n += $2 } END { print n + 0 }' "$T/conns.log" 2>/dev/null; }

# Through the CLI: a socket outside the roots, csi (HTTP/2 would be written).
plugfs register --type csi-node --name p --alloc a1 --socket "$OUT" --probe csi \
	>/dev/null 2>"$T/err1"
check_eq "a socket outside the roots is refused" 1 $?
check "it says why" grep -q "must be under one of the socket roots" "$T/err1"
# Over the raw protocol, what the CLI would refuse itself.
req() { printf '{"op":"register","types":["csi-node"],"name":"%s","alloc":"a1","socket":"%s","probe":"csi"%s}' "$1" "$2" "${3:-}"; }
raw "$(req p rel.sock)" >"$T/rel.out"
check "a relative socket is refused" grep -q "must be an absolute path" "$T/rel.out"
raw "$(req p "$ROOT/../outside/dots.sock")" >"$T/dots.out"
check "a socket with .. is refused" grep -q "must be normalised" "$T/dots.out"
raw "$(req 'bad name' "$BADNAME")" >"$T/name.out"
check "a bad name is refused" grep -q '"invalid_argument"' "$T/name.out"
raw "$(printf '{"op":"register","types":["nope"],"name":"p","alloc":"a1","socket":"%s","probe":"csi"}' "$BADTYPE")" >"$T/type.out"
check "an unknown type is refused" grep -q "must be one of the configured types" "$T/type.out"
raw "$(req p "$BADOPT" ',"options":{".x":"v"}')" >"$T/opt.out"
check "a bad option key is refused" grep -q '"invalid_argument"' "$T/opt.out"
# The control: a valid one is probed (the recorder sees its connections).
plugfs register --type csi-node --name p --alloc ok --socket "$OKS" --probe csi >/dev/null 2>&1
check_eq "a socket under the roots is accepted" 0 $?
# A register's first probe runs before its answer, so a probe of a refused
# request would have connected before the valid one was sent; the recorder
# names every connection made before the one it names (recorder.py).
wait_until 10 "the recorder saw the probe of the valid one" eval '[ "$(conns_to "$OKS")" -ge 1 ]'
for s in "$OUT" "$REL" "$DOTS" "$BADNAME" "$BADTYPE" "$BADOPT"; do
	n=$(conns_to "$s")
	echo "# connections to ${s#"$T"/}: $n ($(bytes_to "$s") bytes written into it)"
	check_eq "no connection to ${s#"$T"/}" 0 "$n"
done
check "nothing was stored but the valid one" \
	test "$(plugfs show csi-node p --json | jq -r '[.registrations[].alloc] | join(" ")')" = ok
finish
