#!/usr/bin/env bash
# A table of bad inputs through the CLI and through the raw control socket:
# each is answered with the right exit code, error code and a message naming
# the field and the rule; nothing is stored; the daemon keeps serving.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
write_config
printf 'socket_roots = %s/alloc\n' "$T" >>"$CFG"
start_daemon
demo a0

S=$(sock_of a0)
long=$(printf 'n%.0s' $(seq 129))

# cli EXIT NEEDLE ARGS...: plugfs ARGS exits EXIT and stderr holds NEEDLE.
cli() {
	local want=$1 needle=$2 rc
	shift 2
	plugfs "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" = "$want" ] && grep -qF -- "$needle" "$T/err"; then
		pass "CLI $* -> exit $want, $needle"
	else
		fail "CLI $*: expected exit $want and [$needle], got exit $rc: $(cat "$T/err")"
	fi
}
R=(register --type csi-node --alloc a0)
cli 1 "plugfs register: name" "${R[@]}" --name 'a/b' --socket "$S"
cli 1 "plugfs register: name" "${R[@]}" --name '..' --socket "$S"
cli 1 "plugfs register: name" "${R[@]}" --name '.hidden' --socket "$S"
cli 1 "plugfs register: name" "${R[@]}" --name "$long" --socket "$S"
cli 1 "plugfs register: version" "${R[@]}" --name ok --socket "$S" --version $'1\n2'
cli 1 "plugfs register: type \`csi-foo': must be one of the configured types (csi-controller, csi-node)" register --type csi-foo --name ok --alloc a0 --socket "$S"
cli 1 "csi-foo" register --type csi-foo --name ok --alloc a0 --socket "$S"
cli 1 "plugfs register: socket" "${R[@]}" --name ok --socket alloc/a0/csi.sock
cli 1 "plugfs register: socket" "${R[@]}" --name ok --socket /elsewhere/csi.sock
cli 1 "must be under one of the socket roots" "${R[@]}" --name ok --socket /elsewhere/csi.sock
cli 1 "plugfs register: field \`socket' must not be under the plugfs mountpoint $MNT" "${R[@]}" --name ok --socket "$MNT/plugins/csi-node/x/csi.sock"
cli 1 "plugfs register: socket" "${R[@]}" --name ok --socket "$T/alloc/../alloc/a0/csi.sock"
cli 1 "plugfs register: field \`kind' must be controller, node or monolith, got \`sideways'" "${R[@]}" --name ok --socket "$S" --kind sideways
cli 1 "plugfs register: option" "${R[@]}" --name ok --socket "$S" --option 'bad key=1'
cli 1 "plugfs register: alloc" register --type csi-node --name ok --alloc 'a b' --socket "$S"
cli 2 "--option \`novalue' must be KEY=VALUE" "${R[@]}" --name ok --socket "$S" --option novalue
cli 2 "--option \`k' is given twice" "${R[@]}" --name ok --socket "$S" --option k=1 --option k=2
cli 2 "--name is required" "${R[@]}" --socket "$S"
cli 2 "--socket is required" "${R[@]}" --name ok
cli 2 "unknown option \`--frobnicate'" register --frobnicate
cli 2 "option \`--name' needs an argument" register --name
cli 2 "--type and --name go together" deregister --type csi-node --alloc a0
cli 2 "--alloc is required" deregister --type csi-node --name ok
cli 2 "expected TYPE and NAME, got 1 argument" show csi-node
cli 2 "--timeout \`soon' must be a number of seconds" wait csi-node ok --timeout soon
cli 1 "plugfs wait: field \`timeout' must be between 0 and 86400 seconds" wait csi-node ok --timeout -1
# One wording for an unknown type, whichever command.
cli 1 "plugfs show: type \`nope': must be one of the configured types (csi-controller, csi-node)" show nope ok
cli 1 "plugfs list: type \`nope': must be one of the configured types (csi-controller, csi-node)" list --type nope
cli 1 "plugfs watch: type \`nope': must be one of the configured types (csi-controller, csi-node)" watch --type nope
cli 1 "plugfs show: plugin csi-node/ok has no registration" show csi-node ok

