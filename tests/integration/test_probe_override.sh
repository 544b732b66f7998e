#!/usr/bin/env bash
# A registration's own probe mode (plugfs register --probe MODE, and with
# csi an expected plugin name, --csi-name NAME) over its type's: used by the
# prober and the first probe, stored with the registration (a restart keeps
# it), shown by show and list --json and the state dump, read by state
# import.  Bad combinations are refused with a message naming the rule.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
. "$(dirname "$0")/csi_lib.sh"
require_fuse
write_config "[probe]" "mode = connect" "interval = 0.2" "timeout = 0.5" "failures = 1"
start_daemon

reg_of() { plugfs show csi-node p --json | jq -c --arg a "$1" '.registrations[] | select(.alloc == $a)'; }
health_of() { reg_of "$1" | jq -r '"\(.health.state) \(.health.error)"'; }
is_health() { [ "$(health_of "$1")" = "$2" ]; }

# A plugin that accepts connections but whose Probe says not ready: alive
# by its type's connect, dead by its own csi.
csi_plugin "$(sock_of a1)" --ready false --name csi.example.com
reg csi-node p a1
wait_until 5 "a1 alive by connect" is_health a1 "alive null"
check_eq "no probe of its own: show --json has no probe field" "null null" \
	"$(reg_of a1 | jq -r '"\(.probe) \(.csi_name)"')"
reg csi-node p a1 --probe csi
wait_until 5 "a1 dead by its own csi probe" is_health a1 "dead not ready"
check_eq "show --json has its probe" csi "$(reg_of a1 | jq -r .probe)"
check_eq "list --json has its probe" csi \
	"$(plugfs list --json | jq -r '.plugins[] | select(.name == "p") | .registrations[0].probe')"
check "show (human) says its probe" grep -q "probe csi (its own" <(plugfs show csi-node p)

# The expected plugin name: a mismatch is dead at its first probe, the
# right name alive.
csi_plugin "$(sock_of a2)" --ready true --name csi.example.com
plugfs register --type csi-node --name p --alloc a2 --socket "$(sock_of a2)" --probe csi \
	--csi-name other.example.com >"$T/out" 2>"$T/err"
check_eq "register with a wrong name exits 0" 0 $?
check "register warns that the name differs" \
	grep -q "warning: a2 is dead (plugin name is csi.example.com, expected other.example.com)" "$T/err"
check_eq "show --json has its csi_name" other.example.com "$(reg_of a2 | jq -r .csi_name)"
reg csi-node p a2 --probe csi --csi-name csi.example.com
wait_until 5 "a2 alive with the right name" is_health a2 "alive null"
check "a2 active" test "$(plugfs show csi-node p --json | jq -r .active)" = a2
# Back to its type's mode (none of its own): connect again.
reg csi-node p a1
wait_until 5 "a1 back to connect: alive" is_health a1 "alive null"
reg csi-node p a1 --probe none
check_eq "--probe none: stored" none "$(reg_of a1 | jq -r .probe)"
wait_until 5 "--probe none: unknown (not probed)" is_health a1 "unknown null"

# Refused, nothing changed.
plugfs register --type csi-node --name p --alloc a3 --socket "$(sock_of a3)" --csi-name x.y \
	>/dev/null 2>"$T/err"
check_eq "--csi-name without --probe csi: usage error" 2 $?
check "it says why" grep -q -- "--csi-name needs --probe csi" "$T/err"
plugfs register --type csi-node --name p --alloc a3 --socket "$(sock_of a3)" --probe grpc \
	>/dev/null 2>"$T/err"
check_eq "--probe grpc: usage error" 2 $?
check "it names the modes" grep -q -- "--probe \`grpc' must be none, connect or csi" "$T/err"
plugfs register --type csi-node --name p --alloc a3 --socket "$(sock_of a3)" --probe csi \
	--csi-name -bad >/dev/null 2>"$T/err"
check_eq "a bad --csi-name: usage error" 2 $?
check "it gives the name rule" grep -q "must be a CSI plugin name" "$T/err"
check_eq "raw: csi_name without probe csi is refused" invalid_argument \
	"$(raw '{"op":"register","types":["csi-node"],"name":"p","alloc":"a3","socket":"'"$(sock_of a3)"'","csi_name":"x.y"}' | jq -r .error.code)"
check "raw: it says why" grep -q "csi_name: only with probe csi" \
	<(raw '{"op":"register","types":["csi-node"],"name":"p","alloc":"a3","socket":"'"$(sock_of a3)"'","probe":"connect","csi_name":"x.y"}')
check_eq "raw: probe grpc is refused" invalid_argument \
	"$(raw '{"op":"register","types":["csi-node"],"name":"p","alloc":"a3","socket":"'"$(sock_of a3)"'","probe":"grpc"}' | jq -r .error.code)"
check_eq "nothing of a3 was stored" "a2 a1" "$(plugfs show csi-node p --json | jq -r '[.registrations[].alloc] | join(" ")')"

# Kept across a restart, and used by the start-up round.
stop_daemon
start_daemon
check_eq "after a restart: a2's probe and name" "csi csi.example.com" \
	"$(reg_of a2 | jq -r '"\(.probe) \(.csi_name)"')"
check_eq "after a restart: a1's probe" none "$(reg_of a1 | jq -r .probe)"
check_eq "after a restart: a2 probed alive at start" "alive null" "$(health_of a2)"
stop_daemon

# The offline dump carries it; import reads it (plugfs's keys Probe and
# CSIName beside the legacy PluginInfo fields).
check_eq "state dump --json has the probe" "csi csi.example.com" \
	"$(plugfs state dump --json | jq -r '.plugins[0].registrations[] | select(.alloc == "a2") | "\(.probe) \(.csi_name)"')"
check "state dump (human) has the probe" grep -q "probe       csi  plugin name csi.example.com" \
	<(plugfs state dump)
check "state check passes" plugfs state check
cat >"$T/legacy.json" <<JSON
{"Plugins": {"csi-controller": {"q": {"Name": "q", "AllocID": "b1",
  "ConnectionInfo": {"SocketPath": "$T/alloc/b1/csi.sock"},
  "Probe": "csi", "CSIName": "q.example.com"}}}}
JSON
plugfs state import "$T/legacy.json" >/dev/null
check_eq "state import reads Probe and CSIName" "csi q.example.com" \
	"$(plugfs state dump --json | jq -r '.plugins[] | select(.name == "q") | .registrations[0] | "\(.probe) \(.csi_name)"')"
printf '{"Plugins": {"csi-controller": {"r": {"AllocID": "c1", "ConnectionInfo": {"SocketPath": "/run/c1.sock"}, "CSIName": "r.example.com"}}}}' >"$T/bad.json"
plugfs state import "$T/bad.json" >/dev/null 2>"$T/err"
check_eq "state import of CSIName without Probe csi fails" 1 $?
check "it says why" grep -q "csi_name: only with probe csi" "$T/err"

# A daemon that probes nothing refuses a probe of one's own.
write_config "[probe]" "mode = none"
start_daemon
plugfs register --type csi-node --name p --alloc a4 --socket "$(sock_of a2)" --probe csi \
	>/dev/null 2>"$T/err"
check_eq "mode none everywhere: --probe csi is refused" 1 $?
check "it says why" grep -q "this daemon probes nothing" "$T/err"
stop_daemon
finish
