#!/usr/bin/env bash
# The documentation matches the program: the man pages render without a
# warning, name every subcommand and option that `plugfs --help' shows and
# every config key the parser knows; the example config and the systemd unit
# are valid; the contrib scripts pass shellcheck.  No FUSE needed.
. "$(dirname "$0")/lib.sh"
SRC=$PLUGFS_SOURCE_DIR
MAN8=$SRC/docs/plugfs.8
MAN5=$SRC/docs/plugfs.ini.5
MAN1=$SRC/docs/plugfs-demo-plugin.1

for tool in man groff systemd-analyze shellcheck; do
	command -v "$tool" >/dev/null || die "$tool is not installed (bash contrib/install-deps.sh)"
done

# --- the pages render cleanly, in 80 columns ---
render() { # PAGE -> $T/PAGE.txt, warnings in $T/PAGE.warn
	local b
	b=$(basename "$1")
	LC_ALL=C MANWIDTH=80 man --warnings=w -l "$1" >"$T/$b.txt" 2>"$T/$b.warn"
}
for page in "$MAN8" "$MAN5" "$MAN1"; do
	b=$(basename "$page")
	render "$page"
	check_eq "$b: man exits 0" 0 $?
	check_eq "$b: no warnings from man --warnings" "" "$(cat "$T/$b.warn")"
	groff -man -ww -z "$page" 2>"$T/$b.groff"
	check_eq "$b: no warnings from groff -ww" "" "$(cat "$T/$b.groff")"
	check "$b: renders to some text" test "$(wc -l <"$T/$b.txt")" -gt 50
	long=$(awk 'length > 80' "$T/$b.txt")
	check_eq "$b: no rendered line wider than 80 columns" "" "$long"
done
T8=$T/plugfs.8.txt
T5=$T/plugfs.ini.5.txt

# --- the version in the pages is the program's ---
ver=$("$PLUGFS_BIN" version | awk '{print $2}')
check "plugfs.8 carries version $ver" grep -q "^\.TH PLUGFS 8 .*\"plugfs $ver\"" "$MAN8"
check "plugfs.ini.5 carries version $ver" grep -q "^\.TH PLUGFS.INI 5 .*\"plugfs $ver\"" "$MAN5"
check "plugfs-demo-plugin.1 carries version $ver" grep -q "^\.TH PLUGFS-DEMO-PLUGIN 1 .*\"plugfs $ver\"" "$MAN1"

# --- every option of plugfs-demo-plugin is in its page ---
"$PLUGFS_DEMO_PLUGIN" --help >"$T/demo-help" || die "plugfs-demo-plugin --help failed"
T1=$T/plugfs-demo-plugin.1.txt
for o in $(grep -Eo -- '(^|[^A-Za-z0-9-])--?[A-Za-z][a-z-]*' "$T/demo-help" | grep -Eo -- '--?[A-Za-z][a-z-]*' | sort -u); do
	check "plugfs-demo-plugin.1 documents $o" grep -Eq -- "(^|[^A-Za-z0-9-])$o([^a-z-]|$)" "$T1"
done

# --- every subcommand and option of the program is in plugfs(8) ---
"$PLUGFS_BIN" --help >"$T/help" || die "plugfs --help failed"
mapfile -t cmds < <(sed -n '/^Commands:/,/^$/p' "$T/help" | awk '/^  [a-z]/ {print $1}')
check "plugfs --help lists commands (${#cmds[@]})" test "${#cmds[@]}" -ge 1
for c in "${cmds[@]}"; do
	check "plugfs.8 SYNOPSIS has \`plugfs $c'" grep -q "^ *plugfs $c\b" "$T8"
	check "plugfs.8 COMMANDS describes $c" grep -Eq "^       $c( |$)" "$T8"
	"$PLUGFS_BIN" "$c" --help >"$T/help-$c" 2>&1
	check_eq "plugfs $c --help exits 0" 0 $?
	helps=("$T/help-$c")
	if [ "$c" = state ]; then
		for s in $(grep -Eo '\b(import|dump|check)\b' "$T/help-$c" | sort -u); do
			"$PLUGFS_BIN" state "$s" --help >"$T/help-state-$s" 2>&1
			helps+=("$T/help-state-$s")
		done
	fi
	# The command's entries under COMMANDS (a tag at 7 columns starting with
	# its name, down to the next tag).
	awk -v c="$c" '/^[A-Z]/ { sec = $0 } sec == "COMMANDS" && /^       [a-z]/ { on = ($1 == c) }
		sec == "COMMANDS" && on' "$T8" >"$T/entry-$c"
	check "plugfs.8 has an entry for $c under COMMANDS" test -s "$T/entry-$c"
	# Every option its --help shows, long and short, is in that entry; -c
	# and -h/--help are under OPTIONS for all commands.
	for o in $(grep -Eho -- '(^|[^A-Za-z0-9-])--?[A-Za-z][a-z-]*' "${helps[@]}" |
		grep -Eo -- '--?[A-Za-z][a-z-]*' | sort -u); do
		case $o in
		-c | -h | --help) where=$T8 ;;
		*) where=$T/entry-$c ;;
		esac
		check "plugfs.8 documents \`plugfs $c $o'" grep -Eq -- "(^|[^A-Za-z0-9-])$o([^a-z-]|$)" "$where"
	done
