#!/usr/bin/env bash
# Runs a container that uses a CSI plugin through plugfs (an example of how a
# consumer is started; adapt the image and the command).
#
#   contrib/docker-consumer.sh [--dry-run] TYPE NAME [IMAGE [COMMAND...]]
#
# e.g. contrib/docker-consumer.sh csi-node hostpath
#
# Inside the container the plugin is at /csi/csi.sock, whatever allocation
# serves it.  The rules (see README.md, "Using plugfs from containers"):
#
#  1. Bind-mount the plugin DIRECTORY, never the csi.sock symlink itself: a
#     bind mount of a symlink is resolved once, when the container starts,
#     and then keeps pointing at that allocation's socket after it is gone.
#     Through the directory, every connect() resolves the symlink anew.
#  2. The symlink's target is a host path (e.g. /var/lib/nomad/alloc/<id>/
#     alloc/csi.sock): the directories holding the sockets must be mounted
#     at the SAME paths in the container.  Mount their common root, so that
#     allocations started later are visible too.
#  3. rslave propagation: mounts made on the host under those directories
#     after the container started reach it.
#
# Environment:
#   PLUGFS_MOUNTPOINT    the plugfs mountpoint (default /run/plugfs)
#   PLUGFS_SOCKET_ROOTS  space-separated directories that hold plugin sockets,
#                        mounted at the same paths (default /var/lib/nomad/alloc;
#                        use the [registry] socket_roots of plugfs.ini)
set -euo pipefail

dry_run=false
if [ "${1-}" = "--dry-run" ]; then
  dry_run=true
  shift
fi
if [ $# -lt 2 ]; then
  echo "usage: $0 [--dry-run] TYPE NAME [IMAGE [COMMAND...]]" >&2
  exit 2
fi
type=$1 name=$2
shift 2
image=${1:-debian:12-slim}
[ $# -gt 0 ] && shift
if [ $# -eq 0 ]; then
  set -- sh -c 'ls -l /csi/ && cat /csi/info'
fi

mnt=${PLUGFS_MOUNTPOINT:-/run/plugfs}
plugin_dir=$mnt/plugins/$type/$name
roots=${PLUGFS_SOCKET_ROOTS:-/var/lib/nomad/alloc}

if ! $dry_run && [ ! -d "$plugin_dir" ]; then
  echo "$0: $plugin_dir does not exist: is plugfs running and $type/$name registered?" \
    "(plugfs show $type $name)" >&2
  exit 1
fi

args=(run --rm
  # 1. the plugin directory (read-only: consumers only connect)
  --mount "type=bind,source=$plugin_dir,target=/csi,readonly,bind-propagation=rslave")
# 2. + 3. the socket directories, at the same paths
for r in $roots; do
  args+=(--mount "type=bind,source=$r,target=$r,bind-propagation=rslave")
done
args+=(--env CSI_ENDPOINT=unix:///csi/csi.sock "$image" "$@")

if $dry_run; then
  printf '%q ' docker "${args[@]}"
  echo
  exit 0
fi
exec docker "${args[@]}"
