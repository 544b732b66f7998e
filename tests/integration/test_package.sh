#!/usr/bin/env bash
# The Debian package: a release build (no sanitizers) in $T, `cpack -G DEB',
# its control data and contents, then the package unpacked into a scratch
# root (dpkg -x: the host is not changed) and its binaries run from there:
# `plugfs version', a mount, a registration, a connection through csi.sock.
# lintian passes it without an error or a warning (an override only with its
# reason next to it, in cmake/debian/), and the binaries carry the hardening
# of dpkg-buildflags.
. "$(dirname "$0")/lib.sh"
require_fuse
for tool in cpack dpkg-deb dpkg-shlibdeps readelf lintian; do
	command -v "$tool" >/dev/null || die "$tool is not installed (bash contrib/install-deps.sh)"
done
SRC=$PLUGFS_SOURCE_DIR
B=$T/build
ROOT=$T/root

# --- build and package ---
# contrib/test.sh builds the release tree once and packages it
# (PLUGFS_PACKAGE_BUILD: that tree, its .deb made by cpack -G DEB), for this
# test and test_systemd_restart; run alone, the test builds its own.
if [ -n "${PLUGFS_PACKAGE_BUILD:-}" ]; then
	B=$PLUGFS_PACKAGE_BUILD
	MAINT=$(sed -n 's/^PLUGFS_MAINTAINER:STRING=//p' "$B/CMakeCache.txt")
	check "the shared release tree is RelWithDebInfo" \
		grep -qx 'CMAKE_BUILD_TYPE:STRING=RelWithDebInfo' "$B/CMakeCache.txt"
	check "  and without sanitizers" grep -qx 'PLUGFS_SANITIZE:BOOL=OFF' "$B/CMakeCache.txt"
else
	MAINT="Test Packager <packager@example.net>"
	cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPLUGFS_TESTS=OFF \
		-DPLUGFS_SANITIZE=OFF -DPLUGFS_MAINTAINER="$MAINT" >"$T/configure.log" 2>&1 ||
		{ cat "$T/configure.log"; die "configure failed"; }
	cmake --build "$B" -j2 >"$T/build.log" 2>&1 || { tail -30 "$T/build.log"; die "build failed"; }
	(cd "$B" && cpack -G DEB) >"$T/cpack.log" 2>&1 || { tail -30 "$T/cpack.log"; die "cpack failed"; }
fi
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
check_eq "Maintainer: what PLUGFS_MAINTAINER says" "$MAINT" "$(field Maintainer)"
for bad in "plugfs <plugfs@localhost>" "nobody"; do
	cmake -S "$SRC" -B "$T/bad-maint" -DPLUGFS_TESTS=OFF -DPLUGFS_MAINTAINER="$bad" >"$T/bad.log" 2>&1
	check_eq "configure refuses PLUGFS_MAINTAINER=\"$bad\"" 1 $?
	check "  and says why" grep -q "PLUGFS_MAINTAINER" "$T/bad.log"
	rm -rf "$T/bad-maint"
done
deps=$(field Depends)
echo "# Depends: $deps"
has_dep() { grep -Eq "(^|, )$1( \(|,|$)" <<<"$deps"; }
check "Depends has fuse3 (fusermount3)" has_dep fuse3
check "Depends has libc6" has_dep libc6
# Every shared library the binaries need comes from a package in Depends.
for bin in "$B/cli/plugfs" "$B/tools/plugfs-demo-plugin"; do
	# Hardening (dpkg-buildflags, hardening=+all): PIE, relro, bindnow, and
	# fortified calls (__*_chk) from _FORTIFY_SOURCE=2.
	check "$(basename "$bin") is a PIE" bash -c "readelf -h '$bin' | grep -q 'Type: *DYN'"
	check "$(basename "$bin") has relro" bash -c "readelf -lW '$bin' | grep -q GNU_RELRO"
	check "$(basename "$bin") has bindnow" bash -c "readelf -d '$bin' | grep -q BIND_NOW"
	check "$(basename "$bin") calls fortified functions" bash -c "readelf --dyn-syms -W '$bin' | grep -q '__[a-z_]*_chk'"
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
for f in /usr/bin/plugfs /usr/lib/plugfs/plugfs-demo-plugin \
	/usr/share/man/man8/plugfs.8.gz /usr/share/man/man5/plugfs.ini.5.gz \
	/usr/share/man/man1/plugfs-demo-plugin.1.gz \
	/usr/lib/systemd/system/plugfs.service \
	/usr/share/bash-completion/completions/plugfs \
	/usr/share/zsh/vendor-completions/_plugfs \
	/usr/share/fish/vendor_completions.d/plugfs.fish \
	/usr/share/doc/plugfs/examples/plugfs.ini /usr/share/doc/plugfs/README.md \
	/usr/share/doc/plugfs/copyright /usr/share/doc/plugfs/changelog.gz; do
	check "package contains $f" grep -qx "$f" "$T/contents"
