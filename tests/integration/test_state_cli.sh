#!/usr/bin/env bash
# plugfs state import | dump | check, offline on a temporary state file (no
# FUSE, no daemon): the legacy fixture, corrupted and too-new files, bad
# config lines, usage errors.
. "$(dirname "$0")/lib.sh"

command -v jq >/dev/null || die "jq is not installed (contrib/install-deps.sh installs it)"
command -v sqlite3 >/dev/null || die "sqlite3 is not installed (contrib/install-deps.sh installs it)"
FIXTURE=$PLUGFS_SOURCE_DIR/tests/fixtures/legacy-registry-state.json
A0=489cd5cf-3cfc-6792-3465-822371765b32
A1=68221094-25a6-eeb6-8490-c71a03d46b0f
write_config

# --- without a state file: dump is empty, check fails, neither creates one ---
plugfs state dump --json >"$T/out" 2>"$T/err"
check_eq "dump --json without a state file exits 0" 0 $?
check_eq "dump --json without a state file is empty" '{"plugins":[]}' "$(jq -c . "$T/out")"
plugfs state dump >"$T/out" 2>"$T/err"
check_eq "dump without a state file exits 0" 0 $?
check "dump says there is no file yet" grep -qx "$STATE (no file yet): 0 plugins, 0 registrations" "$T/out"
plugfs state check >"$T/out" 2>"$T/err"
check_eq "check without a state file exits 1" 1 $?
check "check names the missing state file" grep -qx "plugfs state check: no state file at $STATE (state.path)" "$T/err"
check "dump and check created no state file" test ! -e "$STATE"

# --- import the legacy fixture ---
plugfs state import "$FIXTURE" >"$T/out" 2>"$T/err"
check_eq "import exits 0" 0 $?
check "import says how many registrations" grep -qx "imported 3 registrations from $FIXTURE into $STATE" "$T/out"
check "import is quiet on stderr" test ! -s "$T/err"

plugfs state dump --json >"$T/dump.json" 2>"$T/err"
check_eq "dump --json exits 0" 0 $?
J=$T/dump.json
q() { jq -r "$1" "$J"; }
plugin() { echo ".plugins[] | select(.type == \"$1\" and .name == \"$2\")"; }
check_eq "three plugins" 3 "$(q '.plugins | length')"
check_eq "plugins sorted by type and name" "csi-controller/plugin-1 csi-node/plugin-1 csi-node/plugin-2" \
	"$(q '[.plugins[] | .type + "/" + .name] | join(" ")')"
check_eq "csi-controller/plugin-1 active" "$A0" "$(q "$(plugin csi-controller plugin-1) | .active")"
check_eq "csi-node/plugin-1 active" "$A0" "$(q "$(plugin csi-node plugin-1) | .active")"
check_eq "csi-node/plugin-2 active" "$A1" "$(q "$(plugin csi-node plugin-2) | .active")"
for p in "csi-controller plugin-1" "csi-node plugin-1" "csi-node plugin-2"; do
	# shellcheck disable=SC2086
	check_eq "$p: active is the first registration" "$(q "$(plugin $p) | .active")" \
		"$(q "$(plugin $p) | .registrations[0].alloc")"
done
R1="$(plugin csi-node plugin-1) | .registrations[0]"
R2="$(plugin csi-node plugin-2) | .registrations[0]"
RC="$(plugin csi-controller plugin-1) | .registrations[0]"
check_eq "plugin-1 version" "v0.1" "$(q "$R1 | .version")"
check_eq "plugin-2 version" "v0.2" "$(q "$R2 | .version")"
check_eq "legacy Type monolith becomes kind (node list)" "monolith" "$(q "$R1 | .kind")"
check_eq "legacy Type monolith becomes kind (controller list)" "monolith" "$(q "$RC | .kind")"
check_eq "legacy Type node becomes kind" "node" "$(q "$R2 | .kind")"
check_eq "plugin-1 socket" "/var/nomad/client/csi/plugin-1/csi.sock" "$(q "$R1 | .socket")"
check_eq "plugin-2 socket" "/var/nomad/client/csi/plugin-2/csi.sock" "$(q "$R2 | .socket")"
check_eq "plugin-2 options" '{"ContainerMountPoint":"/csi","MountPoint":"/var/nomad/client/csi/plugin-2","Provider":"other-demo"}' \
	"$(jq -cS "$R2 | .options" "$J")"
check_eq "csi-node/plugin-1 options keep their keys' case" \
	'{"ContainerMountPoint":"/csi","Provider":"demo","mountpoint":"/var/nomad/client/csi/plugin-1"}' \
	"$(jq -cS "$R1 | .options" "$J")"
check_eq "csi-controller/plugin-1 options" \
	'{"ContainerMountPoint":"/csi","MountPoint":"/var/nomad/client/csi/plugin-1","Provider":"demo"}' \
	"$(jq -cS "$RC | .options" "$J")"
