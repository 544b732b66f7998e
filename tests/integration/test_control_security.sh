#!/usr/bin/env bash
# Who may do what on the control socket.  The socket is 0660 root:GROUP;
# mutations need uid 0 or membership in control.group (primary or
# supplementary, read with SO_PEERCRED + SO_PEERGROUPS); anyone who can
# connect may read.  The test uses the system user `nobody' (via setpriv)
# and the group `daemon' (present on every Debian system) as control.group.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
command -v setpriv >/dev/null || die "setpriv (util-linux) is missing"
getent group daemon >/dev/null || die "group daemon is missing"
id nobody >/dev/null 2>&1 || die "user nobody is missing"
write_config
sed -i "s|^socket = $CTL\$|socket = $CTL\ngroup = daemon|" "$CFG"
start_daemon
demo a0
chmod 0644 "$CFG"

st=$(stat -c '%a %U %G %F' "$CTL")
check_eq "the control socket is 0660 root:daemon" "660 root daemon socket" "$st"

# Copies of the binaries where nobody can run them, wherever the build is.
install -m 0755 "$PLUGFS_BIN" "$T/plugfs"
install -m 0755 "$CTLRAW" "$T/ctlraw"
# The CLI as nobody, and as nobody with daemon as a supplementary group.
nobody_cli() { as_nobody "$T/plugfs" -c "$CFG" "$@"; }
member_cli() { as_nobody_in daemon "$T/plugfs" -c "$CFG" "$@"; }

reg csi-node kept a0
before=$(plugfs list --json)

# Not in the group: cannot even connect to a 0660 socket.
nobody_cli list >/dev/null 2>"$T/err"
check_eq "a non-member cannot connect (exit 3)" 3 $?
check "the message names the socket" grep -q "$CTL" "$T/err"

# An admin opens the socket for reading to everyone: reads work, mutations
# are refused with permission_denied and change nothing.
chmod 0666 "$CTL"
out=$(nobody_cli list --json)
check_eq "list works for nobody" 0 $?
check_eq "nobody's list shows the registry" "$before" "$out"
nobody_cli show csi-node kept >/dev/null
check_eq "show works for nobody" 0 $?
nobody_cli status >/dev/null
check_eq "status works for nobody" 0 $?
nobody_cli register --type csi-node --name evil --alloc x --socket "$(sock_of a0)" 2>"$T/err"
check_eq "register by nobody exits 1" 1 $?
check "register by nobody: permission_denied naming the rule" \
	grep -q "plugfs register: changes need uid 0 or membership in group \`daemon' (control.group); this client runs as uid 65534" "$T/err"
nobody_cli deregister --type csi-node --name kept --alloc a0 2>"$T/err"
check_eq "deregister by nobody exits 1" 1 $?
check "deregister by nobody: permission_denied" grep -q 'plugfs deregister: changes need' "$T/err"
nobody_cli deregister --alloc a0 2>"$T/err"
check_eq "deregister --alloc by nobody exits 1" 1 $?
# Through the raw socket as well.
out=$(printf '{"op":"register","types":["csi-node"],"name":"evil","alloc":"x","socket":"/x"}\n' |
	as_nobody "$T/ctlraw" "$CTL" | jq -r .error.code)
check_eq "raw register by nobody: permission_denied" permission_denied "$out"
out=$(printf '{"op":"deregister","type":"csi-node","name":"kept","alloc":"a0"}\n' |
	as_nobody "$T/ctlraw" "$CTL" | jq -r .error.code)
check_eq "raw deregister by nobody: permission_denied" permission_denied "$out"
# reload changes the daemon too (its log level, the cache timeout).
nobody_cli reload 2>"$T/err"
check_eq "reload by nobody exits 1" 1 $?
check "reload by nobody: permission_denied" grep -q 'plugfs reload: changes need' "$T/err"
check "the daemon did not reload" bash -c "! grep -q 'reloaded ' '$DAEMON_LOG'"
# Root of a user namespace of its own is still uid 65534 to the daemon
# (SO_PEERCRED reports the peer in the daemon's namespace): refused.  The
# raw client, since the CLI refuses a socket it sees owned by the overflow
# uid before it sends a byte.
if as_nobody unshare -r true 2>/dev/null; then
	out=$(printf '{"op":"register","types":["csi-node"],"name":"evil","alloc":"x","socket":"/x"}\n' |
		as_nobody unshare -r "$T/ctlraw" "$CTL" | jq -r .error.code)
	check_eq "register by root of nobody's user namespace: permission_denied" \
		permission_denied "$out"
	check "the daemon names the real uid" \
		grep -q "control: register from pid [0-9]* uid $(id -u nobody) refused: permission denied" "$DAEMON_LOG"
elif [ "${CI:-}" = true ]; then
	die "nobody cannot create a user namespace here (CI=true: not skipping that check)"
else
	echo "# SKIP: nobody cannot create a user namespace here"
fi
check_eq "nothing changed" "$before" "$(plugfs list --json)"
check "no directory for the rejected plugin" test ! -e "$MNT/plugins/csi-node/evil"

# The primary group counts as membership too.
out=$(printf '{"op":"register","types":["csi-node"],"name":"primary","alloc":"a0","socket":"%s"}\n' \
	"$(sock_of a0)" | setpriv --reuid=nobody --regid=daemon --clear-groups -- "$T/ctlraw" "$CTL" |
	jq -r .ok)
check_eq "nobody with control.group as primary group may register" true "$out"
plugfs deregister --type csi-node --name primary --alloc a0 >/dev/null
before=$(plugfs list --json)

# A supplementary member of control.group may change things.
member_cli register --type csi-node --name member --alloc a0 --socket "$(sock_of a0)" >/dev/null 2>"$T/err"
check_eq "a supplementary member of control.group may register" 0 $?
check_eq "the member's registration is live" a0 "$(demo_connect "$MNT/plugins/csi-node/member/csi.sock")"
member_cli deregister --alloc a0 >/dev/null
check_eq "a member may deregister" 0 $?
check "the member's deregistration removed everything of a0" test ! -e "$MNT/plugins/csi-node/kept"

# An unknown group is a clear start error.
stop_daemon
sed -i "s|^group = daemon\$|group = plugfs-no-such-group|" "$CFG"
mount_to_exit "$T/start.out"
check "a daemon with an unknown control.group does not start" test $? -ne 0
check "the error names the group" grep -q "unknown group \`plugfs-no-such-group'" "$T/start.out"
check "no mount is left" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
finish
