#!/usr/bin/env bash
# Builds plugfs with -Werror and ASan+UBSan and runs every test (unit and
# integration, which mount for real: run as root with /dev/fuse).  Extra
# arguments go to each ctest run of the main build (e.g. -R test_fs_).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${PLUGFS_TEST_BUILD:-build-test}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DPLUGFS_WERROR=ON -DPLUGFS_SANITIZE=ON
cmake --build "$build" -j"$(nproc)"
# -O2 finds warnings (-Wmaybe-uninitialized) a Debug build does not: build
# the optimised configuration with -Werror too (the package test builds and
# runs it).
cmake -S . -B "$build-release" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPLUGFS_WERROR=ON -DPLUGFS_TESTS=OFF
cmake --build "$build-release" -j"$(nproc)"
# Every other configuration is built before any test runs, so a build
# error fails the run in minutes, not after the tests: ThreadSanitizer's
# (below), the fuzz targets' (clang and libFuzzer), and the whole tree,
# tests and benches included, with clang and -Werror (clang warns where gcc
# does not, e.g. -Wformat-nonliteral), compiled only.
cmake -S . -B "$build-tsan" -DCMAKE_BUILD_TYPE=Debug -DPLUGFS_WERROR=ON -DPLUGFS_TSAN=ON
cmake --build "$build-tsan" -j"$(nproc)" --target plugfs plugfs-demo-plugin fs-harness \
	plugfs-test-storm plugfs-test-ctlraw plugfs-test-csi-probe
fuzz_secs=${PLUGFS_FUZZ_SECONDS:-60}
CC=clang cmake -S . -B "$build-fuzz" -DCMAKE_BUILD_TYPE=Debug -DPLUGFS_WERROR=ON \
	-DPLUGFS_SANITIZE=ON -DPLUGFS_FUZZ=ON -DPLUGFS_TESTS=OFF -DPLUGFS_FUZZ_SECONDS="$fuzz_secs"
cmake --build "$build-fuzz" -j"$(nproc)" --target fuzz_request fuzz_config fuzz_legacy \
	fuzz_csi_pb
CC=clang cmake -S . -B "$build-clang" -DCMAKE_BUILD_TYPE=Debug -DPLUGFS_WERROR=ON
cmake --build "$build-clang" -j"$(nproc)"
# The tests that do not mount (unit, the integration scripts and benches
# that need no FUSE) in parallel: each keeps its files in a temporary
# directory of its own and uses no fixed path or port.  Then the ones that
# mount (label mount), one at a time: they share the kernel's FUSE and
# /dev/fuse, and the probes' timings want the CPU.  Each phase's time is
# printed.
rc=0
t=$SECONDS
ctest --test-dir "$build" --output-on-failure --timeout 900 -LE mount -j"$(nproc)" "$@" || rc=1
echo "# contrib/test.sh: the tests that do not mount, in parallel: $((SECONDS - t)) s"
t=$SECONDS
ctest --test-dir "$build" --output-on-failure --timeout 900 -L mount "$@" || rc=1
echo "# contrib/test.sh: the tests that mount, one at a time: $((SECONDS - t)) s"
[ "$rc" = 0 ] || exit 1
# ThreadSanitizer (it excludes ASan: a build of its own) over the daemon
# scenarios labelled tsan, where FUSE, control and prober threads run at
# once.  A report in a daemon log fails the test (lib.sh); a client or
# harness with one exits 66.  Suppressions, each with its reason, would go
# in tests/tsan.supp.  Built above.
TSAN_OPTIONS=${TSAN_OPTIONS:-second_deadlock_stack=1} \
	ctest --test-dir "$build-tsan" -L tsan --output-on-failure --timeout 600
# The fuzz targets (tests/fuzz): clang and libFuzzer, ASan+UBSan, each run
# for PLUGFS_FUZZ_SECONDS (default 60); they print their executions.  Built
# above.  The whole log in $build-fuzz/fuzz.log; the figures and verdicts here.
ctest --test-dir "$build-fuzz" -L fuzz -V 2>&1 | tee "$build-fuzz/fuzz.log" |
	grep -E '^[0-9]+: (#|ok|not ok)|tests passed|tests failed'
