#!/usr/bin/env bash
# The tree of a state with several types, plugins and allocations: ls, stat,
# readlink of csi.sock and of each allocs/<alloc>, cat info; connect()
# through csi.sock reaches the right allocation; ENOENT and EROFS.
. "$(dirname "$0")/lib.sh"
require_fuse
write_config

S=$T/sockets
# The longest target a registration may have (PATH_MAX - 1 = 4095 bytes, in
# 255-byte components): readlink must hand it over whole, never more.
comp=$(printf 'c%.0s' $(seq 254))
long=""
while [ $((${#long} + 255)) -le 4095 ]; do long+="/$comp"; done
long+=/$(printf 'x%.0s' $(seq $((4095 - ${#long} - 1))))
state_register csi-node ebs a0 "$S/a0/csi.sock" 1.0.0
state_register csi-node ebs a1 "$S/a1/csi.sock" 1.1.0
state_register csi-controller ebs a1 "$S/a1/csi.sock" 1.1.0
state_register csi-node nfs n0 "$S/n0/csi.sock"
state_register csi-node big b0 "$long"
start_demo_plugin "$S/a0/csi.sock" a0
start_demo_plugin "$S/a1/csi.sock" a1
start_demo_plugin "$S/n0/csi.sock" n0
start_daemon

P=$MNT/plugins
E=$P/csi-node/ebs
check_eq "the root holds only plugins" "plugins" "$(ls -A "$MNT" | xargs)"
check_eq "one directory per configured type" "csi-controller csi-node" "$(ls "$P" | xargs)"
check_eq "plugins of csi-node" "big ebs nfs" "$(ls "$P/csi-node" | xargs)"
check_eq "plugins of csi-controller" "ebs" "$(ls "$P/csi-controller" | xargs)"
check_eq "readdir lists . and .." ". .. allocs csi.sock info" "$(ls -a "$E" | xargs)"
check_eq "allocs/ lists every registration" ". .. a0 a1" "$(ls -a "$E/allocs" | xargs)"

check_eq "csi.sock points at the active (newest) alloc" "$S/a1/csi.sock" "$(readlink "$E/csi.sock")"
check_eq "allocs/a0" "$S/a0/csi.sock" "$(readlink "$E/allocs/a0")"
check_eq "allocs/a1" "$S/a1/csi.sock" "$(readlink "$E/allocs/a1")"
check_eq "nfs csi.sock" "$S/n0/csi.sock" "$(readlink "$P/csi-node/nfs/csi.sock")"
check_eq "nfs allocs/n0" "$S/n0/csi.sock" "$(readlink "$P/csi-node/nfs/allocs/n0")"
check_eq "controller csi.sock" "$S/a1/csi.sock" "$(readlink "$P/csi-controller/ebs/csi.sock")"

# Attributes: mode, type, owner, link count, size.
st() { stat -c '%a %F %U:%G %h %s' "$1"; }
check_eq "root" "555 directory root:root 3 0" "$(st "$MNT")"
check_eq "plugins/: 0555, 2 + 2 types" "555 directory root:root 4 0" "$(st "$P")"
check_eq "a type with three plugins" "555 directory root:root 5 0" "$(st "$P/csi-node")"
check_eq "a type with one plugin" "555 directory root:root 3 0" "$(st "$P/csi-controller")"
check_eq "a plugin directory" "555 directory root:root 3 0" "$(st "$E")"
check_eq "allocs/" "555 directory root:root 2 0" "$(st "$E/allocs")"
target=$S/a1/csi.sock
check_eq "csi.sock: a symlink, st_size = target length" "777 symbolic link root:root 1 ${#target}" \
	"$(st "$E/csi.sock")"
check_eq "allocs/a0 size" "$(printf %s "$S/a0/csi.sock" | wc -c)" "$(stat -c %s "$E/allocs/a0")"
check_eq "info: 0444 regular file, size = its length" \
	"444 regular file root:root 1 $(cat "$E/info" | wc -c)" "$(st "$E/info")"
check "stat follows csi.sock to the socket" test -S "$E/csi.sock"
now=$(date +%s)
m=$(stat -c %Y "$E/info")
check "info mtime is the last change, not in the future" test "$m" -le "$now" -a "$m" -gt $((now - 600))

# A 4095-byte target: whole through readlink(1), its length as st_size,
# and a readlink(2) with a smaller buffer gets a truncated copy (no overflow).
B=$P/csi-node/big
check_eq "a 4095-byte target is read whole" "$long" "$(readlink "$B/csi.sock")"
check_eq "... and through allocs/b0" "$long" "$(readlink "$B/allocs/b0")"
check_eq "... st_size is 4095" 4095 "$(stat -c %s "$B/csi.sock")"
check_eq "... a 100-byte readlink(2) gets its first 100 bytes" "${long:0:100}" \
	"$(python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(b"#" * 101)
n = libc.readlink(sys.argv[1].encode(), buf, 100)
assert n == 100 and buf.raw[100:101] == b"#", (n, buf.raw[100:])
print(buf.raw[:n].decode())' "$B/csi.sock")"
check_eq "... info carries it" "b0 $long - node" "$(cut -d' ' -f1-4 "$B/info")"

# info: one line per registration, active first.
re_time='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'
check_eq "info has one line per registration" 2 "$(wc -l <"$E/info")"
check "info line 1: active a1, socket, version, kind, RFC 3339 time, health" \
	grep -Eq "^a1 $S/a1/csi.sock 1\.1\.0 node $re_time alive\$" <(sed -n 1p "$E/info")
check "info line 2: a0" grep -Eq "^a0 $S/a0/csi.sock 1\.0\.0 node $re_time alive\$" <(sed -n 2p "$E/info")
check "info of a plugin without version says -" \
	grep -Eq "^n0 $S/n0/csi.sock - node $re_time alive\$" "$P/csi-node/nfs/info"
check "controller info says controller" grep -q "^a1 .* controller " "$P/csi-controller/ebs/info"

# connect() through the mount reaches the right allocation.
check_eq "connect via csi.sock reaches a1" a1 "$(demo_connect "$E/csi.sock")"
check_eq "connect via allocs/a0 reaches a0" a0 "$(demo_connect "$E/allocs/a0")"
check_eq "connect via nfs csi.sock reaches n0" n0 "$(demo_connect "$P/csi-node/nfs/csi.sock")"

# Anything not in the tree: ENOENT.
enoent() { expect_errno "$1" ENOENT "${@:2}"; }
enoent "unknown type" stat "$P/csi-nope"
enoent "unknown plugin" stat "$P/csi-node/nope"
enoent "unknown alloc" readlink -v "$E/allocs/zz"
enoent "unknown name at the root" stat "$MNT/other"
enoent "a plugin under the wrong type" stat "$P/csi-controller/nfs"

# Every mutating call: EROFS.
erofs() { expect_errno "$1" EROFS "${@:2}"; }
erofs "mkdir" mkdir "$P/new"
erofs "mkdir in a plugin" mkdir "$E/new"
erofs "touch (create)" touch "$E/new"
erofs "touch an existing file" touch "$E/info"
erofs "rm csi.sock" rm -f "$E/csi.sock"
erofs "rm allocs/a0" rm -f "$E/allocs/a0"
erofs "rmdir a type" rmdir "$P/csi-controller"
erofs "ln -s" ln -s /tmp "$E/link"
erofs "ln (hard)" ln "$E/info" "$E/info2"
erofs "mv a plugin" mv "$E" "$P/csi-node/ebs2"
erofs "mv a link" mv "$E/allocs/a0" "$E/allocs/a9"
erofs "chmod" chmod 700 "$P"
erofs "chown" chown nobody "$E/info"
erofs "mknod (a fifo)" mknod "$E/fifo" p
erofs "setfattr" setfattr -n user.plugfs -v 1 "$E/info"
erofs "setfattr on a directory" setfattr -n user.plugfs -v 1 "$E"
erofs "setfattr -x (removexattr)" setfattr -x user.plugfs "$E/info"
erofs "fallocate" fallocate -l 4096 "$E/info"
erofs "write into info" bash -c "echo x >'$E/info'"
erofs "append to info" bash -c "echo x >>'$E/info'"
erofs "truncate info" truncate -s 0 "$E/info"
check_eq "getfattr: no attributes" "" "$(getfattr -d "$E/info" 2>&1)"
check_eq "nothing changed" "allocs csi.sock info" "$(ls "$E" | xargs)"

# Above, the VFS refuses on the ro mount before plugfs is asked.  Root can
# remount it rw without asking the daemon (FUSE handles remount in the
# kernel): then each mutating request reaches plugfs, which answers EROFS.
check_eq "remount rw" 0 "$(mount -i -o remount,rw "$MNT" >/dev/null 2>&1; echo $?)"
erofs "rw: mkdir" mkdir "$E/new"
erofs "rw: touch (create)" touch "$E/new"
erofs "rw: touch an existing file (setattr)" touch "$E/info"
erofs "rw: mknod (a fifo)" mknod "$E/fifo" p
erofs "rw: rm csi.sock" rm -f "$E/csi.sock"
erofs "rw: rmdir a type" rmdir "$P/csi-controller"
erofs "rw: ln -s" ln -s /tmp "$E/link"
erofs "rw: ln (hard)" ln "$E/info" "$E/info2"
erofs "rw: mv a link" mv "$E/allocs/a0" "$E/allocs/a9"
erofs "rw: chmod" chmod 700 "$P"
erofs "rw: setfattr" setfattr -n user.plugfs -v 1 "$E/info"
erofs "rw: setfattr -x (removexattr)" setfattr -x user.plugfs "$E/info"
erofs "rw: write into info (open)" bash -c "echo x >'$E/info'"
erofs "rw: truncate info" truncate -s 0 "$E/info"
erofs "rw: fallocate" fallocate -l 4096 "$E/info"
check_eq "rw: nothing changed" "allocs csi.sock info" "$(ls "$E" | xargs)"

stop_daemon
finish
