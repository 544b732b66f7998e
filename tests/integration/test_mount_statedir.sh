#!/usr/bin/env bash
# plugfs mount on a fresh host: the state file's directory does not exist yet.
. "$(dirname "$0")/lib.sh"
require_fuse

STATE=$T/var/lib/plugfs/state.db
write_config
sed -i "s|^path = .*|path = $STATE|" "$CFG"
check "state directory absent before the start" test ! -e "$T/var/lib/plugfs"
start_daemon
check "state directory created by plugfs mount" test -d "$T/var/lib/plugfs"
check "state file created in it" test -f "$STATE"
check "tree served" test -d "$MNT/plugins/csi-node"
stop_daemon

# A refused start writes nothing: a good state file (200 registrations, the
# daemon stopped, so no -wal) with another database's WAL, not checkpointed,
# beside it.  The start is refused, and the file and that -wal are byte for
# byte as they were.
command -v sqlite3 >/dev/null || die "sqlite3 is not installed"
for i in $(seq 0 199); do echo "register csi-node p$((i % 7)) a$i /run/csi/a$i/csi.sock"; done >"$T/regs"
state_script "$T/regs"
check_eq "the state file has 200 registrations" 200 "$(sqlite3 "$STATE" 'SELECT count(*) FROM registrations')"
check "no -wal beside it" test ! -e "$STATE-wal"
OTHER=$T/other.db
sqlite3 "$OTHER" "PRAGMA journal_mode = WAL; CREATE TABLE u(y, z);
  WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 500)
  INSERT INTO u SELECT i, randomblob(50) FROM c" >/dev/null
# One connection updates and copies its -wal while it is still open.
printf '%s\n' "UPDATE u SET z = randomblob(50) WHERE y % 50 = 0;" \
	".shell cp '$OTHER-wal' '$STATE-wal'" | sqlite3 "$OTHER" >/dev/null
check "a foreign -wal beside the state file" test -s "$STATE-wal"
sums() { sha256sum "$STATE" "$STATE-wal" 2>&1; }
BEFORE=$(sums)
mount_to_exit "$T/refused.log"
check_eq "the start is refused (exit 1)" 1 "$?"
check "it says why, naming the file" grep -q "state file \`$STATE'.*malformed" "$T/refused.log"
check_eq "state.db and state.db-wal unchanged" "$BEFORE" "$(sums)"
finish
