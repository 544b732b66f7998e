#!/usr/bin/env bash
# Installs the Debian 12 packages plugfs needs to build, run and test
# (python3: the tests' stand-in for systemd's fd store and expect_errno;
# podman and runc: the consumer test in a real container; prometheus: its
# promtool checks the metrics; lintian: test_package.sh checks the .deb;
# libcurl4-openssl-dev: the csi probe's HTTP/2 gRPC calls; python3-grpcio:
# the tests' stand-in CSI plugin, a real gRPC server (in test_podman_discover
# also in containers, the host's /usr bound read-only); clang and
# libclang-rt-14-dev: libFuzzer for the fuzz targets of tests/fuzz; zsh and
# fish: their completions are tested in the real shells).
set -euo pipefail
pkgs=(build-essential cmake pkg-config git
      libfuse3-dev fuse3 libsqlite3-dev sqlite3 libinih-dev libjansson-dev
      libcmocka-dev jq attr man-db groff-base procps util-linux file
      bash-completion shellcheck systemd dpkg-dev strace
      debootstrap systemd-container python3 podman runc prometheus lintian
      libcurl4-openssl-dev python3-grpcio clang libclang-rt-14-dev zsh fish)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
