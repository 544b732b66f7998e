#!/usr/bin/env bash
# The trust of a [discover.NAME] root, at start and at reload: a root that
# anyone but root may write, or a symlink, is a configuration error named
# with the section, the path and the rule; the daemon does not start, a
# reload is refused and the running config is kept.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
mkdir -m 0755 "$T/good"
mkdir -m 0777 "$T/open"
chmod 0777 "$T/open"
ln -s "$T/good" "$T/link"

write_config "[discover.nomad]" "root = $T/open"
mount_to_exit "$T/start.out"
check "a world-writable root: the daemon does not start" test $? -ne 0
check "a world-writable root: the section, the path and the rule are named" \
	grep -q "\[discover.nomad\] root \`$T/open' is writable by users other than root (group or other write bit); expected a directory owned by root that only root may write" "$T/start.out"
check "a world-writable root: nothing is mounted" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"

write_config "[discover.nomad]" "root = $T/link"
mount_to_exit "$T/start.out"
check "a symlinked root: the daemon does not start" test $? -ne 0
check "a symlinked root: named" grep -q "\[discover.nomad\] root \`$T/link' is a symlink; expected a directory" "$T/start.out"

write_config "[discover.nomad]" "root = $T/good"
start_daemon
check_eq "a good root: the daemon starts and watches it" 1 \
	"$(plugfs metrics | awk '$1 == "plugfs_discover_watches" { print $2 }')"

# Reload to a bad root: refused, the running config kept.
sed -i "s|^root = $T/good\$|root = $T/open|" "$CFG"
plugfs reload >/dev/null 2>"$T/err"
check_eq "reload to a world-writable root: exit 1" 1 $?
check "reload to a world-writable root: named" grep -q "\[discover.nomad\] root \`$T/open' is writable by users other than root" "$T/err"
check "reload to a world-writable root: the daemon keeps its config" \
	grep -q "plugfs error: reload failed, keeping the running config: \[discover.nomad\] root \`$T/open'" "$DAEMON_LOG"
sed -i "s|^root = $T/open\$|root = $T/link|" "$CFG"
plugfs reload >/dev/null 2>"$T/err"
check_eq "reload to a symlinked root: exit 1" 1 $?
# The root made safe: the same section name, a good root, is a change.
chmod 0755 "$T/open"
sed -i "s|^root = $T/link\$|root = $T/open|" "$CFG"
plugfs reload >/dev/null 2>"$T/err"
check_eq "reload once the root is root's only: exit 0" 0 $?
check "the section changed from the running one (the bad reloads changed nothing)" \
	grep -q "plugfs info: reload: \[discover.nomad\] changed (root $T/open)" "$DAEMON_LOG"
stop_daemon
finish
