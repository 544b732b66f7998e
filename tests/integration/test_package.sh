#!/usr/bin/env bash
# The Debian package: a release build (no sanitizers) in $T, `cpack -G DEB',
# its control data and contents, then the package unpacked into a scratch
# root (dpkg -x: the host is not changed) and its binaries run from there:
# `plugfs version', a mount, a registration, a connection through csi.sock.
. "$(dirname "$0")/lib.sh"
require_fuse
for tool in cpack dpkg-deb dpkg-shlibdeps readelf; do
	command -v "$tool" >/dev/null || die "$tool is not installed (bash contrib/install-deps.sh)"
done
SRC=$PLUGFS_SOURCE_DIR
B=$T/build
ROOT=$T/root

# --- build and package ---
cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPLUGFS_TESTS=OFF \
	-DPLUGFS_SANITIZE=OFF >"$T/configure.log" 2>&1 || { cat "$T/configure.log"; die "configure failed"; }
cmake --build "$B" -j2 >"$T/build.log" 2>&1 || { tail -30 "$T/build.log"; die "build failed"; }
(cd "$B" && cpack -G DEB) >"$T/cpack.log" 2>&1 || { tail -30 "$T/cpack.log"; die "cpack failed"; }
debs=("$B"/plugfs_*.deb)
check_eq "cpack built one .deb" 1 "${#debs[@]}"
DEB=${debs[0]}
[ -f "$DEB" ] || die "no .deb in $B"
ver=$("$B/cli/plugfs" version | awk '{print $2}')
check_eq "package file name carries version and architecture" \
	"plugfs_${ver}_$(dpkg --print-architecture).deb" "$(basename "$DEB")"

# --- control data ---
field() { dpkg-deb -f "$DEB" "$1"; }
check_eq "Package: plugfs" "plugfs" "$(field Package)"
check_eq "Version: $ver" "$ver" "$(field Version)"
check_eq "Section: admin" "admin" "$(field Section)"
deps=$(field Depends)
echo "# Depends: $deps"
has_dep() { grep -Eq "(^|, )$1( \(|,|$)" <<<"$deps"; }
check "Depends has fuse3 (fusermount3)" has_dep fuse3
check "Depends has libc6" has_dep libc6
# Every shared library the binaries need comes from a package in Depends.
for bin in "$B/cli/plugfs" "$B/tools/plugfs-demo-plugin"; do
	for lib in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		path=$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')
		pkg=$(dpkg -S "$path" 2>/dev/null | head -n 1 | cut -d: -f1)
		if [ -z "$pkg" ]; then
			real=$(readlink -f "$path")
			pkg=$(dpkg -S "$real" 2>/dev/null | head -n 1 | cut -d: -f1)
		fi
		check "$(basename "$bin") needs $lib: its package ${pkg:-?} is in Depends" has_dep "${pkg:-none}"
	done
done
# The libraries of docs/design.md "Parts and data flow": FUSE, SQLite, inih,
# jansson, and libcurl (the csi probe).
for p in libfuse3-3 libsqlite3-0 libinih1 libjansson4 libcurl4; do
	check "Depends has $p" has_dep "$p"
done
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
for d in $(tr ',' '\n' <<<"$deps" | sed 's/(.*//; s/ //g'); do
	check "dependency $d is a Debian 12 package installed here" installed "$d"
done
dpkg-deb -I "$DEB" >"$T/info"
for s in postinst prerm postrm; do
	check "maintainer script $s is in the package" grep -q " $s " "$T/info"
done

# --- contents ---
dpkg-deb -c "$DEB" | awk '{print $NF}' | sed 's|^\./|/|' >"$T/contents"
for f in /usr/bin/plugfs /usr/bin/plugfs-demo-plugin \
	/usr/share/man/man8/plugfs.8.gz /usr/share/man/man5/plugfs.ini.5.gz \
	/usr/share/man/man1/plugfs-demo-plugin.1.gz \
	/usr/lib/systemd/system/plugfs.service \
	/usr/share/bash-completion/completions/plugfs \
	/usr/share/doc/plugfs/examples/plugfs.ini /usr/share/doc/plugfs/README.md; do
	check "package contains $f" grep -qx "$f" "$T/contents"
done
check "package contains the state directory /var/lib/plugfs/" grep -qx /var/lib/plugfs/ "$T/contents"
check_eq "the state directory is root's, 0700" "drwx------ root/root" \
	"$(dpkg-deb -c "$DEB" | awk '$NF == "./var/lib/plugfs/" {print $1, $2}')"
check "package installs nothing into /etc (no conffile to merge)" bash -c "! grep -q '^/etc/' '$T/contents'"

# --- unpack into a scratch root and run from there ---
dpkg -x "$DEB" "$ROOT" || die "dpkg -x failed"
IB=$ROOT/usr/bin/plugfs
check "installed binaries are stripped" bash -c "file '$IB' '$ROOT/usr/bin/plugfs-demo-plugin' | grep -c ', stripped' | grep -qx 2"
check_eq "installed plugfs version" "plugfs $ver" "$("$IB" version)"
check_eq "installed unit starts /usr/bin/plugfs mount" "ExecStart=/usr/bin/plugfs mount --keep-mount" \
	"$(grep '^ExecStart=' "$ROOT/usr/lib/systemd/system/plugfs.service")"
LC_ALL=C man --warnings -l "$ROOT/usr/share/man/man8/plugfs.8.gz" >"$T/man8" 2>"$T/man8.warn"
check "installed plugfs(8) renders without warnings" bash -c "[ -s '$T/man8' ] && [ ! -s '$T/man8.warn' ]"
check "installed plugfs.ini(5) names every section" \
	bash -c "LC_ALL=C man -l '$ROOT/usr/share/man/man5/plugfs.ini.5.gz' | grep -c '^\[\(mount\|state\|control\|registry\|log\)\]$' | grep -qx 5"

# A mount and a registration from the installed binaries.
PLUGFS_BIN=$IB
PLUGFS_DEMO_PLUGIN=$ROOT/usr/bin/plugfs-demo-plugin
write_config
start_daemon
check "installed daemon mounted $MNT" is_mounted "$MNT"
check "plugins/csi-node is there" test -d "$MNT/plugins/csi-node"
start_demo_plugin "$T/alloc/a1/csi.sock" a1
plugfs register --type csi-node --name pkg --alloc a1 --socket "$T/alloc/a1/csi.sock"
check_eq "installed plugfs register exits 0" 0 $?
check_eq "csi.sock points at the registered socket" "$T/alloc/a1/csi.sock" \
	"$(readlink "$MNT/plugins/csi-node/pkg/csi.sock")"
check_eq "a connection through csi.sock reaches a1" "a1" \
	"$(demo_connect "$MNT/plugins/csi-node/pkg/csi.sock")"
check "installed plugfs list shows it" bash -c "'$IB' -c '$CFG' list | grep -q 'pkg'"
stop_daemon
finish