check "seq is a number" test "$(q "$R2 | .seq | type")" = number
check "registered_at is RFC 3339 UTC" grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$' \
	<<<"$(q "$R2 | .registered_at")"
check "updated_at is RFC 3339 UTC" grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$' \
	<<<"$(q "$R2 | .updated_at")"

# The human dump names every plugin, its active alloc and its socket.
plugfs state dump >"$T/human" 2>"$T/err"
check_eq "dump exits 0" 0 $?
check "dump shows csi-node/plugin-2 and its active alloc" grep -q "^csi-node/plugin-2  active $A1\$" "$T/human"
check "dump marks the active registration" grep -q "^  \* $A1  kind node  version v0.2" "$T/human"
check "dump shows sockets" grep -q "socket      /var/nomad/client/csi/plugin-2/csi.sock" "$T/human"
check "dump sums up" grep -qx "$STATE: 3 plugins, 3 registrations" "$T/human"

# The global -c and $PLUGFS_CONFIG reach the subcommand too.
check "global -c before state" bash -c "'$PLUGFS_BIN' -c '$CFG' state dump --json | jq -e '.plugins | length == 3' >/dev/null"
check "\$PLUGFS_CONFIG" bash -c "PLUGFS_CONFIG='$CFG' '$PLUGFS_BIN' state dump --json | jq -e '.plugins | length == 3' >/dev/null"
check "-c after the subcommand" bash -c "'$PLUGFS_BIN' state dump --json -c '$CFG' | jq -e '.plugins | length == 3' >/dev/null"

# --- check ---
plugfs state check >"$T/out" 2>"$T/err"
check_eq "check on a good file exits 0" 0 $?
check "check says ok" grep -qx "$STATE: ok" "$T/out"

# --- dump never writes the state file ---
# A configured type absent from the file: a read-write open would add it.
sed 's/^types = .*/types = csi-controller csi-node csi-extra/' "$CFG" >"$T/ro.ini"
no_side_files() { test ! -e "$1-wal" && test ! -e "$1-shm" && test ! -e "$1-journal" && test ! -e "$1.v1.bak"; }
cp "$STATE" "$T/v2.copy"
check "v2: no -wal, -shm or backup before dump" no_side_files "$STATE"
"$PLUGFS_BIN" -c "$T/ro.ini" state dump --json >"$T/out" 2>"$T/err"
check_eq "v2: dump with an extra type exits 0" 0 $?
check_eq "v2: dump lists the 3 plugins" 3 "$(jq '.plugins | length' "$T/out")"
"$PLUGFS_BIN" -c "$T/ro.ini" state dump >"$T/out" 2>"$T/err"
check_eq "v2: human dump exits 0" 0 $?
check "v2: dump left the file's bytes unchanged" cmp "$STATE" "$T/v2.copy"
check "v2: dump left no -wal, -shm or backup" no_side_files "$STATE"
check_eq "v2: dump stored no type" 0 "$(sqlite3 "$T/v2.copy" "SELECT count(*) FROM types WHERE name = 'csi-extra';")"
# A version-1 file (the legacy `kv' table) stays version 1.
V1=$T/v1.db
sqlite3 "$V1" "CREATE TABLE kv(key TEXT PRIMARY KEY, value TEXT);
INSERT INTO kv VALUES('dynamic_plugin_registry', CAST(readfile('$FIXTURE') AS TEXT));
PRAGMA user_version = 1;"
sed "s|^path = .*|path = $V1|" "$T/ro.ini" >"$T/v1.ini"
cp "$V1" "$T/v1.copy"
"$PLUGFS_BIN" -c "$T/v1.ini" state dump --json >"$T/out" 2>"$T/err"
check_eq "v1: dump exits 0" 0 $?
check_eq "v1: dump shows the legacy registrations" 3 "$(jq '[.plugins[].registrations[]] | length' "$T/out")"
check_eq "v1: dump shows the same plugins as the v2 file" \
	"$("$PLUGFS_BIN" -c "$T/ro.ini" state dump --json | jq -c '[.plugins[] | [.type, .name, .active]]')" \
	"$(jq -c '[.plugins[] | [.type, .name, .active]]' "$T/out")"
"$PLUGFS_BIN" -c "$T/v1.ini" state dump >"$T/out" 2>"$T/err"
check_eq "v1: human dump exits 0" 0 $?
check "v1: dump left the file's bytes unchanged" cmp "$V1" "$T/v1.copy"
check "v1: dump left no -wal, -shm or .v1.bak" no_side_files "$V1"
check_eq "v1: still version 1" 1 "$(sqlite3 "$V1" 'PRAGMA user_version;')"

