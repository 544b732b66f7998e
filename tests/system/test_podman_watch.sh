#!/usr/bin/env bash
# The watches with a plugin in a real container: plugfs-demo-plugin (built
# static) runs in podman with a pid namespace of its own, its socket in a
# directory bind-mounted from the host (Nomad's layout,
# <data_dir>/client/csi/plugins/<alloc>/csi.sock), beside an older
# allocation on the host; [probe] rounds 30 s apart, so that no round comes
# during the test.  The container's listener has a pidfd (SO_PEERCRED gives
# its pid in the daemon's pid namespace); `podman kill -s KILL' fails
# csi.sock over to the older allocation without waiting for a round, dead at
# once (x1); the plugin started again in a new container is active again
# before any round (its socket's creation is an event).
#
# podman with runc, an image imported from the cached Debian 12 tree of the
# system tests, as test_podman_consumer.sh does.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/control_lib.sh"
. "$(dirname "$0")/nspawn.sh"
nspawn_require
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
	[ "${CI:-}" = true ] && die "podman and runc are needed (bash contrib/install-deps.sh; CI=true: not skipping)"
	echo "SKIP: $_TEST: podman and runc are needed (bash contrib/install-deps.sh)"
	exit 77
fi
PLUGIN=${PLUGFS_STATIC_DEMO_PLUGIN:-$PLUGFS_BUILD_DIR/tests/system/plugfs-test-demo-plugin}
[ -x "$PLUGIN" ] || die "no static demo plugin at $PLUGIN (build the tests)"

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

SOCKROOT=$T/nomad/client/csi/plugins
sock_of() { printf '%s/%s/csi.sock' "$SOCKROOT" "$1"; }
mkdir -p "$SOCKROOT/a2" "$T/bin"
cp "$PLUGIN" "$T/bin/demo-plugin"
write_config "socket_roots = $SOCKROOT" "[probe]" "mode = connect" "interval = 30" \
	"timeout = 0.5" "failures = 3"
start_daemon
E=$MNT/plugins/csi-node/p
metric() { plugfs metrics | awk -v k="$1" '$1 == k { print $2 }'; }
pidfds_are() { [ "$(metric 'plugfs_probe_watches{kind="pidfd"}')" = "$1" ]; }

CT=plugfs-test-plugin-$$
# plugin NAME: a2's plugin in container NAME, its own pid namespace.
plugin() {
	podman run -d --name "$1" --network none --pid private \
		--mount "type=bind,source=$SOCKROOT/a2,target=$SOCKROOT/a2" \
		--mount "type=bind,source=$T/bin,target=/plugin,readonly" \
		"$IMAGE" /plugin/demo-plugin --socket "$(sock_of a2)" --alloc a2 \
		>"$T/podman-$1.out" 2>&1 || { cat "$T/podman-$1.out"; die "podman run"; }
	on_cleanup podman rm -f -t 0 "$1"
	"$PLUGFS_DEMO_PLUGIN" --connect "$(sock_of a2)" --wait 30 >/dev/null ||
		die "the plugin in container $1 did not come up"
}

demo a1
reg csi-node p a1
plugin "$CT"
reg csi-node p a2
expect_active "a2 in its container" csi-node p a2
host_pid=$(podman inspect -f '{{.State.Pid}}' "$CT")
check "the plugin has a pid namespace of its own" \
	test "$(readlink "/proc/$host_pid/ns/pid")" != "$(readlink /proc/self/ns/pid)"
wait_until 10 "both listeners have a pidfd, the container's too" pidfds_are 2 || exit 1

podman kill -s KILL "$CT" >/dev/null
t0=$(ms)
wait_until 5 "csi.sock leads to a1 after podman kill (no round for 30 s)" link_is a1
echo "# podman kill -s KILL to csi.sock on a1: $(($(ms) - t0)) ms (functional check)"
expect_active "a2's container killed" csi-node p a1
check "the log says why: the exit's one probe" \
	grep -q "active csi-node/p: a2 -> a1 (a2: connection refused x1)" "$DAEMON_LOG"

# Started again in a new container on the same path.
rm -f "$(sock_of a2)"
plugin "$CT-2"
wait_until 5 "csi.sock leads to a2 again before any round" link_is a2
expect_active "a2 back in a new container" csi-node p a2
stop_daemon
check_daemon_log
finish
