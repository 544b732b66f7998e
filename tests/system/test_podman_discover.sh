#!/usr/bin/env bash
# Discovery without hooks with the plugin in a real container, mounted the
# way Nomad's docker driver mounts a CSI plugin task's mount_dir: the host's
# ROOT/<alloc id>/ at /csi in the container, the plugin listening on
# /csi/csi.sock.  plugfs has a [discover.t] section over ROOT and no hook
# registers anything:
#
#   - the plugin's container started: MNT/plugins/csi-node/<name>/csi.sock
#     leads to ROOT/a1/csi.sock within a bounded wait (the time printed),
#     source discover.t, the name the plugin answered (GetPluginInfo);
#   - a second container on a new allocation directory (a2): csi.sock
#     switches to it;
#   - a consumer in a third container (the plugin directory read-only at
#     /csi, ROOT read-only at its own path, as the README recommends)
#     calls GetPluginInfo through /csi/csi.sock;
#   - `podman stop' and `podman rm' of a2's container and its allocation
#     directory removed: csi.sock falls back to a1, a2 is deregistered, and
#     the consumer's call works again.
#
# The plugin is tests/integration/csi_plugin.py (python3-grpcio).  The
# image is the one test_podman_consumer.sh imports from the cached Debian
# 12 tree (nspawn.sh), which has no python: the host's /usr (Debian 12,
# merged /usr, python3-grpcio from contrib/install-deps.sh) and its
# ld.so.cache are bind-mounted read-only instead, so the cached tree stays
# as it is.  podman with runc.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/control_lib.sh"
. "$(dirname "$0")/nspawn.sh"
nspawn_require
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
	[ "${CI:-}" = true ] && die "podman and runc are needed (bash contrib/install-deps.sh; CI=true: not skipping)"
	echo "SKIP: $_TEST: podman and runc are needed (bash contrib/install-deps.sh)"
	exit 77
fi
/usr/bin/python3 -c 'import grpc' 2>/dev/null ||
	die "python3-grpcio is missing for /usr/bin/python3 (bash contrib/install-deps.sh)"
[ -L /lib ] || die "the host's /usr is bind-mounted into the containers: it must be a merged /usr (Debian 12)"

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
ROOT=$T/nomad/client/csi/plugins
mkdir -m 0755 "$T/nomad" "$T/nomad/client" "$T/nomad/client/csi" "$ROOT" "$T/bin"
cp "$PLUGFS_SOURCE_DIR/tests/integration/csi_plugin.py" "$T/bin/"
cat >"$T/bin/consumer.py" <<'PY'
# A consumer: csi.v1.Identity/GetPluginInfo through the path given; prints
# the plugin's name (field 1 of the answer).
import sys
import grpc
with grpc.insecure_channel("unix:" + sys.argv[1]) as ch:
    ans = ch.unary_unary("/csi.v1.Identity/GetPluginInfo")(b"", timeout=10)
assert ans[0] == 0x0A, ans
print(ans[2:2 + ans[1]].decode())
PY
HOSTPY=(--mount "type=bind,source=/usr,target=/usr,readonly"
	--mount "type=bind,source=/etc/ld.so.cache,target=/etc/ld.so.cache,readonly"
	--mount "type=bind,source=$T/bin,target=/plugfs-test,readonly")
NAME=node.example.com
write_config "[discover.t]" "root = $ROOT" "[probe]" "mode = connect"
start_daemon
E=$MNT/plugins/csi-node/$NAME
served() { [ "$(readlink "$E/csi.sock")" = "$ROOT/$1/csi.sock" ]; }

CT=plugfs-test-discover-$$
# plugin ALLOC: the plugin in container $CT-ALLOC, ROOT/ALLOC at /csi (Nomad
# creates the directory before the task starts); T0 when podman run
# returned (the container started).
plugin() {
	mkdir -m 0755 "$ROOT/$1"
	local t=$(ms)
	podman run -d --name "$CT-$1" --network none --pid private \
		--mount "type=bind,source=$ROOT/$1,target=/csi" "${HOSTPY[@]}" \
		"$IMAGE" /usr/bin/python3 /plugfs-test/csi_plugin.py --socket /csi/csi.sock \
		--flavour node --name "$NAME" >"$T/podman-$1.out" 2>&1 ||
		{ cat "$T/podman-$1.out"; die "podman run of $1's plugin"; }
	on_cleanup podman rm -f -t 0 "$CT-$1"
	T0=$(ms)
	echo "# podman run of $1's plugin: $((T0 - t)) ms"
}
# consume: GetPluginInfo through /csi/csi.sock from a container of its own.
consume() {
	podman run --rm --network none "${HOSTPY[@]}" \
		--mount "type=bind,source=$E,target=/csi,readonly,bind-propagation=rslave" \
		--mount "type=bind,source=$ROOT,target=$ROOT,readonly,bind-propagation=rslave" \
		"$IMAGE" timeout 30 /usr/bin/python3 /plugfs-test/consumer.py /csi/csi.sock 2>&1
}

plugin a1
wait_until 60 "the plugin in its container is served from a1" served a1 || {
	podman logs "$CT-a1" | sed 's/^/# a1: /'
	exit 1
}
echo "# a1: container started -> csi.sock served: $(($(ms) - T0)) ms"
check_eq "a1: source discover.t" discover.t "$(plugfs show csi-node "$NAME" --json | jq -r '.registrations[0].source')"
host_pid=$(podman inspect -f '{{.State.Pid}}' "$CT-a1")
check "the plugin has a pid namespace of its own" \
	test "$(readlink "/proc/$host_pid/ns/pid")" != "$(readlink /proc/self/ns/pid)"
check "the plugin has a mount namespace of its own" \
	test "$(readlink "/proc/$host_pid/ns/mnt")" != "$(readlink /proc/self/ns/mnt)"

plugin a2
wait_until 60 "a second container (a2): csi.sock switches to it" served a2 || exit 1
echo "# a2: container started -> csi.sock served: $(($(ms) - T0)) ms"
check_eq "both allocations registered" "a1 a2" \
	"$(plugfs show csi-node "$NAME" --json | jq -r '[.registrations[].alloc] | sort | join(" ")')"
check_eq "a consumer in a container calls GetPluginInfo through /csi/csi.sock (a2)" "$NAME" "$(consume)"

t=$(ms)
podman stop -t 5 "$CT-a2" >/dev/null || die "podman stop of a2's container"
podman rm "$CT-a2" >/dev/null || die "podman rm of a2's container"
rm -rf "$ROOT/a2"
wait_until 30 "a2 stopped, removed and its directory gone: csi.sock falls back to a1" served a1 || exit 1
echo "# a2: podman stop + rm + rm -r ROOT/a2 -> csi.sock back on a1: $(($(ms) - t)) ms (podman's own time included)"
wait_until 30 "a2 is deregistered" test ! -e "$E/allocs/a2" || exit 1
check_eq "a1 alone is registered" "a1" \
	"$(plugfs show csi-node "$NAME" --json | jq -r '[.registrations[].alloc] | join(" ")')"
check_eq "the consumer's call works again (a1)" "$NAME" "$(consume)"
grep -E "discover|active csi-node/$NAME" "$DAEMON_LOG" | sed 's/^/# daemon: /'
stop_daemon
check_daemon_log
finish
