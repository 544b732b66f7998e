#!/usr/bin/env bash
# A full disk (the state file on a small tmpfs that a filler file fills):
# registrations are refused with the state file and the errno, logged at
# error (so that `level = warn' shows it; the client's own mistakes stay at
# notice); deregistrations (one, and --alloc) still commit, through the
# reserve beside the state file; once space is freed the reserve comes back
# and registrations are accepted again; nothing acknowledged is lost
# (restart and compare).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
small_state_disk
RESERVE=$STATE-reserve
write_config "[log]" "level = warn"
start_daemon
check "the reserve is allocated beside the state file" \
	test "$(stat -c %s "$RESERVE")" -eq 262144
check "the reserve is the daemon's, 0600" test "$(stat -c %a:%u "$RESERVE")" = "600:0"

# What the test expects the registry to hold, one "type/name alloc" a line.
: >"$T/want"
for i in $(seq 1 20); do
	reg csi-node "p$i" "a$i" && echo "csi-node/p$i a$i" >>"$T/want"
done
reg csi-node shared s0 && reg csi-controller shared s0
printf 'csi-controller/shared s0\ncsi-node/shared s0\n' >>"$T/want"

# Fill the disk: a filler file takes every free block.
dd if=/dev/zero of="$T/small/filler" bs=4k status=none 2>/dev/null
check "the disk is full" test "$(stat -f -c %a "$T/small")" -eq 0

# Registrations until one is refused (a few may fit in the WAL's space).
refused=
for i in $(seq 100 400); do
	if ! out=$(plugfs register --type csi-node --name "p$i" --alloc "a$i" \
		--socket "$(sock_of "a$i")" 2>&1); then
		refused=$i
		break
	fi
	echo "csi-node/p$i a$i" >>"$T/want"
done
check "a registration is refused once the disk is full" test -n "$refused"
echo "# refused at registration ${refused:-none}: $out"
check "the client is told the disk is full" grep -q "full" <<<"$out"
check "the refusal names the state file" grep -qF "state file \`$STATE'" <<<"$out"
check "the refusal names the errno" grep -qE "ENOSPC|No space left on device" <<<"$out"
plugfs register --type csi-node --name 'x/y' --alloc b --socket "$(sock_of b)" 2>/dev/null
check "the daemon still serves status" plugfs status >/dev/null
line=$(grep "register from pid" "$DAEMON_LOG" | head -n 1)
echo "# log: $line"
check "the failure is logged at error (shown at level = warn)" \
	grep -q "plugfs error: control: register from pid [0-9]* uid 0 failed: " <<<"$line"
check "the log line names the state file" grep -qF "state file \`$STATE'" <<<"$line"
check "the log line names the errno" grep -qE "ENOSPC|No space left on device" <<<"$line"
check "a client's mistake is not shown at level = warn" \
	bash -c "! grep -q \"name \\\`x/y'\" '$DAEMON_LOG'"

# Deregistrations commit on the full disk: the reserve is released for them.
check "a deregistration commits on the full disk" \
	plugfs deregister --type csi-node --name p1 --alloc a1
sed -i '\|^csi-node/p1 a1$|d' "$T/want"
# At once (the checkpointer allocates it again at the earliest 1 s later,
# when a TRUNCATE gave the WAL's space back): registrations are refused.
if out=$(plugfs register --type csi-node --name q1 --alloc q1 --socket "$(sock_of q1)" 2>&1); then
	fail "a registration is refused while the reserve is released"
	echo "csi-node/q1 q1" >>"$T/want"
else
	pass "a registration is refused while the reserve is released"
fi
echo "# $out"
check "that refusal names the state file, the reserve and ENOSPC" \
	grep -qF "state file \`$STATE': registering: the disk is full: the reserve \`$RESERVE' (262144 bytes) that keeps deregistrations possible was released for a deregistration (ENOSPC: " <<<"$out"
check_eq "metrics: the reserve is not held" 1 \
	"$(plugfs metrics | awk '$1 == "plugfs_state_reserve_held" { print ($2 == 0) }')"
check_eq "metrics: one release" 1 \
	"$(plugfs metrics | awk '$1 == "plugfs_state_reserve_releases_total" { print $2 }')"
check "the release of the reserve is logged as a warning" \
	grep -q "plugfs warn: state file \`$STATE': the disk is full: released the reserve \`$RESERVE'" \
	"$DAEMON_LOG"
for i in 2 3 4 5; do
	check "deregistration p$i commits on the full disk" \
		plugfs deregister --type csi-node --name "p$i" --alloc "a$i"
	sed -i "\|^csi-node/p$i a$i\$|d" "$T/want"
done
out=$(plugfs deregister --alloc s0 2>&1)
check "deregister --alloc commits on the full disk ($out)" test $? -eq 0
check "deregister --alloc removed both" grep -q "2" <<<"$out"
sed -i '/ s0$/d' "$T/want"

