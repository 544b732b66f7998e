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
sleep 0.3 # its READDIR is made and held
t0=$(date +%s%N)
plugfs deregister --type csi-node --name dc --alloc a0 >/dev/null || die "deregister a0"
t1=$(date +%s%N)
wait "$LS_PID"
echo "# the racing listing, begun before the deregistration: $(tr '\n' ' ' <"$T/racing")"
echo "# the deregistration took $(((t1 - t0) / 1000000)) ms (the READDIR is held 700 ms)"
check "the racing listing was made before the deregistration (it shows a0)" \
	grep -qx a0 "$T/racing"
# What keeps that reply out of a listing after the ok: the kernel takes the
# directory's lock for the invalidation of a name in it, which waits for the
# listing (the mtime alone does not: the kernel stamps an empty cache with
# the mtime of the listing that starts it).  A kernel that stops doing so
# fails here, and the listing cache must then go (fs_init).
check "the deregistration's invalidation waited for the listing in flight" \
	test "$(((t1 - t0) / 1000000))" -ge 250
check_eq "a listing begun after the acknowledgement does not show a0" "a1 a2" \
	"$(ls "$A" | sort | tr '\n' ' ' | sed 's/ $//')"
check_eq "nor does the next one" "a1 a2" "$(ls "$A" | sort | tr '\n' ' ' | sed 's/ $//')"
check_eq "the type directory lists the plugin" "dc" "$(ls "$MNT/plugins/csi-node")"

# A directory the kernel holds when its plugin goes (someone's working
# directory, an open fd): its cached listing goes with the plugin.
exec {held}<"$A" || die "open allocs/"
check_eq "the held allocs/ lists" "a1 a2" "$(ls "/proc/self/fd/$held/" | sort | tr '\n' ' ' | sed 's/ $//')"
plugfs deregister --type csi-node --name dc --alloc a1 >/dev/null || die "deregister a1"
check_eq "the held allocs/ lists a2 (cached again)" "a2" "$(ls "/proc/self/fd/$held/")"
plugfs deregister --type csi-node --name dc --alloc a2 >/dev/null || die "deregister a2"
check_eq "the plugin is gone" "" "$(ls "$MNT/plugins/csi-node")"
check_eq "the held allocs/ of the gone plugin lists nothing" "" "$(ls "/proc/self/fd/$held/" 2>&1)"
exec {held}<&-
stop_daemon
finish
