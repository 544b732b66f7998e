#!/usr/bin/env bash
# contrib/plugfs.service's hardening does not break plugfs: a release build of
# the daemon runs under the unit's capability bounding set and no_new_privs
# (setpriv), through the whole README walkthrough, a SIGHUP and a SIGTERM,
# and every system call it makes (strace) is in the unit's SystemCallFilter.
# The same for the unit's ExecStopPost (plugfs stop-post after a SIGKILL).
. "$(dirname "$0")/lib.sh"
require_fuse
for tool in strace setpriv systemd-analyze; do
	command -v "$tool" >/dev/null || die "$tool is not installed (bash contrib/install-deps.sh)"
done
SRC=$PLUGFS_SOURCE_DIR

# --- what the unit allows ---
caps=$(unit_setting CapabilityBoundingSet)
filter=$(unit_setting SystemCallFilter)
[ -n "$caps" ] && [ -n "$filter" ] || die "the unit has no CapabilityBoundingSet= or SystemCallFilter="
check_eq "unit: NoNewPrivileges=yes" yes "$(unit_setting NoNewPrivileges)"
# setpriv's form of the bounding set: -all,+sys_admin,+chown
bset=-all
for c in $caps; do
	c=${c#CAP_}
	bset+=",+${c,,}"
done
# The filter's groups expanded to system calls, as systemd does it.
systemd-analyze syscall-filter --no-pager >"$T/groups" 2>/dev/null
expand() { # NAME...: prints system calls, groups expanded recursively
	local n
	for n in "$@"; do
		if [[ $n == @* ]]; then
			# shellcheck disable=SC2046
			expand $(awk -v g="$n" '/^@/ {on = ($1 == g); next} on && NF == 1 && $1 !~ /^#/ {print $1}' "$T/groups")
		else
			echo "$n"
		fi
	done
}
# shellcheck disable=SC2086
expand $filter | sort -u >"$T/allowed"
check "the unit's filter allows mount and umount2" bash -c "grep -qx mount '$T/allowed' && grep -qx umount2 '$T/allowed'"
check "the unit's filter is a real list ($(wc -l <"$T/allowed") calls)" test "$(wc -l <"$T/allowed")" -gt 200

# --- a release build (no sanitizers: they make calls of their own) ---
# contrib/test.sh's release tree (PLUGFS_PACKAGE_BUILD), built once for the
# package tests too; run alone, the test builds its own.
if [ -n "${PLUGFS_PACKAGE_BUILD:-}" ]; then
	B=$PLUGFS_PACKAGE_BUILD
	grep -qx 'PLUGFS_SANITIZE:BOOL=OFF' "$B/CMakeCache.txt" ||
		die "$B is built with the sanitizers (PLUGFS_PACKAGE_BUILD must be a release tree)"
else
	B=$T/build
	cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPLUGFS_TESTS=OFF -DPLUGFS_SANITIZE=OFF \
		>"$T/configure.log" 2>&1 || { cat "$T/configure.log"; die "configure failed"; }
	cmake --build "$B" -j2 --target plugfs plugfs-demo-plugin >"$T/build.log" 2>&1 ||
		{ tail -30 "$T/build.log"; die "build failed"; }
fi
REL=$B/cli/plugfs
PLUGFS_BIN=$REL
PLUGFS_DEMO_PLUGIN=$B/tools/plugfs-demo-plugin

# confined NAME CMD...: runs CMD as the unit would, traced into $T/trace.NAME
# (setpriv execs strace, which runs CMD as its child).
confined() {
	exec setpriv --bounding-set "$bset" --inh-caps -all --no-new-privs \
		strace -f -qq -o "$T/trace.$1" "${@:2}"
}
syscalls() { # TRACE...: the system calls made
	cat "$@" | sed -n 's/^[0-9]\+ \+\([a-z_0-9]\+\)(.*/\1/p' | sort -u
}

# control.group makes the daemon chown its socket: CAP_CHOWN is exercised.
write_config "[log]" "level = debug"
sed -i "s/^socket = .*/&\ngroup = daemon/" "$CFG"
(confined daemon "$REL" -c "$CFG" mount) >>"$DAEMON_LOG" 2>&1 &
SPID=$! # strace
_PIDS+=("$SPID")
wait_until --pid "$SPID" 30 "the confined daemon serves $MNT" mount_answers "$MNT" || exit 1
DPID=$(pgrep -P "$SPID" | head -n 1)
[ -n "$DPID" ] || die "no daemon under strace"
check_eq "the traced process is plugfs" "$REL" "$(readlink "/proc/$DPID/exe")"
_PIDS+=("$DPID")
check_eq "the daemon's bounding set is the unit's" \
	"$(setpriv --bounding-set "$bset" --inh-caps -all sh -c 'grep CapBnd /proc/self/status')" \
	"$(grep CapBnd "/proc/$DPID/status")"
check_eq "the control socket belongs to control.group" "daemon 660" "$(stat -c '%G %a' "$CTL")"
check_eq "the daemon runs with no_new_privs" 1 "$(awk '/^NoNewPrivs/ {print $2}' "/proc/$DPID/status")"

PLUGFS_CONFIG=$CFG PLUGFS=$REL PLUGFS_DEMO_PLUGIN=$PLUGFS_DEMO_PLUGIN WALKTHROUGH_DIR=$T/walk \
	bash "$SRC/contrib/walkthrough.sh" >"$T/walk.out" 2>&1
rc=$?
check_eq "the README walkthrough passes against the confined daemon" 0 "$rc"
[ "$rc" -eq 0 ] || tail -20 "$T/walk.out"
kill -HUP "$DPID"
sleep 0.5
check "the confined daemon survives SIGHUP" kill -0 "$DPID"
kill -TERM "$DPID"
wait "$SPID"
check_eq "the confined daemon exits 0 on SIGTERM" 0 $?
check "its mount is gone" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
syscalls "$T"/trace.daemon* >"$T/used"
check "the daemon's system calls were traced ($(wc -l <"$T/used"))" test "$(wc -l <"$T/used")" -gt 20
check "the daemon made mount(2)" grep -qx mount "$T/used"
check_eq "every system call of the daemon is in the unit's SystemCallFilter" "" \
	"$(comm -23 "$T/used" "$T/allowed" | tr '\n' ' ')"

# --- ExecStopPost after a crash ---
"$REL" -c "$CFG" mount >>"$DAEMON_LOG" 2>&1 &
KPID=$!
_PIDS+=("$KPID")
wait_until --pid "$KPID" 30 "the daemon (pid $KPID) serves $MNT" mount_answers "$MNT"
kill -KILL "$KPID"
wait "$KPID" 2>/dev/null
check "SIGKILL leaves the mount behind" is_mounted "$MNT"
stop_post=$(unit_setting ExecStopPost)
stop_post=${stop_post#-}
stop_post=${stop_post/\/usr\/bin\/plugfs/$REL -c $CFG}
# shellcheck disable=SC2086
set -- ${stop_post/\%n/plugfs.service}
# As systemd runs it after a crash that Restart= follows: a dead mount (no
# file descriptor store here) is detached all the same.
(export SERVICE_RESULT=signal; confined stoppost "$@")
check_eq "the unit's ExecStopPost ($*) exits 0" 0 $?
check "it detached the dead mount" bash -c "! grep -qs ' $MNT fuse' /proc/mounts"
syscalls "$T"/trace.stoppost* >"$T/used2"
check_eq "every system call of ExecStopPost is in the unit's SystemCallFilter" "" \
	"$(comm -23 "$T/used2" "$T/allowed" | tr '\n' ' ')"
finish