# Space comes back: the reserve is allocated again, registrations resume.
rm -f "$T/small/filler"
reserve_full() { [ "$(stat -c %s "$RESERVE")" -eq 262144 ]; }
wait_until 15 "the reserve is allocated again" reserve_full || exit 1
check "that is logged as a warning" \
	grep -q "plugfs warn: state file \`$STATE': the reserve \`$RESERVE' (262144 bytes) is allocated again" \
	"$DAEMON_LOG"
for i in 1 2 3; do
	reg csi-node "r$i" "r$i" && echo "csi-node/r$i r$i" >>"$T/want"
done

# And again: the disk full once more, the reserve allocated again serves.
dd if=/dev/zero of="$T/small/filler" bs=4k status=none 2>/dev/null
refused=
for i in $(seq 500 800); do
	if ! plugfs register --type csi-node --name "p$i" --alloc "a$i" \
		--socket "$(sock_of "a$i")" >/dev/null 2>&1; then
		refused=$i
		break
	fi
	echo "csi-node/p$i a$i" >>"$T/want"
done
check "full again: a registration is refused (at ${refused:-none})" test -n "$refused"
check "full again: a deregistration commits" plugfs deregister --type csi-node --name r1 --alloc r1
sed -i '\|^csi-node/r1 r1$|d' "$T/want"
# It commits with the reserve released a second time, or in the -wal's
# own pages without it (a commit refused for the full disk, or a
# checkpoint that reset the -wal, leaves pages already allocated there):
# then the reserve is still held in full.
if [ "$(grep -c "released the reserve" "$DAEMON_LOG")" -eq 2 ]; then
	pass "the reserve was released a second time"
else
	check "the deregistration fitted in the -wal's own pages: the reserve is still held in full" \
		reserve_full
fi

# A restart on a disk with 64 KiB free (room for SQLite's -shm and a few
# frames, not for the reserve): the daemon starts, refuses registrations
# naming the reserve it cannot allocate, and takes deregistrations.
stop_daemon
dd if=/dev/zero of="$T/small/room" bs=64k count=1 status=none
dd if=/dev/zero of="$T/small/filler2" bs=4k status=none 2>/dev/null
rm -f "$T/small/room"
start_daemon
check "restarted nearly full: the reserve cannot be allocated, said as a warning" \
	grep -q "plugfs warn: state file \`$STATE': cannot allocate the reserve \`$RESERVE' (262144 bytes): ENOSPC" \
	"$DAEMON_LOG"
out=$(plugfs register --type csi-node --name q3 --alloc q3 --socket "$(sock_of q3)" 2>&1)
check "restarted nearly full: a registration is refused" test $? -ne 0
check "restarted nearly full: the refusal says the reserve cannot be allocated" \
	grep -qF "the reserve \`$RESERVE' (262144 bytes) that keeps deregistrations possible cannot be allocated (ENOSPC: " <<<"$out"
check "restarted nearly full: a deregistration commits" \
	plugfs deregister --type csi-node --name r2 --alloc r2
sed -i '\|^csi-node/r2 r2$|d' "$T/want"
rm -f "$T/small/filler" "$T/small/filler2"
wait_until 15 "the reserve is allocated after the restart" reserve_full || exit 1
reg csi-node r4 r4 && echo "csi-node/r4 r4" >>"$T/want"

# Nothing lost: what the daemon serves is what was acknowledged, also after
# a restart.
have() { plugfs list --json | jq -r '.plugins[] | .type + "/" + .name + " " + (.registrations[].alloc)' | sort; }
sort "$T/want" >"$T/want.sorted"
have >"$T/have.before"
check "the daemon serves every acknowledged registration and no other" \
	diff "$T/want.sorted" "$T/have.before"
stop_daemon
start_daemon
have >"$T/have.after"
check "after a restart the same ($(wc -l <"$T/have.after") registrations)" \
	diff "$T/have.before" "$T/have.after"
check "the state file passes state check" plugfs state check

# A start on a disk full to the last block, the reserve the last run kept
# held in full: the daemon releases it for the start's own writes (the
# types' commit, SQLite's -wal and -shm), starts, refuses registrations
# and takes deregistrations.  (It did not start: "committing: database or
# disk is full".)
stop_daemon
check "the last run kept the reserve in full" reserve_full
dd if=/dev/zero of="$T/small/filler3" bs=4k status=none 2>/dev/null
start_daemon
check "started on a full disk: the reserve kept by the last run is released, said as a warning" \
	grep -qF "plugfs warn: state file \`$STATE': the disk is full: released the reserve \`$RESERVE' (262144 bytes) that the last run kept, for the start's own writes" \
	"$DAEMON_LOG"
check "started on a full disk: a registration is refused" \
	bash -c "! '$PLUGFS_BIN' -c '$CFG' register --type csi-node --name q4 --alloc q4 --socket '$(sock_of q4)' 2>/dev/null"
check "started on a full disk: a deregistration commits" \
	plugfs deregister --type csi-node --name r4 --alloc r4
rm -f "$T/small/filler3"
check "the state file passes state check" plugfs state check
stop_daemon
check_daemon_log
finish