done
for s in 0 1 2 3; do
	check "plugfs.8 EXIT STATUS has $s" grep -Eq "^       $s +[A-Z]" "$T8"
done
for sig in SIGTERM SIGINT SIGHUP; do
	check "plugfs.8 SIGNALS has $sig" grep -q "$sig" "$T8"
done
for f in /etc/plugfs/plugfs.ini /run/plugfs.sock /var/lib/plugfs/state.db PLUGFS_CONFIG; do
	check "plugfs.8 names $f" grep -q "$f" "$T8"
done

# --- every config key is in plugfs.ini(5) (under its section) and in the example ---
# The parser's table of keys (config/keys.c): {"section", "key", ...}.  No
# fallback: a table not found fails the count check below.
mapfile -t keys < <(grep -Eo '^\s*\{"[a-z]+", "[a-z_]+", K_' "$SRC/config/keys.c" |
	sed -E 's/^\s*\{"([a-z]+)", "([a-z_]+)".*/\1.\2/')
check "config keys found (${#keys[@]})" test "${#keys[@]}" -ge 14
mapfile -t ex_keys < <(awk '/^\[/ {gsub(/[][]/, ""); s=$0} /^[a-z_]+ *=/ {print s "." $1}' \
	"$SRC/contrib/plugfs.ini" | sort)
check_eq "contrib/plugfs.ini sets exactly the keys the parser knows" \
	"$(printf '%s\n' "${keys[@]}" | sort | tr '\n' ' ')" "$(printf '%s\n' "${ex_keys[@]}" | tr '\n' ' ')"
