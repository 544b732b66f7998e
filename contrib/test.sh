#!/usr/bin/env bash
# Builds plugfs with -Werror and ASan+UBSan and runs every test (unit and
# integration, which mount for real: run as root with /dev/fuse).
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
ctest --test-dir "$build" --output-on-failure --timeout 900 "$@"
