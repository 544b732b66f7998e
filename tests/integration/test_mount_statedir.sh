#!/usr/bin/env bash
# plugfs mount on a fresh host: the state file's directory does not exist yet.
. "$(dirname "$0")/lib.sh"
require_fuse

STATE=$T/var/lib/plugfs/state.db
write_config
sed -i "s|^path = .*|path = $STATE|" "$CFG"
check "state directory absent before the start" test ! -e "$T/var/lib/plugfs"
start_daemon
check "state directory created by plugfs mount" test -d "$T/var/lib/plugfs"
check "state file created in it" test -f "$STATE"
check "tree served" test -d "$MNT/plugins/csi-node"
stop_daemon
finish
