#!/usr/bin/env bash
# A non-root user (nobody) can ls and readlink through the mount when
# allow_other is on, and cannot when it is off.
. "$(dirname "$0")/lib.sh"
require_fuse
command -v setpriv >/dev/null || die "setpriv (util-linux) is needed"

S=$T/sockets
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

write_config
harness register csi-node ebs a0 "$S/a0/csi.sock" || die "prepare state"
start_daemon
E=$MNT/plugins/csi-node/ebs
check_eq "allow_other=true: nobody can ls" "allocs csi.sock info" "$(as_nobody ls "$E" | xargs)"
check_eq "allow_other=true: nobody can readlink" "$S/a0/csi.sock" "$(as_nobody readlink "$E/csi.sock")"
check_eq "allow_other=true: nobody can read info" 1 "$(as_nobody cat "$E/info" | wc -l)"
stop_daemon

write_config
sed -i 's/^allow_other = true/allow_other = false/' "$CFG"
start_daemon
check_eq "allow_other=false: root still reads" "$S/a0/csi.sock" "$(readlink "$E/csi.sock")"
as_nobody ls "$E" >"$T/out" 2>&1
check "allow_other=false: nobody cannot ls" test $? -ne 0
check "allow_other=false: ls says permission denied" grep -q "Permission denied" "$T/out"
as_nobody readlink -v "$E/csi.sock" >"$T/out" 2>&1
check "allow_other=false: nobody cannot readlink" test $? -ne 0
check "allow_other=false: readlink says permission denied" grep -q "Permission denied" "$T/out"
stop_daemon
finish
