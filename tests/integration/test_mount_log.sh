#!/usr/bin/env bash
# The daemon's log: one line per committed change, in commit order, and a
# line naming the peer for every refused mutation.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
write_config
start_daemon

reg csi-node p a0
reg csi-node p a1
dereg csi-node p a1
plugfs register --type csi-node --name 'x/y' --alloc a2 --socket "$(sock_of a2)" 2>/dev/null
check_eq "a bad registration exits 1" 1 $?
plugfs deregister --type csi-node --name p --alloc a0 >/dev/null
stop_daemon

# The change lines, in the order they were committed.
got=$(grep -oE 'plugfs info: (registered|updated|deregistered|active) .*' "$DAEMON_LOG" |
	sed 's/^plugfs info: //; s/ socket .*//')
want="registered csi-node/p alloc a0
active csi-node/p: (none) -> a0
registered csi-node/p alloc a1
active csi-node/p: a0 -> a1
deregistered csi-node/p alloc a1
active csi-node/p: a1 -> a0
deregistered csi-node/p alloc a0
active csi-node/p: a0 -> (none)"
check_eq "one log line per change, in commit order" "$want" "$got"
check "the socket of a registration is logged" \
	grep -q "registered csi-node/p alloc a0 socket $(sock_of a0)\$" "$DAEMON_LOG"
check "a refused registration is logged at notice with the peer and the reason" \
	grep -Eq "plugfs notice: control: register from pid [0-9]+ uid 0 refused: name \`x/y'" "$DAEMON_LOG"
finish