# rawcase CODE NEEDLE LINE: the raw LINE is answered with CODE and NEEDLE.
rawcase() {
	local code=$1 needle=$2 resp got msg
	resp=$(printf '%s\n' "$3" | "$CTLRAW" "$CTL")
	got=$(jq -r .error.code <<<"$resp" 2>/dev/null)
	msg=$(jq -r .error.message <<<"$resp" 2>/dev/null)
	if [ "$got" = "$code" ] && grep -qF -- "$needle" <<<"$msg"; then
		pass "raw ${3:0:60} -> $code, $needle"
	else
		fail "raw ${3:0:60}: expected $code [$needle], got: $resp"
	fi
}
G='"types":["csi-node"],"name":"ok","alloc":"a0","socket":"'"$S"'"'
rawcase invalid_argument "malformed JSON" '{"op":"list"'
rawcase invalid_argument "malformed JSON" 'hello'
rawcase invalid_argument "malformed JSON" '{"op":"list","op":"status"}'
rawcase invalid_argument "a request must be a JSON object, got an array" '["op","list"]'
rawcase invalid_argument "field \`op' is required" '{"type":"csi-node"}'
rawcase invalid_argument "unknown op \`drop_tables'" '{"op":"drop_tables"}'
rawcase invalid_argument "register: unknown field \`colour'; accepted: op, id, types, name" '{"op":"register",'"$G"',"colour":"red"}'
rawcase invalid_argument "register: field \`name' must be a string, got a number" '{"op":"register","types":["csi-node"],"name":5,"alloc":"a0","socket":"/x"}'
rawcase invalid_argument "register: field \`types' must be an array of strings, got a string" '{"op":"register","types":"csi-node","name":"ok","alloc":"a0","socket":"/x"}'
rawcase invalid_argument "register: option \`k' must be a string, got a number" '{"op":"register",'"$G"',"options":{"k":1}}'
rawcase invalid_argument "register: name" '{"op":"register","types":["csi-node"],"name":"a\nb","alloc":"a0","socket":"'"$S"'"}'
rawcase invalid_argument "register: socket" '{"op":"register","types":["csi-node"],"name":"ok","alloc":"a0","socket":"'"$S"'\u0007"}'
rawcase invalid_argument "malformed JSON" '{"op":"register","types":["csi-node"],"name":"a\u0000b","alloc":"a0","socket":"/x"}'
rawcase invalid_argument "deregister: field \`alloc' is required" '{"op":"deregister","type":"csi-node","name":"ok"}'
rawcase invalid_argument "wait: field \`timeout' must be a number of seconds, got a string" '{"op":"wait","type":"csi-node","name":"ok","timeout":"1"}'
rawcase invalid_argument "status: unknown field \`verbose'" '{"op":"status","verbose":true}'
rawcase invalid_argument "field \`id' must be a string or an integer, got an object" '{"op":"status","id":{}}'

# A line over 64 KiB: an error, the line is discarded, the connection serves
# the next request.
big=$(head -c 70000 /dev/zero | tr '\0' ' ')
resp=$(printf '{"op":"list",%s"x":1}\n{"op":"status","id":"next"}\n' "$big" | "$CTLRAW" "$CTL")
check_eq "an overlong line gets one error and the next line an answer" 2 "$(wc -l <<<"$resp")"
check "the overlong line is invalid_argument naming the limit" bash -c "head -n1 <<<'$resp' | jq -e '.error.code == \"invalid_argument\" and (.error.message | test(\"longer than 65536 bytes\"))' >/dev/null"
check_eq "the request after it is served" next "$(tail -n1 <<<"$resp" | jq -r .id)"

# An id is echoed on success and on error.
check_eq "id is echoed" 7 "$(raw '{"op":"status","id":7}' | jq .id)"
check_eq "id is echoed on errors" '"x"' "$(raw '{"op":"nope","id":"x"}' | jq -c .id)"

# Nothing was stored; the daemon is alive and serving.
check_eq "nothing was stored" '{"plugins":[]}' "$(plugfs list --json | jq -c .)"
check_eq "no plugin directory appeared" "" "$(ls "$MNT/plugins/csi-node")"
plugfs status >/dev/null
check_eq "the daemon still serves" 0 $?
check "the daemon process is alive" kill -0 "$DAEMON_PID"
reg csi-node fine a0 --version 1.2.3 --kind monolith --option zone=eu-1 --option fs=ext4
check_eq "and a good request still works" a0 "$(demo_connect "$MNT/plugins/csi-node/fine/csi.sock")"
got=$(plugfs show csi-node fine --json | jq -c '.registrations[0] | [.version, .kind, .options]')
check_eq "version, kind and options are stored as given" '["1.2.3","monolith",{"fs":"ext4","zone":"eu-1"}]' "$got"
# Registering the same data again changes nothing; new data updates in place.
seq_before=$(plugfs show csi-node fine --json | jq '.registrations[0].seq')
reg csi-node fine a0 --version 1.2.4 --kind monolith --option zone=eu-1 --option fs=ext4
got=$(plugfs show csi-node fine --json | jq -c '.registrations[0] | [.version, .seq]')
check_eq "a re-registration updates in place" "[\"1.2.4\",$seq_before]" "$got"
finish
