# shellcheck shell=bash
# Helpers of the system tests: a cached Debian 12 tree, booted with
# systemd-nspawn (systemd as PID 1) on a throw-away overlay of it.  Source
# after tests/integration/lib.sh (it gives $T, die and the EXIT trap):
#
#   nspawn_require        # root, debootstrap, systemd-nspawn, nsenter, FUSE
#   tree_ensure           # $TREE: the cached tree, built when missing
#   container_boot DIR    # boots $TREE with DIR bound at /plugfs-test
#   ct_exec SECONDS CMD...   # runs CMD inside, in all its namespaces
#   container_teardown    # (also run on exit) aborts the container's FUSE
#                         # connections, powers it off, removes the overlay
#
# The tree: `debootstrap --variant=minbase bookworm' plus $TREE_PACKAGES, in
# $PLUGFS_SYSTEM_CACHE (/var/cache/plugfs-test)/bookworm-<key>/root, where
# the key is a hash of the package list and of $TREE_REVISION (bump it when
# tree_setup changes).  Built under a lock into a temporary directory that
# is renamed when complete, so an interrupted build is never used.  The
# tree itself is never written to: each boot gets an overlay (or a copy
# when overlayfs is not available) under $T.

# What plugfs's .deb depends on, systemd as init, dbus for systemctl's
# usual paths.  The .deb is installed with dpkg -i (no network inside):
# every runtime dependency must be here.
TREE_PACKAGES=(systemd systemd-sysv dbus fuse3 libfuse3-3 libsqlite3-0 libinih1 libjansson4 libcurl4)
TREE_REVISION=1
PLUGFS_SYSTEM_CACHE=${PLUGFS_SYSTEM_CACHE:-/var/cache/plugfs-test}
CT_NAME=plugfs-test-$$
CT_DIR=$T/ct
CT_NSPAWN_PID=
CT_LEADER=

nspawn_require() {
	local why='' c
	[ "$(id -u)" -eq 0 ] || why="not running as root"
	for c in debootstrap systemd-nspawn nsenter flock; do
		command -v "$c" >/dev/null || why="$c is not installed (bash contrib/install-deps.sh)"
	done
	[ -c /dev/fuse ] || why="/dev/fuse is missing"
	if [ -n "$why" ]; then
		if [ "${CI:-}" = "true" ]; then
			echo "FAIL: $_TEST: $why (CI=true: not skipping)"
			exit 1
		fi
		echo "SKIP: $_TEST: $why"
		exit 77
	fi
}

