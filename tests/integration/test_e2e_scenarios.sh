#!/usr/bin/env bash
# The six reference scenarios of docs/design.md "Semantics", end to end: the
# daemon, the mount, the CLI and real plugin sockets (plugfs-demo-plugin).
# Each is checked through the mount (readlink of csi.sock and a connect()
# that must reach the expected allocation) and through `show --json`; the
# restart variants restart the daemon.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
write_config
start_daemon
demo a0 a1 a2 m0

N=csi-node
C=csi-controller

# 1. register a0, register a1 -> a1; restart; register a0 again -> still a1.
reg $N s1 a0
reg $N s1 a1
expect_active "1" $N s1 a1
restart_daemon
expect_active "1 after restart" $N s1 a1
reg $N s1 a0
expect_active "1 re-register a0 after restart" $N s1 a1
expect_order "1" $N s1 "a1 a0"

# 2. register a0, a1; restart (nothing re-registers); register a2 -> a2.
reg $N s2 a0
reg $N s2 a1
restart_daemon
expect_active "2 after restart" $N s2 a1
expect_order "2 after restart" $N s2 "a1 a0"
reg $N s2 a2
expect_active "2 new alloc" $N s2 a2
expect_order "2" $N s2 "a2 a1 a0"

# 3. register a0, a1, deregister a0 -> a1.
reg $N s3 a0
reg $N s3 a1
dereg $N s3 a0
expect_active "3" $N s3 a1
expect_order "3" $N s3 "a1"
check "3: allocs/a0 is gone" test ! -e "$MNT/plugins/$N/s3/allocs/a0"
restart_daemon
expect_active "3 after restart" $N s3 a1

# 4. register a0, a1; deregister a1 -> a0; deregister a0 -> gone.
reg $N s4 a0
reg $N s4 a1
dereg $N s4 a1
expect_active "4 after removing a1" $N s4 a0
restart_daemon
expect_active "4 after restart" $N s4 a0
dereg $N s4 a0
expect_gone "4 after removing a0" $N s4
restart_daemon
expect_gone "4 after restart" $N s4

# 5. register a0, a1; deregister a0; register a0 (task restart) -> still a1.
reg $N s5 a0
reg $N s5 a1
dereg $N s5 a0
reg $N s5 a0
expect_active "5" $N s5 a1
expect_order "5 (a0 back in its old place)" $N s5 "a1 a0"
restart_daemon
expect_active "5 after restart" $N s5 a1
expect_order "5 after restart" $N s5 "a1 a0"

# 6. one alloc under two types (a monolith); deregister --alloc removes both.
plugfs register --type $C --type $N --name mono --alloc m0 --socket "$(sock_of m0)" >/dev/null
check_eq "6: register under two types exits 0" 0 $?
expect_active "6 controller" $C mono m0
expect_active "6 node" $N mono m0
kind=$(plugfs show $C mono --json | jq -r '.registrations[0].kind')
check_eq "6: kind defaults from the type" controller "$kind"
restart_daemon
expect_active "6 controller after restart" $C mono m0
expect_active "6 node after restart" $N mono m0
out=$(plugfs deregister --alloc m0)
check_eq "6: deregister --alloc exits 0" 0 $?
check "6: deregister --alloc reports 2 removed" grep -q '2 registrations removed' <<<"$out"
expect_gone "6 controller" $C mono
expect_gone "6 node" $N mono
restart_daemon
expect_gone "6 controller after restart" $C mono
expect_gone "6 node after restart" $N mono

# The other plugins survived all of it.
expect_active "end" $N s1 a1
expect_active "end" $N s2 a2
expect_active "end" $N s5 a1
finish