for k in "${keys[@]}"; do
	sec=${k%%.*} key=${k#*.}
	# The key's paragraph: from its header line to the next one; it must sit
	# inside the section's part of the page and give a default.
	para=$(awk -v s="[$sec]" -v k="$key" '
		/^\[/ { insec = ($0 == s) }
		# a .TP tag: alone on its line, or (when short) before the text
		on && /^       [a-z_]+( |$)/ { on = 0 }
		insec && ($0 == "       " k || index($0, "       " k " ") == 1) { on = 1; print; next }
		on && /^\[/ { on = 0 }
		on { print }' "$T5")
	check "plugfs.ini.5 documents [$sec] $key" test -n "$para"
	check "plugfs.ini.5 gives the default of [$sec] $key" grep -q "Default:" <<<"$para"
	check "contrib/plugfs.ini explains [$sec] $key with a comment" \
		awk -v s="[$sec]" -v k="$key" '
			/^\[/ { insec = ($0 == s) }
			insec && /^#/ { c = 1; next }
			insec && $1 == k && c { found = 1 }
			!/^#/ { c = 0 }
			END { exit !found }' "$SRC/contrib/plugfs.ini"
done
for sec in mount state control registry probe log; do
	check "plugfs.ini.5 has section [$sec]" grep -q "^\[$sec\]$" "$T5"
done
# --- every [discover.NAME] key (config/discover.c's table) is in plugfs.ini(5) ---
mapfile -t dkeys < <(sed -n '/^static const char \*const keys\[PLUGFS_DK_N\]/,/};/p' \
	"$SRC/config/discover.c" | grep -Eo '"[a-z_]+"' | tr -d '"')
check_eq "[discover.NAME] keys found" 6 "${#dkeys[@]}"
check "plugfs.ini.5 has section [discover.NAME]" grep -q "^\[discover.NAME\]$" "$T5"
for key in "${dkeys[@]}"; do
	para=$(awk -v k="$key" '
		/^\[/ { insec = ($0 == "[discover.NAME]") }
		on && /^       [a-z_]+( |$)/ { on = 0 }
		insec && ($0 == "       " k || index($0, "       " k " ") == 1) { on = 1; print; next }
		on && /^\[/ { on = 0 }
		on { print }' "$T5")
	check "plugfs.ini.5 documents [discover.NAME] $key" test -n "$para"
	check "plugfs.ini.5 gives the default of [discover.NAME] $key" grep -q "Default:" <<<"$para"
done
for k in "${keys[@]}"; do
	check "README's configuration table has ${k#*.}" grep -q "| \`${k#*.}\` |" "$SRC/README.md"
done

# --- the example config is accepted by plugfs ---
if "$PLUGFS_BIN" --help | grep -q '^  state '; then
	# Point the paths at $T, keep everything else: the file must parse.
	sed -e "s|^mountpoint = .*|mountpoint = $T/mnt|" -e "s|^path = .*|path = $T/state.db|" \
		-e "s|^socket = .*|socket = $T/ctl.sock|" "$SRC/contrib/plugfs.ini" >"$T/example.ini"
	"$PLUGFS_BIN" -c "$T/example.ini" state dump >"$T/out" 2>&1
	check_eq "contrib/plugfs.ini is accepted (state dump on it exits 0)" 0 $?
	cat "$T/out"
fi

# --- the systemd unit ---
U=$SRC/contrib/plugfs.service
mkdir -p "$T/man/man8" "$T/man/man5"
cp "$MAN8" "$T/man/man8/" && cp "$MAN5" "$T/man/man5/"
# verify wants the binaries of ExecStart= and ExecReload= to exist: point
# them at the build.
sed -E "s|^(Exec[A-Za-z]+=-?)/usr/bin/plugfs |\1$PLUGFS_BIN |" "$U" >"$T/plugfs.service"
MANPATH=$T/man systemd-analyze verify "$T/plugfs.service" >"$T/verify" 2>&1
check_eq "systemd-analyze verify plugfs.service (man pages included) exits 0" 0 $?
check_eq "systemd-analyze verify prints nothing" "" "$(grep -v '^$' "$T/verify")"
# The metrics timer and its service (the service's ExecStart= at the build).
sed "s|^ExecStart=/usr/bin/plugfs |ExecStart=$PLUGFS_BIN |" "$SRC/contrib/plugfs-metrics.service" \
	>"$T/plugfs-metrics.service"
cp "$SRC/contrib/plugfs-metrics.timer" "$T/plugfs-metrics.timer"
MANPATH=$T/man systemd-analyze verify "$T/plugfs-metrics.timer" "$T/plugfs-metrics.service" \
	>"$T/verify" 2>&1
check_eq "systemd-analyze verify plugfs-metrics.timer and .service exits 0" 0 $?
check_eq "it prints nothing" "" "$(grep -v '^$' "$T/verify")"
check "the metrics service writes the textfile with plugfs metrics" \
	grep -q '^ExecStart=/usr/bin/plugfs metrics --textfile /var/lib/prometheus/node-exporter/plugfs.prom$' \
	"$SRC/contrib/plugfs-metrics.service"
check_eq "unit: Type=notify" "notify" "$(unit_setting Type)"
check_eq "unit: ExecStart runs plugfs mount, leaving the mount to the next start" \
	"/usr/bin/plugfs mount --keep-mount" "$(unit_setting ExecStart)"
check_eq "unit: Restart=on-failure" "on-failure" "$(unit_setting Restart)"
check_eq "unit: DeviceAllow /dev/fuse" "/dev/fuse rw" "$(unit_setting DeviceAllow)"
check "unit: CAP_SYS_ADMIN kept for mount(2)" grep -q '^CapabilityBoundingSet=.*CAP_SYS_ADMIN' "$U"
check_eq "unit: stop-post decides what becomes of the mount" \
	"-/usr/bin/plugfs stop-post --unit %n" "$(unit_setting ExecStopPost)"
check_eq "unit: the file descriptor store keeps the connection" 4 "$(unit_setting FileDescriptorStoreMax)"
check "unit: ordered before consumers" grep -q '^Before=.*nomad.service.*docker.service' "$U"
# A setting that gives the service its own mount namespace hides the mount
# from the host (systemd.exec(5), MountFlags=): none may be set.
ns=$(grep -E '^(Protect(System|Home|KernelTunables|KernelModules|KernelLogs|ControlGroups|Proc|Hostname)|Private(Tmp|Devices|Mounts|Network|Users)|ReadWritePaths|ReadOnlyPaths|InaccessiblePaths|TemporaryFileSystem|BindPaths|BindReadOnlyPaths|MountFlags|ProcSubset|RootDirectory)=' "$U")
check_eq "unit: no mount-namespace setting (the mount must reach the host)" "" "$ns"

# --- scripts ---
shellcheck -s bash "$SRC"/contrib/*.sh "$SRC/contrib/plugfs.bash-completion" >"$T/sc" 2>&1
check_eq "shellcheck of contrib/ is clean" "" "$(cat "$T/sc")"
shellcheck -s sh "$SRC"/cmake/debian/postinst "$SRC"/cmake/debian/prerm "$SRC"/cmake/debian/postrm >"$T/sc" 2>&1
check_eq "shellcheck of the package's maintainer scripts is clean" "" "$(cat "$T/sc")"
out=$(bash "$SRC/contrib/docker-consumer.sh" --dry-run csi-node p1)
check "docker-consumer binds the plugin directory, rslave" \
	grep -q 'source=/run/plugfs/plugins/csi-node/p1\\,target=/csi\\,readonly\\,bind-propagation=rslave' <<<"$out"
check "docker-consumer binds the socket root at the same path, read-only" \
	grep -q 'source=/var/lib/nomad/client/csi/plugins\\,target=/var/lib/nomad/client/csi/plugins\\,readonly\\,bind-propagation=rslave' <<<"$out"
check_eq "docker-consumer binds nothing read-write" 0 "$(grep -o 'type=bind[^ ]*' <<<"$out" | grep -vc readonly)"
out2=$(PLUGFS_CONTAINER_ENGINE=podman bash "$SRC/contrib/docker-consumer.sh" --dry-run csi-node p1)
check "docker-consumer with PLUGFS_CONTAINER_ENGINE=podman runs podman" grep -q '^podman run' <<<"$out2"
PLUGFS_CONTAINER_ENGINE=lxc bash "$SRC/contrib/docker-consumer.sh" --dry-run csi-node p1 >/dev/null 2>"$T/err"
check_eq "docker-consumer with an unknown engine: exit 2" 2 $?
check "it names the variable and the choices" grep -q 'PLUGFS_CONTAINER_ENGINE must be docker or podman' "$T/err"
check "docker-consumer never binds csi.sock itself" bash -c "! grep -q 'source=[^ ]*csi.sock' <<<'$out'"
check "docker-consumer sets CSI_ENDPOINT to /csi/csi.sock" grep -q 'CSI_ENDPOINT=unix:///csi/csi.sock' <<<"$out"
out=$(PLUGFS_MOUNTPOINT=/run/plugfs/fs bash "$SRC/contrib/docker-consumer.sh" --dry-run --around csi-node p1)
check "docker-consumer --around binds the directory around the mountpoint, rslave" \
	grep -q 'source=/run/plugfs\\,target=/run/plugfs\\,readonly\\,bind-propagation=rslave' <<<"$out"
check "docker-consumer --around points CSI_ENDPOINT into the mount" \
	grep -q 'CSI_ENDPOINT=unix:///run/plugfs/fs/plugins/csi-node/p1/csi.sock' <<<"$out"
bash "$SRC/contrib/docker-consumer.sh" --dry-run --around csi-node p1 >/dev/null 2>"$T/err"
check_eq "docker-consumer --around with the mount right in /run: exit 2" 2 $?
check "docker-consumer --around says why" grep -q 'would give the container all of /run' "$T/err"
bash "$SRC/contrib/docker-consumer.sh" 2>/dev/null
check_eq "docker-consumer without arguments: exit 2" 2 $?
finish
