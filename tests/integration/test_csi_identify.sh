#!/usr/bin/env bash
# Discovery's identification on its own (probe_csi_identify through
# plugfs-test-csi-probe --identify) against real gRPC plugins (csi_plugin.py,
# python3-grpcio) in their flavours: GetPluginInfo's name and version,
# GetPluginCapabilities' CONTROLLER_SERVICE, NodeGetInfo answered or
# UNIMPLEMENTED; a name plugfs would refuse handed back as sent (the caller
# refuses it); a plugin that answers only after a while; one that accepts
# and never answers, beside good ones, in and beyond one window.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/csi_lib.sh"
PROBE=$PLUGFS_BUILD_DIR/tests/integration/plugfs-test-csi-probe
[ -x "$PROBE" ] || die "$PROBE is missing: build the tests first"

csi_plugin "$T/node.sock" --flavour node --name node.example.com
csi_plugin "$T/ctl.sock" --flavour controller --name ctl.example.com
csi_plugin "$T/mono.sock" --flavour monolith --name mono.example.com
csi_plugin "$T/ident.sock" --name ident.example.com
csi_plugin "$T/bad.sock" --flavour node --name 'bad name!'
csi_plugin "$T/late.sock" --flavour node --name late.example.com --answer-after 2
csi_hang "$T/hang.sock"

# line INDEX: that line of $T/out without its index and time.
line() { awk -v i="$1" '$1 == i { $1 = ""; $3 = ""; sub(/^ +/, ""); sub(/  +/, " "); print }' "$T/out"; }
took() { awk -v i="$1" '$1 == i { print $3 }' "$T/out"; }

"$PROBE" --identify 2000 "$T/node.sock" "$T/ctl.sock" "$T/mono.sock" "$T/ident.sock" \
	"$T/bad.sock" "$T/missing.sock" >"$T/out"
check_eq "the identification runs" 0 $?
sed 's/^/# /' "$T/out"
check_eq "node flavour: NodeGetInfo answers, no controller service" \
	"ok name=node.example.com version=1.0.0 controller=0 node=1 -" "$(line 0)"
check_eq "controller flavour: CONTROLLER_SERVICE, NodeGetInfo UNIMPLEMENTED" \
	"ok name=ctl.example.com version=1.0.0 controller=1 node=0 -" "$(line 1)"
check_eq "monolith flavour: both" \
	"ok name=mono.example.com version=1.0.0 controller=1 node=1 -" "$(line 2)"
check_eq "identity only: GetPluginCapabilities and NodeGetInfo UNIMPLEMENTED, neither" \
	"ok name=ident.example.com version=1.0.0 controller=0 node=0 -" "$(line 3)"
check_eq "a name plugfs refuses is handed back as sent" \
	"ok name=bad name! version=1.0.0 controller=0 node=1 -" "$(line 4)"
check "a missing socket: no such file" grep -q '^5 dead [0-9]* name= version= controller=0 node=0 no such file$' "$T/out"

# A plugin whose socket is there before it answers: UNAVAILABLE, then, once
# it answers, identified.
"$PROBE" --identify 2000 "$T/late.sock" >"$T/out"
check_eq "not answering yet: its gRPC status" "dead grpc status 14: starting" \
	"$(line 0 | sed 's/ name=.* node=[01]//')"
wait_until 30 "the late plugin is identified" \
	sh -c '"$1" --identify 2000 "$2" | grep -q " ok .*name=late.example.com .*node=1 -$"' _ "$PROBE" "$T/late.sock"

# One that accepts and never answers, between good ones in one call: it
# times out, they are identified before it ends.
"$PROBE" --identify 1500 "$T/node.sock" "$T/hang.sock" "$T/mono.sock" >"$T/out"
sed 's/^/# /' "$T/out"
check_eq "never answers: timeout" "dead timeout" "$(line 1 | sed 's/ name=.* node=[01]//')"
check_eq "beside it: identified" "ok name=node.example.com version=1.0.0 controller=0 node=1 -" "$(line 0)"
check_eq "beside it: identified" "ok name=mono.example.com version=1.0.0 controller=1 node=1 -" "$(line 2)"
check "the good ones end before the hung one ($(took 0), $(took 2) < $(took 1) ms)" \
	test "$(took 0)" -lt "$(took 1)" -a "$(took 2)" -lt "$(took 1)"

# A gRPC server answers UNIMPLEMENTED at once, trailers only, and may reset
# the stream before the request's body is sent; libcurl 7.88 then fails the
# transfer with nothing of the answer ("Stream error in the HTTP/2 framing
# layer", a few calls in a hundred): the identification asks again.
args=()
for _ in $(seq 1 200); do args+=("$T/ident.sock"); done
"$PROBE" --identify 5000 "${args[@]}" >"$T/out"
check_eq "200 identifications answered UNIMPLEMENTED twice: all identified" 200 \
	"$(grep -c ' ok [0-9]* name=ident.example.com version=1.0.0 controller=0 node=0 -$' "$T/out")"
grep -v ' ok ' "$T/out" | head -3 | sed 's/^/# /'

# More than a window (PROBE_MAX_INFLIGHT, 256 in flight) of hung plugins
# and good ones: 150 of each, interleaved.  The hung ones hold 150 slots
# for their whole timeout; the good ones go through the other slots, those
# past the first window included, and all end before the first hung one
# times out (a window refilled only once all of it has ended would make the
# last 44 wait for the hung ones).  10 s each: one python process answers
# the 450 calls of the good ones while the other tests run beside this one;
# the slowest took 3.1 s beside four busy loops on 2 cores (a CI run beside
# the other tests missed 1 of 70 at 2 s).
args=()
for _ in $(seq 1 150); do args+=("$T/hang.sock" "$T/ctl.sock"); done
"$PROBE" --identify 10000 "${args[@]}" >"$T/out"
check_eq "300 identifications: 150 timeouts" 150 "$(grep -c ' dead [0-9]* .* timeout$' "$T/out")"
check_eq "300 identifications: 150 controllers" 150 \
	"$(grep -c ' ok [0-9]* name=ctl.example.com version=1.0.0 controller=1 node=0 -$' "$T/out")"
slowest_ok=$(awk '$2 == "ok" && $3 > m { m = $3 } END { print m + 0 }' "$T/out")
first_timeout=$(awk '$2 == "dead" && (m == "" || $3 < m) { m = $3 } END { print m + 0 }' "$T/out")
echo "# slowest good one: $slowest_ok ms; first timeout: $first_timeout ms"
check "300 identifications: every good one ends before the first hung one times out" \
	test "$slowest_ok" -lt "$first_timeout"
grep -v -e ' ok ' -e ' timeout$' "$T/out" | head -5 | sed 's/^/# not identified: /'
finish