done
check "the demo plugin is off the PATH (not in /usr/bin)" bash -c "! grep -qx /usr/bin/plugfs-demo-plugin '$T/contents'"
# The state directory is made 0700 by postinst (and StateDirectory=), not
# shipped (dpkg would want 0755 for a directory in the package).
check "package ships no /var" bash -c "! grep -q '^/var' '$T/contents'"
check "every directory of the package is 0755" \
	bash -c "dpkg-deb -c '$DEB' | awk '\$1 ~ /^d/ && \$1 != \"drwxr-xr-x\"' | grep -c . | grep -qx 0"
check "package installs nothing into /etc (no conffile to merge)" bash -c "! grep -q '^/etc/' '$T/contents'"

# --- lintian: no error, no warning ---
# Overrides (cmake/debian/plugfs.lintian-overrides, none today) would each
# carry their reason on the line above; informational tags are printed only.
lintian --display-info --tag-display-limit 0 "$DEB" >"$T/lintian" 2>&1
lrc=$?
sed 's/^/# lintian: /' "$T/lintian"
check_eq "lintian exits 0" 0 "$lrc"
check_eq "lintian: no error and no warning" "" "$(grep -E '^[EW]: ' "$T/lintian")"

# --- unpack into a scratch root and run from there ---
dpkg -x "$DEB" "$ROOT" || die "dpkg -x failed"
IB=$ROOT/usr/bin/plugfs
check "installed binaries are stripped" bash -c "file '$IB' '$ROOT/usr/lib/plugfs/plugfs-demo-plugin' | grep -c ', stripped' | grep -qx 2"
check "copyright is machine-readable and names the license" \
	bash -c "head -n 1 '$ROOT/usr/share/doc/plugfs/copyright' | grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' &&
		grep -qx 'License: Expat' '$ROOT/usr/share/doc/plugfs/copyright'"
# The text of the stand-alone License paragraph (the last), unindented.
license_text() { awk '/^License: /{ n++ } n == 2 && !/^License: / { sub(/^ /, ""); if ($0 == ".") $0 = ""; print }' "$1"; }
check_eq "copyright carries the text of LICENSE" "$(tail -n +5 "$SRC/LICENSE")" \
	"$(license_text "$ROOT/usr/share/doc/plugfs/copyright")"
check_eq "the changelog's first entry is this version" "plugfs ($ver) unstable; urgency=medium" \
	"$(zcat "$ROOT/usr/share/doc/plugfs/changelog.gz" | head -n 1)"
check "the changelog's entries are signed by the maintainer" \
	bash -c "zcat '$ROOT/usr/share/doc/plugfs/changelog.gz' | grep -q '^ -- $MAINT  '"
check_eq "installed unit reloads with plugfs reload" 'ExecReload=/usr/bin/plugfs reload --pid $MAINPID' \
	"$(grep '^ExecReload=' "$ROOT/usr/lib/systemd/system/plugfs.service")"
check_eq "installed plugfs version" "plugfs $ver" "$("$IB" version)"
check_eq "installed unit starts /usr/bin/plugfs mount" "ExecStart=/usr/bin/plugfs mount --keep-mount" \
	"$(grep '^ExecStart=' "$ROOT/usr/lib/systemd/system/plugfs.service")"
LC_ALL=C man --warnings -l "$ROOT/usr/share/man/man8/plugfs.8.gz" >"$T/man8" 2>"$T/man8.warn"
check "installed plugfs(8) renders without warnings" bash -c "[ -s '$T/man8' ] && [ ! -s '$T/man8.warn' ]"
check "installed plugfs.ini(5) names every section" \
	bash -c "LC_ALL=C man -l '$ROOT/usr/share/man/man5/plugfs.ini.5.gz' | grep -c '^\[\(mount\|state\|control\|registry\|log\)\]$' | grep -qx 5"

# A mount and a registration from the installed binaries.
PLUGFS_BIN=$IB
PLUGFS_DEMO_PLUGIN=$ROOT/usr/lib/plugfs/plugfs-demo-plugin
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
