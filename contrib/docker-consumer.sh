#!/usr/bin/env bash
# Runs a container that uses a CSI plugin through plugfs (an example of how a
# consumer is started; adapt the image and the command).
#
#   contrib/docker-consumer.sh [--dry-run] [--around] TYPE NAME [IMAGE [COMMAND...]]
#
# e.g. contrib/docker-consumer.sh csi-node hostpath
#
# Inside the container the plugin is at /csi/csi.sock, whatever allocation
# serves it.  With --around, the directory that holds the plugfs mountpoint
# is mounted instead (at the same path), so that a restarted plugfs reaches
# the running container; the plugin is then at
# <mountpoint>/plugins/TYPE/NAME/csi.sock.  That needs plugfs mounted one
# level down in a directory of its own (mountpoint = /run/plugfs/fs), never
# directly in /run.  The rules (see README.md, "Using plugfs from
# containers"):
#
#  1. Bind-mount the plugin DIRECTORY, never the csi.sock symlink itself: a
#     bind mount of a symlink is resolved once, when the container starts,
#     and then keeps pointing at that allocation's socket after it is gone.
#     Through the directory, every connect() resolves the symlink anew.
#  2. The symlink's target is a host path (for Nomad,
#     <data_dir>/client/csi/plugins/<alloc id>/csi.sock): the directories
#     holding the sockets must be mounted at the SAME paths in the container.
#     Mount the directory that holds them, so that allocations started later
#     are visible too, and only that: read-only, with nothing but sockets in
#     it (never an allocation directory with its secrets).
#  3. rslave propagation: mounts made on the host under those directories
#     after the container started reach it.
#
# Environment:
#   PLUGFS_MOUNTPOINT    the plugfs mountpoint (default /run/plugfs)
#   PLUGFS_SOCKET_ROOTS  space-separated directories that hold plugin sockets,
#                        mounted read-only at the same paths (default
#                        /var/lib/nomad/client/csi/plugins; use the
#                        [registry] socket_roots of plugfs.ini)
#   PLUGFS_CONTAINER_ENGINE  docker (default) or podman
set -euo pipefail

dry_run=false
around=false
while [ $# -gt 0 ]; do
  case $1 in
  --dry-run) dry_run=true ;;
  --around) around=true ;;
  *) break ;;
  esac
  shift
done
if [ $# -lt 2 ]; then
  echo "usage: $0 [--dry-run] [--around] TYPE NAME [IMAGE [COMMAND...]]" >&2
  exit 2
fi
type=$1 name=$2
shift 2
image=${1:-debian:12-slim}
[ $# -gt 0 ] && shift
mnt=${PLUGFS_MOUNTPOINT:-/run/plugfs}
plugin_dir=$mnt/plugins/$type/$name
roots=${PLUGFS_SOCKET_ROOTS:-/var/lib/nomad/client/csi/plugins}
engine=${PLUGFS_CONTAINER_ENGINE:-docker}
case $engine in
docker | podman) ;;
*)
  echo "$0: PLUGFS_CONTAINER_ENGINE must be docker or podman, not \`$engine'" >&2
  exit 2
  ;;
esac
if $around; then
  parent=$(dirname "$mnt")
  case $parent in
  / | /run | /var | /var/run | /tmp)
    echo "$0: --around would give the container all of $parent; mount plugfs in a" \
      "directory of its own (e.g. mountpoint = /run/plugfs/fs) and set PLUGFS_MOUNTPOINT" >&2
    exit 2
    ;;
  esac
  endpoint=$plugin_dir/csi.sock
else
  endpoint=/csi/csi.sock
fi
if [ $# -eq 0 ]; then
  set -- sh -c "ls -l $(dirname "$endpoint")/ && cat $(dirname "$endpoint")/info"
fi

if ! $dry_run && [ ! -d "$plugin_dir" ]; then
  echo "$0: $plugin_dir does not exist: is plugfs running and $type/$name registered?" \
    "(plugfs show $type $name)" >&2
  exit 1
fi

args=(run --rm)
if $around; then
  # 1. the directory around the mount: a new mount there propagates in
  args+=(--mount "type=bind,source=$parent,target=$parent,readonly,bind-propagation=rslave")
else
  # 1. the plugin directory (read-only: consumers only connect)
  args+=(--mount "type=bind,source=$plugin_dir,target=/csi,readonly,bind-propagation=rslave")
fi
# 2. + 3. the socket directories, at the same paths, read-only
for r in $roots; do
  args+=(--mount "type=bind,source=$r,target=$r,readonly,bind-propagation=rslave")
done
args+=(--env "CSI_ENDPOINT=unix://$endpoint" "$image" "$@")

if $dry_run; then
  printf '%q ' "$engine" "${args[@]}"
  echo
  exit 0
fi
exec "$engine" "${args[@]}"
