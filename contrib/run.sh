#!/usr/bin/env bash
# Builds plugfs and runs it in the foreground on its built-in defaults
# (mount at /run/plugfs, state in /var/lib/plugfs, control socket
# /run/plugfs.sock).  Ctrl-C unmounts cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPLUGFS_TESTS=OFF
cmake --build build -j"$(nproc)"
# The default state directory (the systemd unit's StateDirectory= and the
# package create it elsewhere).
[ -d /var/lib/plugfs ] || mkdir -m 0700 /var/lib/plugfs
exec ./build/cli/plugfs mount "$@"
