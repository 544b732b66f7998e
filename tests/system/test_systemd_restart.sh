#!/usr/bin/env bash
# plugfs under a real systemd: restarts, crashes and re-execs of the daemon
# seen by a consumer through a bind mount of a plugin directory.
#
# On the host: the cached Debian 12 tree (nspawn.sh), plugfs's .deb built as
# test_package.sh builds it (RelWithDebInfo, cpack -G DEB; in
# $PLUGFS_BUILD_DIR/tests/system/pkg, kept between runs), then the tree
# booted with systemd-nspawn (systemd 252 as PID 1, /dev/fuse bound) and
# inside/trials.sh run in it (it says what the trials are; every check of
# theirs counts).  The container, its overlay and $T go on exit, whatever
# happened.
#
# Bounded: every step has a timeout, and a watchdog ends the whole test
# after PLUGFS_SYSTEM_DEADLINE seconds (1500): it aborts the container's
# own FUSE connections (never another one) and kills the container.
#
# Environment: PLUGFS_SYSTEM_CACHE (/var/cache/plugfs-test) holds the tree;
# PLUGFS_SYSTEM_RESTARTS, _KILLS, _REEXECS, _CACHE_TIMEOUT, _SETTLE tune the
# trials.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/nspawn.sh"
nspawn_require
for tool in cmake cpack dpkg-deb; do
	command -v "$tool" >/dev/null || die "$tool is not installed (bash contrib/install-deps.sh)"
done
HERE=$(cd "$(dirname "$0")" && pwd)
CONNECT_LOOP=${PLUGFS_CONNECT_LOOP:-$PLUGFS_BUILD_DIR/tests/system/plugfs-test-connect-loop}
[ -x "$CONNECT_LOOP" ] || die "no consumer binary at $CONNECT_LOOP (build the tests)"
DEADLINE=${PLUGFS_SYSTEM_DEADLINE:-1500}
SHARE=$T/share
mkdir -p "$SHARE/out"

_system_cleanup() {
	local rc=$?
	[ -n "${_WATCHDOG:-}" ] && kill "$_WATCHDOG" 2>/dev/null
	container_teardown
	(exit "$rc")
	_cleanup
}
trap _system_cleanup EXIT

# The watchdog: a loop of 1 s sleeps (ends promptly when killed).  At the
# deadline it frees whatever waits on the container's FUSE connections,
# kills the container (everything inside goes with its PID 1) and this
# script.
(
	end=$((SECONDS + DEADLINE))
	while [ "$SECONDS" -lt "$end" ]; do sleep 1; done
	echo "not ok - watchdog: the test ran for more than $DEADLINE s: killing the container"
	leader=$(cat "$CT_DIR/leader" 2>/dev/null)
	ct_abort_fuse "$leader"
	[ -n "$leader" ] && kill -KILL "$leader" 2>/dev/null
	kill -TERM $$
) &
_WATCHDOG=$!

# elapsed SINCE: seconds since SINCE (an $EPOCHREALTIME), one decimal.
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
t_start=$EPOCHREALTIME
# --- the Debian tree ---
t0=$EPOCHREALTIME
tree_ensure
t_tree=$(elapsed "$t0")

# --- the package, as test_package.sh builds it ---
# contrib/test.sh builds and packages the release tree once
# (PLUGFS_PACKAGE_BUILD); run alone, the test builds its own.
t0=$EPOCHREALTIME
if [ -n "${PLUGFS_PACKAGE_BUILD:-}" ]; then
	PKG=$PLUGFS_PACKAGE_BUILD
else
	PKG=$PLUGFS_BUILD_DIR/tests/system/pkg
	mkdir -p "$PKG"
	cmake -S "$PLUGFS_SOURCE_DIR" -B "$PKG" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPLUGFS_TESTS=OFF \
		-DPLUGFS_SANITIZE=OFF >"$T/configure.log" 2>&1 || { cat "$T/configure.log"; die "configure failed"; }
	timeout 900 cmake --build "$PKG" -j2 >"$T/build.log" 2>&1 || { tail -30 "$T/build.log"; die "build failed"; }
	rm -f "$PKG"/plugfs_*.deb
	(cd "$PKG" && timeout 300 cpack -G DEB) >"$T/cpack.log" 2>&1 || { tail -30 "$T/cpack.log"; die "cpack failed"; }
fi
debs=("$PKG"/plugfs_*.deb)
check_eq "cpack built one .deb" 1 "${#debs[@]}"
[ -f "${debs[0]}" ] || die "no .deb in $PKG"
cp "${debs[0]}" "$SHARE/"
install -m 0755 "$CONNECT_LOOP" "$SHARE/plugfs-test-connect-loop"
install -m 0755 "$HERE/inside/trials.sh" "$HERE/inside/outage-hook" "$SHARE/"
t_pkg=$(elapsed "$t0")

# --- boot ---
t0=$EPOCHREALTIME
container_boot "$SHARE"
check "the container booted with systemd as PID 1" \
	bash -c "[ \"\$(cat /proc/$CT_LEADER/comm)\" = systemd ]"
check_eq "systemd 252 in the container" 252 \
	"$(ct_exec 30 systemctl --version | awk 'NR == 1 { print $2 }')"
t_boot=$(elapsed "$t0")

# --- the trials ---
t0=$EPOCHREALTIME
ct_exec 1200 bash /plugfs-test/trials.sh 2>&1 | tee "$T/trials.log"
rc=${PIPESTATUS[0]}
t_trials=$(elapsed "$t0")
check_eq "trials inside the container: no failed check" 0 "$rc"
if [ "$rc" != 0 ]; then
	echo "--- journal of the container (last 60 lines) ---"
	tail -n 60 "$SHARE/out/journal.txt" 2>/dev/null
	echo "--- consumer ---"
	cat "$SHARE/out/consumer.log" 2>/dev/null
	echo "--- console (last 20 lines) ---"
	tail -n 20 "$T/console.log"
fi
echo "# durations: tree ${t_tree} s, package ${t_pkg} s, boot ${t_boot} s, trials ${t_trials} s, total $(elapsed "$t_start") s"

# --- stop ---
container_teardown
check "the container is gone" bash -c "! kill -0 $CT_LEADER 2>/dev/null"
finish
