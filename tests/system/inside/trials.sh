#!/bin/bash
# The restart trials, run inside the test's booted Debian tree (systemd as
# PID 1) by test_systemd_restart.sh, which shares /plugfs-test with it:
#   /plugfs-test/plugfs_*.deb, plugfs-test-connect-loop, outage-hook (in)
#   /plugfs-test/out/ (out: figures, summary, journal)
#
# Installs the .deb (which enables and starts plugfs.service), registers
# allocation a1 (a plugfs-demo-plugin), bind-mounts its plugin directory at /srv/consumer and
# runs a consumer connecting through /srv/consumer/csi.sock all along, then:
#   trial_restart  x$RESTARTS  systemctl restart plugfs
#   trial_kill9    x$KILLS     kill -9 of the main PID (Restart= restarts it)
#   trial_reexec   x$REEXECS   reinstall the .deb, SIGUSR2 (re-exec)
#   trial_watchdog x$WATCHDOGS SIGSTOP of the main PID: the watchdog
#                              (WatchdogSec=3s here) kills it, Restart=
#                              resumes the mount
# each with a registration of a new allocation during the outage, then
# the journal (priorities, a refused reload: `journalctl -p warning' shows
# warnings), finally systemctl stop plugfs (a clean stop logs no unmount
# error) and dpkg --purge (nothing of the unit is left).
#
# Output is TAP-like.  Every check counts: the infrastructure's (install,
# start, registration, bind mount, consumer, stop) and the trials' (0
# failed or wrong connects, registration during the outage accepted, new
# allocation served through the bind mount, no hung daemon).  Exit 0 when
# none failed.
set -u -o pipefail

SHARE=/plugfs-test
OUT=$SHARE/out
SYNC=/run/plugfs-test # the consumer's phase file and the outage hook's markers
BIND=/srv/consumer
TYPE=csi-node
NAME=demo
# Trial counts: the soak mode (PLUGFS_SOAK=1, passed in like every
# PLUGFS_ variable) runs 10 restarts, 10 kills, 3 re-execs, 2 watchdogs.
# The default run: 3, 3, 1, 1: every kind of outage, each with a new
# allocation, and more than one restart and kill, so that a restart from a
# state an earlier one left is met too; the soak looks for rarer failures.
soak() { if [ "${PLUGFS_SOAK:-0}" = 1 ]; then echo "$2"; else echo "$1"; fi; }
RESTARTS=${PLUGFS_SYSTEM_RESTARTS:-$(soak 3 10)}
KILLS=${PLUGFS_SYSTEM_KILLS:-$(soak 3 10)}
REEXECS=${PLUGFS_SYSTEM_REEXECS:-$(soak 1 3)}
WATCHDOGS=${PLUGFS_SYSTEM_WATCHDOGS:-$(soak 1 2)}
WATCHDOG_SEC=3
# Kernel cache lifetime of the daemon's answers: short, so that the consumer
# asks the daemon (not the kernel's cache) in every trial.
CACHE_TIMEOUT=${PLUGFS_SYSTEM_CACHE_TIMEOUT:-1}
# How long the consumer goes on after each trial's daemon is back: more than
# the cache timeout, so that its lookups reach the new daemon.
SETTLE=${PLUGFS_SYSTEM_SETTLE:-1.5}
# The shortest time from one trial's start to the next (see run_trials).
PERIOD=${PLUGFS_SYSTEM_PERIOD:-2.5}
DEB=$(find "$SHARE" -maxdepth 1 -name 'plugfs_*.deb' | head -n 1)
# The package keeps the stand-in plugin off the PATH.
DEMO=/usr/lib/plugfs/plugfs-demo-plugin
mkdir -p "$OUT" "$SYNC"

_FAILED=0
pass() { echo "ok - $*"; }
fail() { _FAILED=$((_FAILED + 1)); echo "not ok - $*"; }
# infra DESC CMD...: a strict check.
infra() { local d=$1; shift; if "$@"; then pass "$d"; else fail "$d"; fi; }
# trial DESC CMD...: a check of a trial's outcome, as strict.
trial() { infra "$@"; }
# abort_infra MESSAGE: an infrastructure step failed; the trials cannot run.
abort_infra() {
	fail "$*"
	journal
	echo "trials: stopped early: $_FAILED failed"
	exit 1
}
journal() { journalctl -b --no-pager -o short-monotonic >"$OUT/journal.txt" 2>&1; }

