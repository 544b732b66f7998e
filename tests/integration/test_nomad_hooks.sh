#!/usr/bin/env bash
# The hook tasks of contrib/nomad/csi-node-plugin.nomad.hcl, run for real as
# Nomad would run them (raw_exec: the command and args of the job, with
# NOMAD_ALLOC_ID and the env block's PLUGFS_SOCKET), against a real daemon
# whose socket_roots is Nomad's plugin socket directory: the poststart hook
# registers the allocation before its plugin listens and returns only once
# csi.sock leads to it; the poststop hook deregisters it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
JOB=$PLUGFS_SOURCE_DIR/contrib/nomad/csi-node-plugin.nomad.hcl
DATA=$T/nomad
SOCKROOT=$DATA/client/csi/plugins
sock_of() { printf '%s/%s/csi.sock' "$SOCKROOT" "$1"; }
mkdir -p "$SOCKROOT"
write_config "socket_roots = $SOCKROOT" "[probe]" "mode = connect" "interval = 0.2" \
	"timeout = 0.5" "failures = 3"
start_daemon
E=$MNT/plugins/csi-node/hostpath

# The poststart hook: `sh -c SCRIPT' of the job, /usr/bin/plugfs being this
# build's plugfs with this test's config.
script=$(grep -A3 '"-c",' "$JOB" | sed -n 2p | sed -e 's/^ *"//' -e 's/",$//' -e 's/\\"/"/g')
[ -n "$script" ] || die "no poststart script found in $JOB"
check "the poststart hook registers and waits for its alloc" \
	grep -q 'plugfs register .* && exec /usr/bin/plugfs wait csi-node hostpath --alloc' <<<"$script"
script=${script//\/usr\/bin\/plugfs/\"\$PLUGFS_BIN\" -c \"\$CFG\"}
# The env block: ${var.nomad_data_dir}/client/csi/plugins/${NOMAD_ALLOC_ID}/csi.sock
sockexpr=$(grep 'PLUGFS_SOCKET = ' "$JOB" | sed -e 's/.*= "//' -e 's/"$//')
check_eq "the env block puts the socket in Nomad's plugin socket directory" \
	'${var.nomad_data_dir}/client/csi/plugins/${NOMAD_ALLOC_ID}/csi.sock' "$sockexpr"
hook() {
	local alloc=$1
	local sock=${sockexpr//\$\{var.nomad_data_dir\}/$DATA}
	NOMAD_ALLOC_ID=$alloc PLUGFS_SOCKET=${sock//\$\{NOMAD_ALLOC_ID\}/$alloc} \
		PLUGFS_BIN=$PLUGFS_BIN CFG=$CFG sh -c "${script//\$\{NOMAD_ALLOC_ID\}/$alloc}"
}
export PLUGFS_BIN CFG

# a1: the hook starts before the plugin listens (Nomad runs poststart once
# the task started, not once it listens).
hook a1 >"$T/hook1.out" 2>&1 &
hook_pid=$!
_PIDS+=("$hook_pid")
sleep 1
check "the hook waits while a1 does not listen" kill -0 "$hook_pid"
demo a1
wait "$hook_pid"
check_eq "the hook exits 0 once plugfs serves a1" 0 $?
check "csi.sock leads to a1 when the hook returned" link_is a1

# a2: a replacement; its hook returns once it is the active one.
demo a2
hook a2 >"$T/hook2.out" 2>&1 # bounded: the hook's wait has --timeout 120
check_eq "a2's hook exits 0" 0 $?
check "csi.sock leads to a2" link_is a2

# The poststop hook of a2: the job's deregister args.
args=$(sed -n '/task "plugfs-deregister"/,/resources/p' "$JOB" | tr -d '\n' |
	sed -e 's/.*args = \[//' -e 's/\].*//' -e 's/"//g' -e 's/,/ /g')
args=${args//\$\{NOMAD_ALLOC_ID\}/a2}
# shellcheck disable=SC2086 # the job's args, split as Nomad passes them
plugfs $args >/dev/null
check_eq "the poststop hook exits 0" 0 $?
check "after a2's poststop csi.sock leads to a1 again" link_is a1
stop_daemon
finish