# Runs in the new tree (chrooted paths are relative to $1): what a boot
# needs without a console or network.
tree_setup() {
	local r=$1
	# No first-boot prompts, no login prompt on the console.
	ln -sf /dev/null "$r/etc/systemd/system/systemd-firstboot.service"
	ln -sf /dev/null "$r/etc/systemd/system/console-getty.service"
	echo plugfs-test >"$r/etc/hostname"
	rm -f "$r"/var/cache/apt/archives/*.deb
}

tree_ensure() {
	local key dir tmp t0 i
	key=$(printf '%s\n' bookworm minbase "$TREE_REVISION" "${TREE_PACKAGES[@]}" | sha256sum | cut -c1-12)
	dir=$PLUGFS_SYSTEM_CACHE/bookworm-$key
	TREE=$dir/root
	mkdir -p "$PLUGFS_SYSTEM_CACHE"
	exec {_tree_lock}>"$PLUGFS_SYSTEM_CACHE/.lock"
	flock -w 1200 "$_tree_lock" || die "another run holds $PLUGFS_SYSTEM_CACHE/.lock for 20 minutes"
	if [ -f "$dir/complete" ] && [ -x "$TREE/usr/lib/systemd/systemd" ]; then
		echo "# Debian tree: cached $TREE ($(cat "$dir/complete"))"
		exec {_tree_lock}>&-
		return 0
	fi
	echo "# Debian tree: building $TREE (debootstrap --variant=minbase bookworm, + ${TREE_PACKAGES[*]})"
	tmp=$dir.tmp
	t0=$SECONDS
	for i in 1 2; do
		rm -rf --one-file-system "$tmp" "$dir"
		mkdir -p "$tmp"
		if timeout 1200 debootstrap --variant=minbase --include="$(IFS=,; echo "${TREE_PACKAGES[*]}")" \
			bookworm "$tmp/root" >"$T/debootstrap.log" 2>&1; then
			break
		fi
		echo "# debootstrap failed (try $i):"
		tail -n 20 "$T/debootstrap.log"
		[ "$i" = 2 ] && die "debootstrap of the Debian tree failed twice"
	done
	tree_setup "$tmp/root"
	echo "built in $((SECONDS - t0)) s on $(date -u +%FT%TZ): ${TREE_PACKAGES[*]}" >"$tmp/complete"
	mv "$tmp" "$dir"
	echo "# Debian tree: built in $((SECONDS - t0)) s"
	exec {_tree_lock}>&-
}

# The PID (in our namespace) of the container's PID 1: the child of
# systemd-nspawn that is PID 1 in its own PID namespace.
_ct_leader() {
	local p
	for p in $(pgrep -P "$CT_NSPAWN_PID"); do
		awk '/^NSpid:/ { exit !($NF == 1 && NF > 2) }' "/proc/$p/status" 2>/dev/null && echo "$p" && return 0
	done
	return 1
}

# container_boot SHARE: boots the tree on an overlay, SHARE bound at
# /plugfs-test, /dev/fuse bound, loopback-only network; waits (120 s) until
# systemd says running (or degraded).  Sets CT_LEADER.
container_boot() {
	local share=$1 root=$CT_DIR/root state i
	mkdir -p "$CT_DIR/upper" "$CT_DIR/work" "$root"
	if ! mount -t overlay overlay -o "lowerdir=$TREE,upperdir=$CT_DIR/upper,workdir=$CT_DIR/work" "$root" 2>/dev/null; then
		echo "# overlayfs not available here: copying the tree"
		cp -a --reflink=auto "$TREE/." "$root/" || die "cannot copy $TREE"
	fi
	systemd-nspawn --quiet --boot --directory="$root" --machine="$CT_NAME" \
		--register=no --keep-unit --private-network --console=read-only \
		--bind=/dev/fuse --bind="$share:/plugfs-test" >"$T/console.log" 2>&1 </dev/null &
	CT_NSPAWN_PID=$!
	for i in $(seq 300); do
		CT_LEADER=$(_ct_leader) && break
		kill -0 "$CT_NSPAWN_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ -z "$CT_LEADER" ]; then
		tail -n 30 "$T/console.log"
		die "systemd-nspawn did not start the container"
	fi
	echo "$CT_LEADER" >"$CT_DIR/leader"
	# systemctl needs systemd's private socket.
	for i in $(seq 600); do
		[ -S "/proc/$CT_LEADER/root/run/systemd/private" ] && break
		sleep 0.1
	done
	state=$(ct_exec 120 systemctl is-system-running --wait 2>&1)
	case $state in
	running) ;;
	degraded) echo "# container is degraded: $(ct_exec 30 systemctl --failed --no-legend --plain | tr '\n' ' ')" ;;
	*)
		tail -n 30 "$T/console.log"
		die "the container did not boot (systemctl is-system-running: $state)"
		;;
	esac
}

# ct_exec SECONDS CMD...: CMD in the container's namespaces with a clean
# environment (PLUGFS_* variables are passed on), killed after SECONDS.
ct_exec() {
	local t=$1 v envs=()
	shift
	for v in $(compgen -e | grep '^PLUGFS_' || true); do envs+=("$v=${!v}"); done
	timeout --kill-after=10 "$t" nsenter --target="$CT_LEADER" --all \
		env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 TERM=dumb "${envs[@]}" "$@"
}

# ct_abort_fuse LEADER: aborts every FUSE connection mounted in the
# container (found from the st_dev of its FUSE mounts in the mount table of
# its PID 1), so that nothing waits on a dead or hung daemon.  Connections
# of the host or of other containers are never touched.
ct_abort_fuse() {
	local leader=$1 dev id ctl=/sys/fs/fuse/connections
	[ -n "$leader" ] && [ -r "/proc/$leader/mountinfo" ] || return 0
	awk '$0 ~ / - fuse/ { print $3 }' "/proc/$leader/mountinfo" 2>/dev/null | sort -u |
		while read -r dev; do
			id=$(((${dev%%:*} << 20) | ${dev##*:}))
			[ -e "$ctl/$id" ] || mount -t fusectl none "$ctl" 2>/dev/null
			[ -w "$ctl/$id/abort" ] && echo 1 >"$ctl/$id/abort" &&
				echo "# aborted the container's FUSE connection $id"
		done
	return 0
}

container_teardown() {
	local root=$CT_DIR/root
	if [ -n "$CT_NSPAWN_PID" ] && kill -0 "$CT_NSPAWN_PID" 2>/dev/null; then
		ct_abort_fuse "$CT_LEADER"
		# SIGRTMIN+4: systemd powers off.
		[ -n "$CT_LEADER" ] && kill -s SIGRTMIN+4 "$CT_LEADER" 2>/dev/null
		for _ in $(seq 200); do kill -0 "$CT_NSPAWN_PID" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$CT_NSPAWN_PID" 2>/dev/null; then
			echo "# the container did not power off within 20 s: killing it"
			ct_abort_fuse "$CT_LEADER"
			[ -n "$CT_LEADER" ] && kill -KILL "$CT_LEADER" 2>/dev/null
			for _ in $(seq 100); do kill -0 "$CT_NSPAWN_PID" 2>/dev/null || break; sleep 0.1; done
			kill -KILL "$CT_NSPAWN_PID" 2>/dev/null
		fi
		wait "$CT_NSPAWN_PID" 2>/dev/null
	fi
	CT_NSPAWN_PID=
	if mountpoint -q "$root" 2>/dev/null; then
		umount "$root" 2>/dev/null || umount -l "$root"
	fi
	# systemd-nspawn leaves its propagation directory when /run is not a tmpfs.
	rm -rf --one-file-system "/run/systemd/nspawn/propagate/$CT_NAME" 2>/dev/null
	[ -d "$CT_DIR" ] && ! mountpoint -q "$root" && rm -rf --one-file-system "$CT_DIR"
	return 0
}
