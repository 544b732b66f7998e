#!/usr/bin/env bash
# Builds plugfs with -Werror and ASan+UBSan (clang) and runs every test (unit and
# integration, which mount for real: run as root with /dev/fuse).  Extra
# arguments go to each ctest run of the main build (e.g. -R test_fs_).
#
# PLUGFS_SOAK=1 is the soak mode: the long trials at their full counts
# (test_fs_kill, the system trials, test_state_small; each test says its
# counts), every test that mounts one at a time, and the fuzz targets for
# PLUGFS_FUZZ_SECONDS (600 each in the soak mode).  Run it before a release
# and after a change to the lifecycle (CONTRIBUTING.md); it takes about an
# hour.
#
# The phases, each timed (the table at the end):
#   build      every configuration, before any test: a build error fails
#              in minutes, not after the tests
#   parallel   the tests that do not mount and the ones that do, side by
#              side (-j $PLUGFS_TEST_JOBS, 3 on 2 cores); each keeps its
#              files, mountpoint, state and control socket in a temporary
#              directory of its own, and aborts only its own FUSE
#              connection
#   timing     the tests whose checks need the CPU (label timing), one at
#              a time
#   system     the systemd and podman tests (label system), one at a time
#   tsan       the daemon scenarios again under ThreadSanitizer
#   fuzz       the fuzz targets, two side by side, each PLUGFS_FUZZ_SECONDS;
#              started with the timing phase at the lowest priority (nice
#              19: they take the CPU the timing, system and tsan phases
#              leave, which run one test at a time, and the scheduler gives
#              the CPU to a test's process the moment it wants it), its
#              seconds from its start to its end
set -euo pipefail
cd "$(dirname "$0")/.."
build=${PLUGFS_TEST_BUILD:-build-test}
soak=${PLUGFS_SOAK:-0}
jobs=${PLUGFS_TEST_JOBS:-$(($(nproc) + 1))}
[ "$soak" = 1 ] && jobs=1
export PLUGFS_SOAK=$soak

phases=()
phase_secs=()
phase_rc=()
# phase NAME CMD...: runs CMD, records its seconds and whether it passed.
phase() {
	local name=$1 t=$SECONDS rc=0
	shift
	echo "# contrib/test.sh: phase $name"
	"$@" || rc=$?
	phases+=("$name")
	phase_secs+=($((SECONDS - t)))
	phase_rc+=("$rc")
	echo "# contrib/test.sh: phase $name: $((SECONDS - t)) s, $([ "$rc" = 0 ] && echo passed || echo FAILED)"
	return 0
}
table() {
	local i
	echo
	echo "# contrib/test.sh: phases$([ "$soak" = 1 ] && echo ' (soak mode)')"
	printf '#   %-10s %6s  %s\n' phase seconds result
	for i in "${!phases[@]}"; do
		printf '#   %-10s %6s  %s\n' "${phases[i]}" "${phase_secs[i]}" \
			"$([ "${phase_rc[i]}" = 0 ] && echo passed || echo FAILED)"
	done
	printf '#   %-10s %6s  %s\n' total "$SECONDS" "$([ "$soak" = 1 ] && echo '(wall clock)' || echo '(wall clock: fuzz ran beside timing, system and tsan)')"
}
failed() {
	local r
	for r in "${phase_rc[@]}"; do [ "$r" = 0 ] || return 0; done
	return 1
}
# ctest_run LOG ARGS...: ctest with ARGS, its output also in LOG.  Under
# CI=true a skipped test fails the run: CI has root, FUSE and every tool
# contrib/install-deps.sh installs, so nothing it runs may skip.
ctest_run() {
	local log=$1 rc=0
	shift
	ctest "$@" 2>&1 | tee "$log" || rc=1
	if [ "${CI:-}" = true ] && grep -q '\*\*\*Skipped\|Not Run' "$log"; then
		echo "# contrib/test.sh: CI=true: a test was skipped or not run:"
		grep '\*\*\*Skipped\|Not Run' "$log"
		rc=1
	fi
	return "$rc"
}

