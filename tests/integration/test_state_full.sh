#!/usr/bin/env bash
# A store failure (here a full disk: the state file on a small tmpfs that
# fills up) is logged at error with the file and the errno, so that
# `level = warn' shows it; the client's own mistakes stay at notice.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
mkdir -p "$T/small"
mount -t tmpfs -o size=320k,mode=0755 plugfs-test "$T/small" || die "cannot mount a tmpfs"
on_cleanup umount -l "$T/small"
STATE=$T/small/state.db
write_config "[log]" "level = warn"
sed -i "s|^path = .*|path = $STATE|" "$CFG"
start_daemon

# Registrations until the disk is full (bounded: the WAL fills 320k fast).
refused=
for i in $(seq 1 400); do
	if ! out=$(plugfs register --type csi-node --name "p$i" --alloc "a$i" \
		--socket "$(sock_of "a$i")" 2>&1); then
		refused=$i
		break
	fi
done
check "a registration is refused once the disk is full" test -n "$refused"
echo "# refused at registration ${refused:-none}: $out"
check "the client is told the disk is full" grep -q "full" <<<"$out"
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
stop_daemon
check_daemon_log
finish
