#!/usr/bin/env bash
# README.md, "When plugfs itself restarts": checks both claims with a real
# daemon and a private mount namespace standing in for a container (made
# rslave, as container runtimes make it).
#  - A container that bind-mounted a directory INSIDE the mount keeps the old
#    mount after plugfs restarts: it fails with ENOTCONN (or answers from the
#    kernel's cache, never with a later registration).
#  - A container that bind-mounted the directory AROUND the mountpoint, with
#    rslave, sees the new mount: the plugin is reachable again.
. "$(dirname "$0")/lib.sh"
require_fuse
command -v unshare >/dev/null || die "unshare (util-linux) is not installed"

# $H plays /run on a systemd host: a shared mount.  plugfs mounts one level
# down, at $H/fs, as the README recommends.
H=$T/host
MNT=$H/fs
mkdir -p "$H" "$T/ctr-around" "$T/ctr-inside"
mount --bind "$H" "$H" || die "cannot bind-mount $H on itself"
on_cleanup umount -l "$H"
mount --make-shared "$H" || die "cannot make $H a shared mount"

write_config
start_daemon
start_demo_plugin "$T/alloc/a1/csi.sock" a1
plugfs register --type csi-node --name p1 --alloc a1 --socket "$T/alloc/a1/csi.sock" >/dev/null ||
	die "register failed"
P=plugins/csi-node/p1

# The "container": its own mount namespace, rslave; two bind mounts like
# `docker run --mount type=bind,...,bind-propagation=rslave'.  It stays
# there (sleep) for in_container to run commands in it.
# shellcheck disable=SC2016
unshare -m --propagation slave bash -c '
	T=$1 H=$2 P=$3 DEMO=$4
	mount --rbind "$H" "$T/ctr-around" && mount --make-rslave "$T/ctr-around" || exit 1
	mount --rbind "$H/fs/$P" "$T/ctr-inside" && mount --make-rslave "$T/ctr-inside" || exit 1
	"$DEMO" --connect "$T/ctr-around/fs/$P/csi.sock" >"$T/before.around" 2>&1
	"$DEMO" --connect "$T/ctr-inside/csi.sock" >"$T/before.inside" 2>&1
	touch "$T/c.ready"
	exec sleep 600
' container "$T" "$H" "$P" "$PLUGFS_DEMO_PLUGIN" &
CPID=$!
_PIDS+=("$CPID")
wait_until --pid "$CPID" 10 "the container namespace is up" test -e "$T/c.ready" || exit 1
# in_container CMD...: runs CMD in the container's mount namespace.
in_container() { nsenter --mount --target "$CPID" -- "$@"; }
check_eq "container, bind around the mount: reaches a1" "a1" "$(cat "$T/before.around")"
check_eq "container, bind of the plugin directory: reaches a1" "a1" "$(cat "$T/before.inside")"

# plugfs restarts: a new mount at the same place.
stop_daemon
start_daemon
check_eq "host: the registration survived the restart" "a1" "$(demo_connect "$MNT/$P/csi.sock")"
# A new allocation after the restart: only the new mount knows it (the old
# one may still answer from the kernel's cache until cache_timeout).
start_demo_plugin "$T/alloc/a2/csi.sock" a2
plugfs register --type csi-node --name p1 --alloc a2 --socket "$T/alloc/a2/csi.sock" >/dev/null ||
	die "register a2 failed"
check_eq "container, bind around the mount, rslave: reaches a2 through the NEW mount" "a2" \
	"$(in_container "$PLUGFS_DEMO_PLUGIN" --connect "$T/ctr-around/fs/$P/csi.sock" 2>&1)"
expect_errno "container, bind inside the old mount: fails after the restart" ENOTCONN \
	in_container ls "$T/ctr-inside/"
stop_daemon
finish
