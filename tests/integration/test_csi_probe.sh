#!/usr/bin/env bash
# The csi probe on its own (probe_csi_many through plugfs-test-csi-probe)
# against a real gRPC server (csi_plugin.py, python3-grpcio): ready true is
# alive, ready false is dead `not ready', ready absent is alive (the CSI
# spec), a gRPC error is dead with its status, GetPluginInfo's name is
# checked when one is expected, a missing socket and a refused one say so,
# and a plugin that accepts and never answers is dead after the timeout
# without delaying the good probe that runs beside it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/csi_lib.sh"
PROBE=$PLUGFS_BUILD_DIR/tests/integration/plugfs-test-csi-probe
[ -x "$PROBE" ] || die "$PROBE is missing: build the tests first"

csi_plugin "$T/ready.sock" --ready true --name csi.example.com
csi_plugin "$T/notready.sock" --ready false
csi_plugin "$T/absent.sock" --ready absent
csi_plugin "$T/switch.sock" --control "$T/switch.ctl"
csi_hang "$T/hang.sock"
# A socket file nobody listens on: refused.
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$T/refused.sock"

# outcome LINE-INDEX: "ok|dead error" of that line of $T/out.
outcome() { awk -v i="$1" '$1 == i { $1 = ""; $3 = ""; sub(/^ +/, ""); sub(/  +/, " "); print }' "$T/out"; }
took() { awk -v i="$1" '$1 == i { print $3 }' "$T/out"; }

"$PROBE" 1000 "$T/ready.sock" "$T/notready.sock" "$T/absent.sock" \
	"$T/ready.sock=csi.example.com" "$T/ready.sock=other.example.com" \
	"$T/missing.sock" "$T/refused.sock" >"$T/out"
check_eq "the probe program runs" 0 $?
sed 's/^/# /' "$T/out"
check_eq "ready true: alive" "ok -" "$(outcome 0)"
check_eq "ready false: dead, not ready" "dead not ready" "$(outcome 1)"
check_eq "ready absent: alive (the CSI spec)" "ok -" "$(outcome 2)"
check_eq "GetPluginInfo name as expected: alive" "ok -" "$(outcome 3)"
check_eq "GetPluginInfo name mismatch: dead" \
	"dead plugin name is csi.example.com, expected other.example.com" "$(outcome 4)"
check_eq "missing socket: no such file" "dead no such file" "$(outcome 5)"
check_eq "nobody listens: connection refused" "dead connection refused" "$(outcome 6)"
long=/tmp/$(printf 'x%.0s' $(seq 1 110))/csi.sock
check_eq "a path too long for sun_path: as the connect probe says" \
	"dead $(errno_message ENAMETOOLONG)" "$("$PROBE" 1000 "$long" | cut -d' ' -f2,4-)"

# Switched at run time through the control file.
printf 'false\n' >"$T/switch.ctl"
check_eq "switched to ready false: not ready" "dead not ready" \
	"$("$PROBE" 1000 "$T/switch.sock" | cut -d' ' -f2,4-)"
printf 'error 14 backend gone\n' >"$T/switch.ctl"
check_eq "a gRPC error: its status and message" "dead grpc status 14: backend gone" \
	"$("$PROBE" 1000 "$T/switch.sock" | cut -d' ' -f2,4-)"
printf 'true\n' >"$T/switch.ctl"
check_eq "switched back to ready true: alive" "ok -" \
	"$("$PROBE" 1000 "$T/switch.sock" | cut -d' ' -f2,4-)"

# One that accepts and never answers, beside a good one, in one call: the
# hung one is dead after the timeout (2 s), the good one answers long
# before it.  The upper bounds leave 1 s past the timeout (its overshoot
# here: 2 to 23 ms) and 1 s to the good probe (25 to 54 ms here): 40x.
"$PROBE" 2000 "$T/hang.sock" "$T/ready.sock" "$T/hang.sock=csi.example.com" >"$T/out"
sed 's/^/# /' "$T/out"
check_eq "never answers: dead, timeout" "dead timeout" "$(outcome 0)"
check "never answers: dead after the timeout, not before ($(took 0) ms)" \
	test "$(took 0)" -ge 1900 -a "$(took 0)" -le 3000
check_eq "the good probe beside it: alive" "ok -" "$(outcome 1)"
check "the good probe is not delayed by the hung one ($(took 1) ms)" test "$(took 1)" -lt 1000
check_eq "never answers with a name expected: timeout" "dead timeout" "$(outcome 2)"

# More than a window (PROBE_MAX_INFLIGHT = 64) of hung sockets and good
# ones: every hung one times out, every good one is alive.
args=()
for _ in $(seq 1 70); do args+=("$T/hang.sock" "$T/ready.sock"); done
"$PROBE" 1000 "${args[@]}" >"$T/out"
check_eq "140 probes: 70 timeouts" 70 "$(grep -c ' dead [0-9]* timeout$' "$T/out")"
check_eq "140 probes: 70 alive" 70 "$(grep -c ' ok ' "$T/out")"
finish
