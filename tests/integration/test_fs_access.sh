#!/usr/bin/env bash
# A non-root user (nobody) can ls and readlink through the mount when
# allow_other is on, and cannot when it is off.
. "$(dirname "$0")/lib.sh"
require_fuse
command -v setpriv >/dev/null || die "setpriv (util-linux) is needed"

S=$T/sockets
write_config
state_register csi-node ebs a0 "$S/a0/csi.sock"
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
expect_errno "allow_other=false: nobody cannot ls" EACCES as_nobody ls "$E"
expect_errno "allow_other=false: nobody cannot readlink" EACCES as_nobody readlink -v "$E/csi.sock"
stop_daemon
finish
