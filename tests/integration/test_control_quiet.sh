#!/usr/bin/env bash
# register and deregister -q/--quiet: nothing on stdout or stderr on
# success, the change made all the same; errors still printed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
write_config
start_daemon
demo a0 a1

# quietly DESCRIPTION EXPECTED-RC ARGS...: runs plugfs ARGS, checks its exit
# status; leaves its output in $T/q.out and $T/q.err.
quietly() {
	local d=$1 want=$2
	shift 2
	plugfs "$@" >"$T/q.out" 2>"$T/q.err"
	check_eq "$d exits $want" "$want" $?
}
silent() { check "$1 prints nothing" test ! -s "$T/q.out" -a ! -s "$T/q.err"; }

quietly "register -q" 0 register -q --type csi-node --name p --alloc a0 --socket "$(sock_of a0)"
silent "register -q"
expect_active "after register -q" csi-node p a0
quietly "register --quiet of a monolith" 0 register --quiet --type csi-node --type csi-controller \
	--name m --alloc a1 --socket "$(sock_of a1)" --kind monolith
silent "register --quiet"
expect_active "after register --quiet" csi-controller m a1
# Without -q the same registration (updated in place) says what it did.
quietly "register without -q" 0 register --type csi-node --name p --alloc a0 --socket "$(sock_of a0)"
check "register without -q prints the plugin" grep -q '^csi-node/p: registered a0, active a0$' "$T/q.out"

# Errors are printed all the same.
quietly "register -q of an unknown type" 1 register -q --type nope --name p --alloc a9 \
	--socket "$(sock_of a0)"
check "its error is printed" grep -q "^plugfs register: .*type \`nope'" "$T/q.err"
check "and nothing on stdout" test ! -s "$T/q.out"
quietly "register -q without --socket" 2 register -q --type csi-node --name p --alloc a9
check "its usage error is printed" grep -q "^plugfs register: --socket is required" "$T/q.err"
# A dead socket is still warned about.
quietly "register -q of a dead socket" 0 register -q --type csi-node --name p --alloc dead \
	--socket "$T/nobody/csi.sock"
check "the dead-socket warning is still printed" grep -q "^plugfs register: warning: dead is dead" "$T/q.err"
check "and nothing on stdout" test ! -s "$T/q.out"

quietly "deregister -q of one registration" 0 deregister -q --type csi-node --name p --alloc dead
silent "deregister -q"
expect_active "after deregister -q" csi-node p a0
quietly "deregister -q --alloc" 0 deregister --quiet --alloc a1
silent "deregister --quiet --alloc"
quietly "show of the monolith after deregister -q --alloc" 1 show csi-controller m
quietly "deregister -q of nothing registered" 0 deregister -q --alloc never
silent "deregister -q of nothing"
quietly "deregister -q with --type alone" 2 deregister -q --type csi-node --alloc a0
check "its usage error is printed" grep -q "^plugfs deregister: --type and --name go together" "$T/q.err"
quietly "deregister without -q" 0 deregister --type csi-node --name p --alloc a0
check "deregister without -q says so" grep -q '^csi-node/p: a0 deregistered$' "$T/q.out"
stop_daemon
check_daemon_log
finish