# An import that fails changes nothing: a type that is not configured.
sed 's/"csi-node"/"csi-unknown"/' "$FIXTURE" >"$T/badtype.json"
plugfs state import "$T/badtype.json" >"$T/out" 2>"$T/err"
check_eq "import of an unconfigured type exits 1" 1 $?
check "import error names the file" grep -q "^plugfs state import: $T/badtype.json: .*nothing was imported" "$T/err"
check_eq "failed import changed nothing" 3 "$(plugfs state dump --json | jq '[.plugins[].registrations[]] | length')"
echo '{"Plugins": ' >"$T/truncated.json"
plugfs state import "$T/truncated.json" >"$T/out" 2>"$T/err"
check_eq "import of broken JSON exits 1" 1 $?
check "broken JSON error is one line" test "$(wc -l <"$T/err")" -eq 1
plugfs state import "$T/no-such.json" >"$T/out" 2>"$T/err"
check_eq "import of a missing file exits 1" 1 $?
check "missing import file is named" grep -q "cannot open $T/no-such.json: No such file or directory" "$T/err"

# Import creates the directories above the state file.
sed "s|^path = .*|path = $T/new/dir/state.db|" "$CFG" >"$T/newdir.ini"
"$PLUGFS_BIN" -c "$T/newdir.ini" state import "$FIXTURE" >"$T/out" 2>"$T/err"
check_eq "import into a new directory exits 0" 0 $?
check "import created the state file" test -f "$T/new/dir/state.db"

# A file of garbage.
head -c 65536 /dev/urandom >"$T/garbage.db"
sed -i "s|^path = .*|path = $T/garbage.db|" "$CFG"
plugfs state check >"$T/out" 2>"$T/err"
check_eq "check on garbage exits 1" 1 $?
check "garbage: message names the file" grep -q "^plugfs state check: .*$T/garbage.db" "$T/err"
check "garbage: one line on stderr" test "$(wc -l <"$T/err")" -eq 1
plugfs state dump >"$T/out" 2>"$T/err"
check_eq "dump on garbage exits 1" 1 $?

# A schema newer than this plugfs knows.
sqlite3 "$STATE" "VACUUM INTO '$T/newer.db'"
sqlite3 "$T/newer.db" 'PRAGMA user_version = 99;'
sed -i "s|^path = .*|path = $T/newer.db|" "$CFG"
plugfs state check >"$T/out" 2>"$T/err"
check_eq "check on a newer schema exits 1" 1 $?
check "newer schema: message names the file" grep -q "^plugfs state check: .*$T/newer.db" "$T/err"
check "newer schema: message names the version" grep -q "99" "$T/err"
check_eq "check left the newer file alone" 99 "$(sqlite3 "$T/newer.db" 'PRAGMA user_version;')"
plugfs state dump >"$T/out" 2>"$T/err"
check_eq "dump on a newer schema exits 1" 1 $?

# --- bad config lines: every subcommand exits 1 and names file:line ---
write_config "[log]" "level = loud"
line=$(grep -n '^level = loud$' "$CFG" | cut -d: -f1)
for sub in "import $FIXTURE" "dump" "dump --json" "check"; do
	# shellcheck disable=SC2086
	plugfs state $sub >"$T/out" 2>"$T/err"
	check_eq "bad config: state $sub exits 1" 1 $?
	check "bad config: state $sub names file:line" \
		grep -q "^plugfs state ${sub%% *}: $CFG:$line: \[log\] level = \`loud': expected error, warn, info or debug" "$T/err"
done
printf '[mount]\nallow_other = true\nno equals sign here\n' >"$T/syntax.ini"
"$PLUGFS_BIN" -c "$T/syntax.ini" state check >"$T/out" 2>"$T/err"
check_eq "config syntax error exits 1" 1 $?
check "config syntax error names file:line" grep -q "^plugfs state check: $T/syntax.ini:3: " "$T/err"
"$PLUGFS_BIN" -c "$T/missing.ini" state dump >"$T/out" 2>"$T/err"
check_eq "missing -c file exits 1" 1 $?
check "missing -c file is named" grep -q "$T/missing.ini" "$T/err"

# --- usage errors exit 2 ---
write_config
usage_case() {
	local what=$1; shift
	"$PLUGFS_BIN" "$@" >"$T/out" 2>"$T/err"
	check_eq "usage: $what exits 2" 2 $?
	check "usage: $what says what is wrong" test -s "$T/err"
}
usage_case "no subcommand" state
usage_case "unknown subcommand" state frobnicate
usage_case "import without FILE" -c "$CFG" state import
usage_case "import with two files" -c "$CFG" state import a b
usage_case "unknown option" -c "$CFG" state dump --frob
usage_case "--json on check" -c "$CFG" state check --json
usage_case "-c without a file" state dump -c
usage_case "dump with an argument" -c "$CFG" state dump extra
for sub in "" import dump check; do
	# shellcheck disable=SC2086
	"$PLUGFS_BIN" state $sub --help >"$T/out" 2>&1
	check_eq "state $sub --help exits 0" 0 $?
	check "state $sub --help prints usage" grep -q "^Usage: plugfs state" "$T/out"
done

finish