# wait_for SECONDS CMD...: polls CMD every 50 ms; 1 when it never succeeded.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.05
	done
}
prop() { systemctl show -P "$1" plugfs.service; }
main_pid() { prop MainPID; }
is_active() { [ "$(prop ActiveState)" = active ]; }
# The st_dev ("0:N") of a FUSE mount at $1, or nothing.
fuse_dev() { awk -v m="$1" '$5 == m && $0 ~ / - fuse/ { d = $3 } END { print d }' /proc/self/mountinfo; }
is_fuse_mounted() { [ -n "$(fuse_dev "$1")" ]; }
# abort_conn PATH: aborts the FUSE connection mounted at PATH (ours: the
# daemon's mount or the consumer's bind mount of it), so that a hung daemon
# and whatever waits on it are freed.
abort_conn() {
	local dev id
	dev=$(fuse_dev "$1")
	[ -n "$dev" ] || return 0
	id=$(((${dev%%:*} << 20) | ${dev##*:}))
	[ -e "/sys/fs/fuse/connections/$id" ] || mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null
	[ -w "/sys/fs/fuse/connections/$id/abort" ] && echo 1 >"/sys/fs/fuse/connections/$id/abort"
	echo "# aborted the FUSE connection $id ($1)"
}
# all_zero VALUE...: every VALUE is 0 (an empty one is not).
all_zero() {
	local v
	for v in "$@"; do [ "$v" = 0 ] || return 1; done
}
set_phase() {
	printf '%s\n' "$1" >"$SYNC/phase.tmp" && mv "$SYNC/phase.tmp" "$SYNC/phase"
}
sock_of() { echo "/run/alloc/a$1/csi.sock"; }
# start_alloc N: plugfs-demo-plugin answering "aN" at $(sock_of N).
start_alloc() {
	systemd-run --quiet --collect --unit="plugfs-demo-a$1" \
		"$DEMO" --socket "$(sock_of "$1")" --alloc "a$1" &&
		timeout 15 "$DEMO" --connect "$(sock_of "$1")" --wait 10 >/dev/null
}
register() {
	timeout 30 plugfs register --type "$TYPE" --name "$NAME" --alloc "a$1" --socket "$(sock_of "$1")"
}
# served PATH N: a connection through PATH reaches aN (5 s at most).
answer() { timeout 5 "$DEMO" --connect "$1" 2>/dev/null; }
served() { [ "$(answer "$1")" = "a$2" ]; }
# served_soon PATH N: served within 5 s; gives up at once on ENOTCONN
# (PATH's daemon is gone for good).
served_soon() {
	local end=$((SECONDS + 5)) out
	for (( ; ; )); do
		out=$(LC_ALL=C timeout 5 "$DEMO" --connect "$1" 2>&1)
		[ "$out" = "a$2" ] && return 0
		[ "$SECONDS" -lt "$end" ] || return 1
		case $out in *"not connected"*) return 1 ;; esac
		sleep 0.05
	done
}
# process_gone PID: no such process, or only its zombie is left.
process_gone() {
	local st
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 0
	[ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ]
}
daemon_back() { is_active && [ -n "$(main_pid)" ] && [ "$(main_pid)" != 0 ] && [ "$(main_pid)" != "$1" ]; }

# --- per kind figures ---
declare -A T_RUN T_BACK T_HUNG T_REG T_BIND T_MNT T_DOWN
kind_init() { T_RUN[$1]=0 T_BACK[$1]=0 T_HUNG[$1]=0 T_REG[$1]=0 T_BIND[$1]=0 T_MNT[$1]=0 T_DOWN[$1]=0; }
bump() { eval "$1[$2]=\$((\${$1[$2]} + 1))"; }

# outage_register N: waits (30 s) for the outage hook, sends the
# registration of aN in the background (REG_PID), lets the hook go on.
outage_register() {
	REG_PID=
	if ! wait_for 30 test -e "$SYNC/outage"; then
		rm -f "$SYNC/armed"
		return 1
	fi
	register "$1" >"$OUT/register.log" 2>&1 &
	REG_PID=$!
	for _ in $(seq 20); do kill -0 "$REG_PID" 2>/dev/null || break; sleep 0.01; done
	: >"$SYNC/ack"
	return 0
}

# recover KIND OLD_PID: the daemon did not come back: abort our FUSE
# connections (what a hung daemon waits on) and start it again.  Hung:
# the old process is still there.
recover() {
	process_gone "$2" || bump T_HUNG "$1"
	echo "# $TL: the daemon did not come back within 30 s (old pid $2 $(process_gone "$2" && echo gone || echo "still there")): recovering"
	local p
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = plugfs ] &&
			echo "# pid ${p#/proc/}: state $(awk '{ print $3 }' "$p/stat") wchan $(cat "$p/wchan" 2>/dev/null)"
	done
	abort_conn /run/plugfs
	abort_conn "$BIND"
	wait_for 10 process_gone "$2"
	timeout 60 systemctl reset-failed plugfs.service
	is_active || timeout 60 systemctl start plugfs.service
	wait_for 30 is_active
}

# after_outage KIND N REG_RC: the checks every trial ends with.
after_outage() {
	local kind=$1 n=$2 rc=$3
	trial "$TL: the registration of a$n sent during the outage succeeded (exit $rc)" [ "$rc" = 0 ]
	if [ "$rc" = 0 ]; then
		bump T_REG "$kind"
	else
		# So that the trials go on: register it now the daemon is back.
		register "$n" >>"$OUT/register.log" 2>&1
	fi
	if served_soon "/run/plugfs/plugins/$TYPE/$NAME/csi.sock" "$n"; then bump T_MNT "$kind"; fi
	if served_soon "$BIND/csi.sock" "$n"; then
		bump T_BIND "$kind"
		trial "$TL: the bind mount serves the new allocation a$n" true
	else
		trial "$TL: the bind mount serves the new allocation a$n (it answers [$(answer "$BIND/csi.sock" || echo "error")])" false
	fi
	sleep "$SETTLE"
}

trial_restart() {
	local n=$1 old sp rc_restart rc_reg=none
	bump T_RUN restart
	start_alloc "$n" || abort_infra "restart: demo plugin a$n did not start"
	old=$(main_pid)
	: >"$SYNC/armed"
	timeout 90 systemctl restart plugfs.service &
	sp=$!
	outage_register "$n" || echo "# $TL: no outage seen (the hook did not run within 30 s)"
	wait "$sp"
	rc_restart=$?
	if [ -n "$REG_PID" ]; then
		wait "$REG_PID"
		rc_reg=$?
	fi
	if [ "$rc_restart" = 0 ] && wait_for 30 daemon_back "$old"; then
		bump T_BACK restart
	else
		trial "$TL: the daemon is back (systemctl restart exit $rc_restart)" false
		recover restart "$old"
	fi
	after_outage restart "$n" "$rc_reg"
}

trial_kill9() {
	local n=$1 old nr rc_reg=none
	bump T_RUN kill9
	start_alloc "$n" || abort_infra "kill9: demo plugin a$n did not start"
	old=$(main_pid)
	nr=$(prop NRestarts)
	: >"$SYNC/armed"
	kill -KILL "$old"
	if ! wait_for 1 process_gone "$old"; then
		bump T_DOWN kill9
		echo "# $TL: pid $old still there 1 s after SIGKILL"
	fi
	outage_register "$n" || echo "# $TL: no outage seen (the hook did not run within 30 s)"
	if [ -n "$REG_PID" ]; then
		wait "$REG_PID"
		rc_reg=$?
	fi
	if wait_for 30 bash -c "[ \"\$(systemctl show -P NRestarts plugfs)\" -gt $nr ]" &&
		wait_for 30 daemon_back "$old"; then
		bump T_BACK kill9
	else
		trial "$TL: Restart= brought the daemon back" false
		recover kill9 "$old"
	fi
	after_outage kill9 "$n" "$rc_reg"
}

# A hung daemon (SIGSTOP: no request is answered, no ping sent): systemd's
# watchdog stops it, stop-post keeps the mount, Restart= resumes it, and the
# requests the hung process held are sent again to the new one.
trial_watchdog() {
	local n=$1 old nr rc_reg=none t0 t1
	bump T_RUN watchdog
	start_alloc "$n" || abort_infra "watchdog: demo plugin a$n did not start"
	old=$(main_pid)
	nr=$(prop NRestarts)
	: >"$SYNC/armed"
	t0=$EPOCHREALTIME
	kill -STOP "$old"
	outage_register "$n" || echo "# $TL: no outage seen (the hook did not run within 30 s)"
	if [ -n "$REG_PID" ]; then
		wait "$REG_PID"
		rc_reg=$?
	fi
	if wait_for 60 bash -c "[ \"\$(systemctl show -P NRestarts plugfs)\" -gt $nr ]" &&
		wait_for 30 daemon_back "$old"; then
		bump T_BACK watchdog
		t1=$EPOCHREALTIME
		echo "# $TL: hung at SIGSTOP, replaced $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s later (WatchdogSec=${WATCHDOG_SEC}s, RestartSec=1s); result $(journalctl -u plugfs --no-pager -o cat 2>/dev/null | grep -c 'Watchdog timeout') watchdog timeouts so far"
	else
		kill -CONT "$old" 2>/dev/null
		trial "$TL: the watchdog replaced the hung daemon" false
		recover watchdog "$old"
	fi
	after_outage watchdog "$n" "$rc_reg"
}

# The re-exec (live upgrade keeping the PID): the package is installed
# again (a new inode for /usr/bin/plugfs), SIGUSR2 makes the daemon exec
# it.
trial_reexec() {
	local n=$1 pid ino rc_reg
	bump T_RUN reexec
	start_alloc "$n" || abort_infra "reexec: demo plugin a$n did not start"
	pid=$(main_pid)
	dpkg -i "$DEB" >"$OUT/dpkg-reexec.log" 2>&1 || abort_infra "$TL: dpkg -i again failed"
	ino=$(stat -c %i /usr/bin/plugfs)
	kill -USR2 "$pid"
	register "$n" >"$OUT/register.log" 2>&1
	rc_reg=$?
	if wait_for 30 bash -c "[ \"\$(stat -L -c %i /proc/$pid/exe 2>/dev/null)\" = $ino ]" &&
		[ "$(main_pid)" = "$pid" ] && is_active; then
		bump T_BACK reexec
	else
		trial "$TL: pid $pid runs the reinstalled /usr/bin/plugfs (inode $ino)" false
		recover reexec "$pid"
	fi
	after_outage reexec "$n" "$rc_reg"
}

# consumer_figure PHASE KEY: KEY=value from the consumer's line of PHASE.
consumer_figure() {
	awk -v p="phase=$1" -v k="$2" '$1 == p { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) v = kv[2] } } END { print v }' "$SYNC/figures"
}

# ===================== infrastructure =====================
[ -n "$DEB" ] || abort_infra "no .deb in $SHARE"
install -m 0755 "$SHARE/plugfs-test-connect-loop" /usr/local/bin/ || abort_infra "cannot install the consumer"
# The config and the drop-in first: the package starts the daemon.
mkdir -p /etc/plugfs /etc/systemd/system/plugfs.service.d
printf '[mount]\ncache_timeout = %s\n' "$CACHE_TIMEOUT" >/etc/plugfs/plugfs.ini
install -m 0755 "$SHARE/outage-hook" /usr/local/sbin/plugfs-test-outage-hook
cat >/etc/systemd/system/plugfs.service.d/plugfs-test.conf <<'EOF'
# The restart test's hook: see /usr/local/sbin/plugfs-test-outage-hook.
[Service]
ExecStopPost=-/usr/local/sbin/plugfs-test-outage-hook
# A short watchdog for the watchdog trials; no core of the SIGABRT.
WatchdogSec=3s
LimitCORE=0
EOF
dpkg -i "$DEB" >"$OUT/dpkg.log" 2>&1 || { cat "$OUT/dpkg.log"; abort_infra "dpkg -i $(basename "$DEB")"; }
pass "dpkg -i $(basename "$DEB")"
infra "the package enabled plugfs.service ($(systemctl is-enabled plugfs.service 2>&1))" \
	[ "$(systemctl is-enabled plugfs.service 2>&1)" = enabled ]
infra "the package started plugfs.service" wait_for 60 is_active
infra "the package made /var/lib/plugfs 0700 ($(stat -c %a /var/lib/plugfs 2>&1))" \
	[ "$(stat -c %a /var/lib/plugfs 2>&1)" = 700 ]
infra "the demo plugin is not on the PATH" bash -c '! command -v plugfs-demo-plugin'
timeout 90 systemctl start plugfs.service
infra "systemctl start plugfs (already started: no change)" is_active
is_active || abort_infra "plugfs.service is not active: $(systemctl status plugfs --no-pager 2>&1 | tail -n 20)"
infra "/run/plugfs is a FUSE mount" is_fuse_mounted /run/plugfs
echo "# FileDescriptorStoreMax=$(prop FileDescriptorStoreMax) NFileDescriptorStore=$(prop NFileDescriptorStore)"

LAST=1
start_alloc 1 || abort_infra "demo plugin a1 did not start"
infra "plugfs register a1" register 1
mkdir -p "$BIND"
mount --bind "/run/plugfs/plugins/$TYPE/$NAME" "$BIND" || abort_infra "mount --bind of the plugin directory"
infra "the bind mount reaches a1" served "$BIND/csi.sock" 1
set_phase baseline
rm -f "$SYNC/figures"
systemd-run --quiet --collect --unit=plugfs-consumer \
	-p StandardOutput="file:$OUT/consumer.log" -p StandardError="file:$OUT/consumer.log" \
	/usr/local/bin/plugfs-test-connect-loop --socket "$BIND/csi.sock" --control "$SYNC"
sleep 1
infra "the consumer runs" systemctl -q is-active plugfs-consumer.service

# ===================== trials =====================
for k in restart kill9 reexec watchdog; do kind_init "$k"; done
# run_trials KIND COUNT: COUNT trials of KIND, each with a new allocation,
# one every $PERIOD s at most: systemd's default start limit (5 starts in
# 10 s) fails a unit started more often, and that stop would empty its file
# descriptor store.
run_trials() {
	local i t0 rest
	set_phase "$1"
	for i in $(seq "$2"); do
		t0=$EPOCHREALTIME
		LAST=$((LAST + 1))
		TL="$1 $i/$2 (a$LAST)"
		"trial_$1" "$LAST"
		rest=$(awk -v a="$t0" -v b="$EPOCHREALTIME" -v p="$PERIOD" 'BEGIN { r = p - (b - a); printf "%.2f", (r > 0 ? r : 0) }')
		sleep "$rest"
	done
}
run_trials restart "$RESTARTS"
run_trials kill9 "$KILLS"
run_trials reexec "$REEXECS"
run_trials watchdog "$WATCHDOGS"
set_phase end
wait_for 30 bash -c '! systemctl -q is-active plugfs-consumer.service' || {
	echo "# the consumer did not end within 30 s: killed"
	systemctl kill -s KILL plugfs-consumer.service
}
infra "the consumer wrote its figures" grep -q '^phase=baseline ' "$SYNC/figures"
cp "$SYNC/figures" "$OUT/figures" 2>/dev/null
infra "baseline: every connect reached a1 ($(grep '^phase=baseline ' "$SYNC/figures"))" \
	all_zero "$(consumer_figure baseline failed)" "$(consumer_figure baseline wrong)"
kinds=(restart kill9 reexec watchdog)
for k in "${kinds[@]}"; do
	trial "$k: 0 failed connects through the bind mount ($(consumer_figure "$k" failed) of $(consumer_figure "$k" tried))" \
		[ "$(consumer_figure "$k" failed)" = 0 ]
	trial "$k: every connect reached the right allocation ($(consumer_figure "$k" wrong) wrong)" \
		[ "$(consumer_figure "$k" wrong)" = 0 ]
	trial "$k: no hung daemon (${T_HUNG[$k]}), each gone 1 s after SIGKILL (${T_DOWN[$k]} late)" \
		all_zero "${T_HUNG[$k]}" "${T_DOWN[$k]}"
done

# ===================== the journal =====================
# Priorities come from the <N> prefixes; journald keeps its own timestamp.
bad_name_refused() {
	! timeout 30 plugfs register --type "$TYPE" --name 'x/y' --alloc bad --socket "$(sock_of 1)" 2>/dev/null
}
infra "a registration with a bad name is refused" bad_name_refused
infra "journalctl -p notice shows the refusal" \
	wait_for 10 bash -c "journalctl -u plugfs.service --no-pager -o cat -p notice | grep -q 'register from pid .* refused: name'"
infra "journalctl -p warning does not show it (a notice)" \
	bash -c "! journalctl -u plugfs.service --no-pager -o cat -p warning | grep -q 'refused: name'"
infra "a log line has no timestamp of its own in the journal" \
	bash -c "! journalctl -u plugfs.service --no-pager -o cat | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T.* plugfs (info|warn|error|notice|debug): '"
infra "the priority prefix is taken by journald (no <N> left in the text)" \
	bash -c "! journalctl -u plugfs.service --no-pager -o cat | grep -Eq '^<[0-7]>'"
# A refused reload fails `systemctl reload' and is a warning-or-worse line.
cp /etc/plugfs/plugfs.ini "$OUT/plugfs.ini.good"
printf 'alow_other = true\n' >>/etc/plugfs/plugfs.ini
timeout 60 systemctl reload plugfs.service >"$OUT/reload.log" 2>&1
infra "systemctl reload with a broken config fails" [ $? -ne 0 ]
infra "journalctl -p warning shows why (the key named)" \
	wait_for 10 bash -c "journalctl -u plugfs.service --no-pager -o cat -p warning | grep -q 'alow_other'"
infra "the daemon is still active after the refused reload" is_active
cp "$OUT/plugfs.ini.good" /etc/plugfs/plugfs.ini
timeout 60 systemctl reload plugfs.service >>"$OUT/reload.log" 2>&1
infra "systemctl reload with the good config succeeds" [ $? -eq 0 ]

# ===================== stop =====================
since=$(date '+%Y-%m-%d %H:%M:%S')
timeout 90 systemctl stop plugfs.service
infra "systemctl stop plugfs: inactive" [ "$(prop ActiveState)" = inactive ]
infra "after stop: /run/plugfs is not mounted" bash -c "! grep -q ' /run/plugfs .* - fuse' /proc/self/mountinfo"
infra "after stop: the file descriptor store is empty (NFileDescriptorStore=$(prop NFileDescriptorStore))" \
	[ "$(prop NFileDescriptorStore)" = 0 ]
infra "after stop: PID 1 holds no /dev/fuse" bash -c "! ls -l /proc/1/fd 2>/dev/null | grep -q /dev/fuse"
umount "$BIND" 2>/dev/null || umount -l "$BIND"
# The whole journal, not only the unit's: whoever would run fusermount3.
journalctl --since "$since" --no-pager -o short-monotonic >"$OUT/stop-journal.txt" 2>&1
grep -E 'plugfs|fuse' "$OUT/stop-journal.txt" | sed 's/^/# stop: /'
infra "the clean stop logged no unmount error ($(grep -c 'failed to unmount' "$OUT/stop-journal.txt"))" \
	bash -c "! grep -q 'failed to unmount' '$OUT/stop-journal.txt'"

# ===================== purge =====================
dpkg --purge plugfs >"$OUT/purge.log" 2>&1
infra "dpkg --purge plugfs" [ $? -eq 0 ]
infra "after purge: no enablement symlink or mask is left" \
	bash -c "! find /etc/systemd/system -name plugfs.service -print | grep -q ."
infra "after purge: /var/lib/plugfs is gone" [ ! -e /var/lib/plugfs ]

# ===================== figures =====================
{
	echo "# figures (consumer connects through the bind mount; registration sent during each outage)"
	printf '# %-8s %6s %7s %6s %5s %9s %8s %7s %8s %8s %5s\n' kind trials tried failed wrong stall_ms gap_ms back reg_ok bind_new hung
	for k in baseline "${kinds[@]}"; do
		if [ "$k" = baseline ]; then
			printf '# %-8s %6s %7s %6s %5s %9s %8s %7s %8s %8s %5s\n' "$k" - \
				"$(consumer_figure "$k" tried)" "$(consumer_figure "$k" failed)" "$(consumer_figure "$k" wrong)" \
				"$(consumer_figure "$k" stall_ms)" "$(consumer_figure "$k" gap_ms)" - - - -
			continue
		fi
		printf '# %-8s %6s %7s %6s %5s %9s %8s %7s %8s %8s %5s\n' "$k" "${T_RUN[$k]}" \
			"$(consumer_figure "$k" tried)" "$(consumer_figure "$k" failed)" "$(consumer_figure "$k" wrong)" \
			"$(consumer_figure "$k" stall_ms)" "$(consumer_figure "$k" gap_ms)" \
			"${T_BACK[$k]}/${T_RUN[$k]}" "${T_REG[$k]}/${T_RUN[$k]}" "${T_BIND[$k]}/${T_RUN[$k]}" "${T_HUNG[$k]}"
	done
	echo "# consumer errors: $(awk '{ print $1, $NF }' "$SYNC/figures" | tr '\n' ';')"
	echo "# new allocation served at /run/plugfs itself: restart ${T_MNT[restart]}/${T_RUN[restart]}, kill9 ${T_MNT[kill9]}/${T_RUN[kill9]}"
} | tee "$OUT/summary"
journal
echo "trials: $_FAILED failed"
[ "$_FAILED" -eq 0 ]
