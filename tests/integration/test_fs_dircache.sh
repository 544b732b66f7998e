#!/usr/bin/env bash
# Directory listings cached by the kernel (fs_init: auto_inval_data, no
# opendir): a warm listing costs the daemon no request, a change drops the
# cached listing before its `ok', and a listing begun after the `ok' never
# comes from the cache of before it, also when a READDIR made before the
# change is still on its way: the test fault PLUGFS_FAULT_SLOW_READDIR_MS
# holds every READDIR reply, once made, so that a deregistration comes
# between the making and the reply (its invalidation of the name waits for
# the listing, which holds the directory's lock; fs/ops.c, fs_init).
. "$(dirname "$0")/lib.sh"
require_fuse

write_config "" "[probe]" "mode = none"
export PLUGFS_FAULT_SLOW_READDIR_MS=700
start_daemon
unset PLUGFS_FAULT_SLOW_READDIR_MS
A=$MNT/plugins/csi-node/dc/allocs
reg() { plugfs register --type csi-node --name dc --alloc "$1" --socket "$T/run/$1/csi.sock" >/dev/null; }
requests() { plugfs metrics | awk '$1 == "plugfs_fuse_requests_total" { print $2 }'; }

reg a0 || die "register a0"
reg a1 || die "register a1"
check_eq "a cold listing of allocs/" "a0 a1" "$(ls "$A" | sort | tr '\n' ' ' | sed 's/ $//')"
before=$(requests)
check_eq "a warm listing, from the kernel's cache" "a0 a1" \
	"$(ls "$A" | sort | tr '\n' ' ' | sed 's/ $//')"
after=$(requests)
echo "# daemon requests for a warm listing of allocs/: $((after - before))"
check_eq "a warm listing costs the daemon no request" 0 "$((after - before))"

# The race: a listing whose first READDIR is answered (a0 a1) before a0 goes,
# and lands after a0's deregistration was acknowledged.
reg a2 || die "register a2" # a change: the cache of allocs/ is dropped
ls "$A" >"$T/racing" 2>&1 &
LS_PID=$!
_PIDS+=("$LS_PID")
sleep 0.3 # its READDIR is made and held
plugfs deregister --type csi-node --name dc --alloc a0 >/dev/null || die "deregister a0"
wait_until 20 "the racing listing ends" bash -c "! kill -0 $LS_PID 2>/dev/null"
echo "# the racing listing, begun before the deregistration: $(tr '\n' ' ' <"$T/racing")"
check_eq "a listing begun after the acknowledgement does not show a0" "a1 a2" \
	"$(ls "$A" | sort | tr '\n' ' ' | sed 's/ $//')"
check_eq "nor does the next one" "a1 a2" "$(ls "$A" | sort | tr '\n' ' ' | sed 's/ $//')"
check_eq "the type directory lists the plugin" "dc" "$(ls "$MNT/plugins/csi-node")"
stop_daemon
finish
