#!/usr/bin/env bash
# A real container consumes a plugin through plugfs, mounted the way the
# README recommends: the plugin directory read-only at /csi, and the one
# directory that holds the plugins' sockets (Nomad's per-allocation plugin
# socket directories, <data_dir>/client/csi/plugins/<alloc>/csi.sock),
# read-only at the same path.  Nothing else of the host: no allocation
# directory, no secrets.
#
# podman (with runc: crun refuses this kind of host's hybrid cgroups) runs
# an image imported from the cached Debian 12 tree of the system tests
# (nspawn.sh; `podman import', no registry needed).  In it the consumer
# (plugfs-test-connect-loop, static) connects to /csi/csi.sock every 20 ms
# while, on the host:
#
#   roll     a2 registers (a rolling update), a1 deregisters and stops
#   reexec   the daemon re-executes itself (SIGUSR2), same PID
#   kill9    the daemon is SIGKILLed and restarted by the stand-in for
#            systemd with its fd store (tests/integration/fake_fdstore.py)
#   roll2    a3 registers, a2 is killed without deregistering
#
# Every phase must have 0 failed and 0 wrong connects.  And the container
# cannot write where it connects: a write into the socket directory or
# into /csi fails with EROFS.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/control_lib.sh"
. "$(dirname "$0")/nspawn.sh"
nspawn_require
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
	[ "${CI:-}" = true ] && die "podman and runc are needed (bash contrib/install-deps.sh; CI=true: not skipping)"
	echo "SKIP: $_TEST: podman and runc are needed (bash contrib/install-deps.sh)"
	exit 77
fi
CONNECT_LOOP=${PLUGFS_CONNECT_LOOP:-$PLUGFS_BUILD_DIR/tests/system/plugfs-test-connect-loop}
[ -x "$CONNECT_LOOP" ] || die "no consumer binary at $CONNECT_LOOP (build the tests)"

# podman's settings for this test only: runc; ulimits the host's hard
# limits allow (podman's defaults exceed them here); cgroupfs and a file
# event log, which need no systemd or journald on the host.
export CONTAINERS_CONF=$T/containers.conf
cat >"$CONTAINERS_CONF" <<CONF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF

tree_ensure
IMAGE=localhost/plugfs-test-consumer:$(basename "$(dirname "$TREE")")
if ! podman image exists "$IMAGE"; then
	echo "# importing $TREE as $IMAGE"
	tar -C "$TREE" -c . | podman import - "$IMAGE" >/dev/null || die "podman import of $TREE"
fi

# Nomad's layout: <data_dir>/client/csi/plugins/<alloc>/csi.sock.
SOCKROOT=$T/nomad/client/csi/plugins
sock_of() { printf '%s/%s/csi.sock' "$SOCKROOT" "$1"; }
mkdir -p "$SOCKROOT"
write_config "socket_roots = $SOCKROOT" "[probe]" "mode = connect" "interval = 0.2" \
	"timeout = 0.5" "failures = 3"
start_fake_systemd
E=$MNT/plugins/csi-node/p
demo a1
pid_a1=$DEMO_PID
reg csi-node p a1

CT=plugfs-test-consumer-$$
mkdir -p "$T/ctl" "$T/bin"
cp "$CONNECT_LOOP" "$T/bin/connect-loop"
phase() {
	echo "$1" >"$T/ctl/phase.new" && mv "$T/ctl/phase.new" "$T/ctl/phase"
	sleep "${2:-1}"
}
phase start 0
podman run -d --name "$CT" --network none \
	--mount "type=bind,source=$E,target=/csi,readonly,bind-propagation=rslave" \
	--mount "type=bind,source=$SOCKROOT,target=$SOCKROOT,readonly,bind-propagation=rslave" \
	--mount "type=bind,source=$T/bin,target=/consumer,readonly" \
	--mount "type=bind,source=$T/ctl,target=/ctl" \
	"$IMAGE" /consumer/connect-loop --socket /csi/csi.sock --control /ctl --interval-ms 20 \
	>"$T/podman-run.out" 2>&1 || { cat "$T/podman-run.out"; die "podman run"; }
on_cleanup podman rm -f -t 0 "$CT"
ct_running() { [ "$(podman inspect -f '{{.State.Running}}' "$CT" 2>/dev/null)" = true ]; }
wait_until 30 "the consumer container runs" ct_running || exit 1
phase start 2

# The container cannot write where it connects.
check "the container cannot write into the socket directory (EROFS)" \
	grep -q "Read-only file system" <(podman exec "$CT" sh -c "touch $SOCKROOT/a1/x" 2>&1)
check "the container cannot write into /csi (EROFS)" \
	grep -q "Read-only file system" <(podman exec "$CT" sh -c "touch /csi/x" 2>&1)
check "the container sees the plugin directory" \
	grep -qx "csi.sock" <(podman exec "$CT" ls /csi)
check "the container sees no allocation directory but the sockets" \
	test "$(podman exec "$CT" sh -c "ls $SOCKROOT")" = "a1"

# roll: a rolling update.
phase roll 0
demo a2
pid_a2=$DEMO_PID
reg csi-node p a2
sleep 1
dereg csi-node p a1
kill -TERM "$pid_a1"
sleep 1
expect_active "after the roll" csi-node p a2

# reexec: same PID, the connection handed over.
phase reexec 0
kill -USR2 "$pid"
resumed_count() { grep -c "resumed the FUSE connection" "$DAEMON_LOG"; }
reexeced() { [ "$(resumed_count)" -ge 1 ]; }
wait_until 30 "the re-exec resumed the mount" reexeced
sleep 1

# kill9: restarted from the fd store.
phase kill9 0
old=$pid
kill -KILL "$pid"
restarted() { [ "$(cat "$T/sd/pid" 2>/dev/null)" != "$old" ] && [ "$(resumed_count)" -ge 2 ]; }
wait_until 30 "the restart resumed the mount" restarted
pid=$(cat "$T/sd/pid")
sleep 1

# roll2: a newer allocation; the old one dies without deregistering.
phase roll2 0
demo a3
reg csi-node p a3
kill -KILL "$pid_a2"
sleep 1.5
expect_active "after roll2" csi-node p a3

phase end 0
ct_exited() { ! ct_running; }
wait_until 15 "the consumer ends" ct_exited
check_eq "the consumer exits 0" 0 "$(podman inspect -f '{{.State.ExitCode}}' "$CT")"
echo "# figures (per phase):"
sed 's/^/#   /' "$T/ctl/figures"
for p in start roll reexec kill9 roll2; do
	line=$(grep "^phase=$p " "$T/ctl/figures")
	check "$p: the consumer connected" grep -Eq "tried=[1-9]" <<<"$line"
	check "$p: 0 failed connects" grep -q " failed=0 " <<<"$line"
	check "$p: 0 wrong answers" grep -q " wrong=0 " <<<"$line"
done
check "the last answer came from a3" grep -q "^phase=roll2 .* last=a3" "$T/ctl/figures"
podman rm -f -t 0 "$CT" >/dev/null
kill -TERM "$pid"
wait_until 15 "the daemon stops" _gone "$pid"
finish
