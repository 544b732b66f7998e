#!/usr/bin/env bash
# Builds plugfs with -Werror and ASan+UBSan and runs every test (unit and
# integration, which mount for real: run as root with /dev/fuse).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${PLUGFS_TEST_BUILD:-build-test}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DPLUGFS_WERROR=ON -DPLUGFS_SANITIZE=ON
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure --timeout 900 "$@"