# configure DIR ARGS...: cmake -S . -B DIR ARGS, its output in DIR.configure.log
# (shown when it fails).
configure() {
	local dir=$1
	shift
	cmake -S . -B "$dir" "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; return 1; }
}
builds() {
	local pids=() p rc=0
	# The four configurations are configured side by side (cmake's checks
	# run one process at a time), then built one after the other, each
	# with every core.  The tests' tree is clang's: its UBSan also checks
	# pointer arithmetic on a null pointer, and its sanitized programs
	# start and exit in two thirds of the time of gcc's (the tests start
	# thousands of them).  The product's code is compiled by gcc as well,
	# with -Werror, in the package's and ThreadSanitizer's trees.
	CC=clang configure "$build" -DCMAKE_BUILD_TYPE=Debug -DPLUGFS_WERROR=ON \
		-DPLUGFS_SANITIZE=ON &
	pids+=($!)
	# -O2 finds warnings (-Wmaybe-uninitialized) a Debug build does not:
	# the optimised configuration with -Werror too.  It is the package's
	# tree: packaged here once (cpack -G DEB) for test_package and
	# test_systemd_restart (PLUGFS_PACKAGE_BUILD).
	configure "$build-release" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPLUGFS_WERROR=ON \
		-DPLUGFS_TESTS=OFF -DPLUGFS_SANITIZE=OFF &
	pids+=($!)
	# ThreadSanitizer's (below), gcc's.
	configure "$build-tsan" -DCMAKE_BUILD_TYPE=Debug -DPLUGFS_WERROR=ON -DPLUGFS_TSAN=ON &
	pids+=($!)
	# The fuzz targets' (clang and libFuzzer).
	CC=clang configure "$build-fuzz" -DCMAKE_BUILD_TYPE=Debug -DPLUGFS_WERROR=ON \
		-DPLUGFS_SANITIZE=ON -DPLUGFS_FUZZ=ON -DPLUGFS_TESTS=OFF \
		-DPLUGFS_FUZZ_SECONDS="$fuzz_secs" &
	pids+=($!)
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	[ "$rc" = 0 ] || return 1
	cmake --build "$build" -j"$(nproc)" || return 1
	cmake --build "$build-release" -j"$(nproc)" || return 1
	rm -f "$build-release"/plugfs_*.deb
	(cd "$build-release" && cpack -G DEB >cpack.log 2>&1) || { tail -n 30 "$build-release/cpack.log"; return 1; }
	cmake --build "$build-tsan" -j"$(nproc)" --target plugfs plugfs-demo-plugin fs-harness \
		plugfs-test-storm plugfs-test-ctlraw plugfs-test-csi-probe || return 1
	cmake --build "$build-fuzz" -j"$(nproc)" --target fuzz_request fuzz_config fuzz_legacy \
		fuzz_csi_pb || return 1
}
fuzz_secs=${PLUGFS_FUZZ_SECONDS:-$([ "$soak" = 1 ] && echo 600 || echo 60)}
phase build builds
if failed; then
	table
	exit 1
fi
export PLUGFS_PACKAGE_BUILD=$PWD/$build-release

# Every test but the timing and system ones, side by side; the longest
# first (their COST, or the times of an earlier run).  In the soak mode the
# ones that mount run one at a time, after the rest.
if [ "$soak" = 1 ]; then
	phase parallel ctest_run "$build/parallel.log" --test-dir "$build" --output-on-failure \
		--timeout 900 -LE 'mount|timing|system' -j"$(nproc)" "$@"
	phase mount ctest_run "$build/mount.log" --test-dir "$build" --output-on-failure \
		--timeout 900 -L mount -LE 'timing|system' "$@"
else
	phase parallel ctest_run "$build/parallel.log" --test-dir "$build" --output-on-failure \
		--timeout 900 -LE 'timing|system' -j"$jobs" "$@"
fi
# The fuzz targets (tests/fuzz): clang and libFuzzer, ASan+UBSan, each run
# for PLUGFS_FUZZ_SECONDS, two at a time; they print their executions.
# The whole log in $build-fuzz/fuzz.log; the figures and verdicts here.
# In the soak mode they run alone, after the rest.
fuzz() {
	local rc=0
	nice -n 19 ctest --test-dir "$build-fuzz" -L fuzz -V -j2 >"$build-fuzz/fuzz.log" 2>&1 || rc=1
	grep -E '^[0-9]+: (#|ok|not ok)|tests passed|tests failed' "$build-fuzz/fuzz.log"
	return "$rc"
}
fuzz_pid=
if [ "$soak" != 1 ]; then
	fuzz_start=$SECONDS
	fuzz >"$build-fuzz/fuzz.out" 2>&1 &
	fuzz_pid=$!
fi
phase timing ctest_run "$build/timing.log" --test-dir "$build" --output-on-failure \
	--timeout 900 -L timing "$@"
phase system ctest_run "$build/system.log" --test-dir "$build" --output-on-failure \
	--timeout 1800 -L system "$@"
# ThreadSanitizer (it excludes ASan: a build of its own) over the daemon
# scenarios labelled tsan, where FUSE, control and prober threads run at
# once.  A report in a daemon log fails the test (lib.sh); a client or
# harness with one exits 66.  Suppressions, each with its reason, would go
# in tests/tsan.supp.
TSAN_OPTIONS=${TSAN_OPTIONS:-second_deadlock_stack=1} \
	phase tsan ctest_run "$build-tsan/tsan.log" --test-dir "$build-tsan" -L tsan \
	--output-on-failure --timeout 600
if [ -n "$fuzz_pid" ]; then
	rc=0
	wait "$fuzz_pid" || rc=$?
	cat "$build-fuzz/fuzz.out"
	phases+=("fuzz")
	phase_secs+=($((SECONDS - fuzz_start)))
	phase_rc+=("$rc")
	echo "# contrib/test.sh: phase fuzz (beside timing, system and tsan): $((SECONDS - fuzz_start)) s, $([ "$rc" = 0 ] && echo passed || echo FAILED)"
else
	phase fuzz fuzz
fi
table
if failed; then exit 1; fi
