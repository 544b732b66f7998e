#!/usr/bin/env bash
# Damage that SQLite alone would pass over: a state file cut short (shorter
# than its header's page count) is refused by `state check' and `mount' with
# the sizes named and left as it is; a 0-byte file is a new registry, and
# `state check' and `mount' say so; a FIFO at the state path is named in
# the same words by all three; JSON nested too deep is said to be.
. "$(dirname "$0")/lib.sh"
require_fuse
command -v jq >/dev/null || die "jq is not installed"
command -v sqlite3 >/dev/null || die "sqlite3 is not installed"
write_config

for i in $(seq 0 39); do echo "register csi-node p$((i % 5)) a$i /run/csi/a$i/csi.sock"; done >"$T/prepare"
state_script "$T/prepare"
check "no -wal beside the prepared file" test ! -e "$STATE-wal"
size=$(stat -c %s "$STATE")
page=$(sqlite3 "$STATE" 'PRAGMA page_size')
plugfs state check >"$T/out" 2>"$T/err"
check_eq "the whole file passes check" 0 $?
cp "$STATE" "$T/good.db"

# --- a file 1 byte short, and one a whole page short ---
for cut in 1 "$page"; do
	cp "$T/good.db" "$STATE"
	truncate -s "-$cut" "$STATE"
	cp "$STATE" "$T/cut.db"
	plugfs state check >"$T/out" 2>"$T/err"
	check_eq "$cut byte(s) short: check exits 1" 1 $?
	check "$cut byte(s) short: check says truncated, with the sizes" \
		grep -q "^plugfs state check: state file \`$STATE': truncated: $((size - cut)) bytes, but its header counts $((size / page)) pages of $page bytes ($size bytes)" "$T/err"
	plugfs state dump >"$T/out" 2>"$T/err"
	check_eq "$cut byte(s) short: dump exits 1" 1 $?
	# Bounded: a mount that comes up is stopped by SIGTERM after 20 s.
	timeout -s TERM 20 "$PLUGFS_BIN" -c "$CFG" mount >"$T/mount.log" 2>&1
	check_eq "$cut byte(s) short: mount is refused (exit 1)" 1 $?
	check "$cut byte(s) short: mount says truncated" grep -q "state file \`$STATE': truncated: " "$T/mount.log"
	check "$cut byte(s) short: the file is left as it was" cmp "$STATE" "$T/cut.db"
	check "$cut byte(s) short: no -wal or -shm left" test ! -e "$STATE-wal" -a ! -e "$STATE-shm"
done

# --- a -wal without its -shm (a daemon killed): dump and check read the
# commits in the -wal and change neither file; SQLite leaves a -shm ---
cp "$T/good.db" "$T/w.db"
printf '%s\n' "PRAGMA journal_mode = WAL;" \
	"UPDATE registrations SET version = 'in-wal' WHERE id = (SELECT min(id) FROM registrations);" \
	".shell cp '$T/w.db' '$STATE'; cp '$T/w.db-wal' '$STATE-wal'" | sqlite3 "$T/w.db" >/dev/null
rm -f "$STATE-shm"
check "a -wal without a -shm" test -s "$STATE-wal" -a ! -e "$STATE-shm"
sums() { sha256sum "$STATE" "$STATE-wal"; }
BEFORE=$(sums)
plugfs state dump --json >"$T/out" 2>"$T/err"
check_eq "wal: dump exits 0" 0 $?
check_eq "wal: dump shows the commit in the -wal" 1 "$(jq '[.plugins[].registrations[] | select(.version == "in-wal")] | length' "$T/out")"
plugfs state check >"$T/out" 2>"$T/err"
check_eq "wal: check exits 0" 0 $?
check_eq "wal: the state file and its -wal are unchanged" "$BEFORE" "$(sums)"
rm -f "$STATE-wal" "$STATE-shm"

# --- a 0-byte file: SQLite's new database; said, not silent ---
: >"$STATE"
plugfs state check >"$T/out" 2>"$T/err"
check_eq "empty: check exits 0" 0 $?
check "empty: check says the file is empty" \
	grep -qx "$STATE: ok, but empty (0 bytes): no registry yet; \`plugfs mount' starts a new, empty one in it" "$T/out"
check_eq "empty: check left it empty" 0 "$(stat -c %s "$STATE")"
start_daemon
check "empty: mount warns that it starts a new registry" \
	grep -q "plugfs warn: state file $STATE is empty (0 bytes): starting a new, empty registry in it" "$DAEMON_LOG"
check "empty: the registry is served" test -d "$MNT/plugins/csi-node"
stop_daemon

# --- a FIFO at the state path: mount, check and dump name it alike (not
# SQLite's "disk I/O error", nor a hang) and leave it a FIFO ---
mv "$STATE" "$T/kept.db"
mkfifo "$STATE"
fifo_msg="state.path \`$STATE': is a FIFO, not a regular file"
timeout 20 "$PLUGFS_BIN" -c "$CFG" mount >"$T/out" 2>"$T/err"
check_eq "fifo: mount exits 1" 1 $?
check "fifo: mount names it" grep -qxF "plugfs mount: $fifo_msg" "$T/err"
check "fifo: mount says no disk I/O error" bash -c "! grep -q 'disk I/O error' '$T/err'"
for verb in check dump; do
	timeout 20 "$PLUGFS_BIN" -c "$CFG" state "$verb" >"$T/out" 2>"$T/err"
	check_eq "fifo: state $verb exits 1" 1 $?
	check "fifo: state $verb names it in the same words" \
		grep -qxF "plugfs state $verb: $fifo_msg" "$T/err"
done
check "fifo: still a FIFO" test -p "$STATE"
rm -f "$STATE"
mv "$T/kept.db" "$STATE"

# --- state import of JSON nested too deep: said so, not "not valid JSON" ---
cp "$T/good.db" "$STATE"
{ printf '{"Plugins": '; printf '[%.0s' $(seq 3000); printf ']%.0s' $(seq 3000); printf '}'; } >"$T/deep.json"
plugfs state import "$T/deep.json" >"$T/out" 2>"$T/err"
check_eq "deep: import exits 1" 1 $?
check "deep: import says nested too deep, with the depth" \
	grep -q "^plugfs state import: $T/deep.json: legacy JSON: nested too deep (3001 levels of arrays and objects); nothing was imported" "$T/err"
echo '{"Plugins": [[[' >"$T/broken.json"
plugfs state import "$T/broken.json" >"$T/out" 2>"$T/err"
check "shallow broken JSON is still not valid JSON" grep -q "legacy JSON: not valid JSON" "$T/err"
check_eq "deep: nothing was imported" 40 "$(plugfs state dump --json | jq '[.plugins[].registrations[]] | length')"

start_daemon
check "the whole file mounts" test -L "$MNT/plugins/csi-node/p0/csi.sock"
stop_daemon
check_daemon_log
finish
