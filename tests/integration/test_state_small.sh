#!/usr/bin/env bash
# The WAL stays small: N registrations on a 2 MiB tmpfs (with SQLite's
# own checkpoint the -wal grew ~37 KB a registration towards 4 MB and such
# a filesystem filled after ~50), the largest -wal printed; once the
# registrations stop the -wal is truncated to 0 bytes; a restart serves all
# N.  N: 150 (three times the ~50 that filled it), 500 in the soak mode.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
small_state_disk
write_config
start_daemon

N=$(soak 150 500)
wal_size() { stat -c %s "$STATE-wal" 2>/dev/null || echo 0; }
max=0 failed=0
for i in $(seq 1 "$N"); do
	if ! out=$(plugfs register --type csi-node --name "p$i" --alloc "a$i" \
		--socket "$(sock_of "a$i")" 2>&1); then
		failed=$((failed + 1))
		echo "# registration $i: $out"
	fi
	w=$(wal_size)
	[ "$w" -gt "$max" ] && max=$w
done
echo "# largest -wal over $N registrations: $max bytes; state file $(stat -c %s "$STATE") bytes; $(df -k --output=used "$T/small" | tail -n 1 | tr -d ' ') KiB of 2048 used"
check_eq "$N registrations on a 2 MiB filesystem, none refused" 0 "$failed"
check "the -wal stayed within its limit (512 KiB and a commit: $max bytes)" \
	test "$max" -le $((512 * 1024 + 64 * 1024))
wal_empty() { [ "$(wal_size)" -eq 0 ]; }
wait_until 10 "the -wal is truncated to 0 bytes when idle" wal_empty &&
	pass "the -wal is truncated to 0 bytes when idle"
stop_daemon
start_daemon
n=$(plugfs list --json | jq '[.plugins[].registrations[]] | length')
check_eq "a restart serves all $N" "$N" "$n"
stop_daemon
check_daemon_log
finish
