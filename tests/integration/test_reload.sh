#!/usr/bin/env bash
# plugfs reload: the daemon reads its config again over the control socket
# and the command tells the truth.  A config the daemon refuses exits 1 with
# the key named and changes nothing (the old log level still in force); a
# good one is applied and named; a change only a restart applies is named on
# stderr, exit 0.  The unit's ExecReload= runs it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
write_config "[log]" "level = info"
start_daemon

check_eq "the unit's ExecReload= is plugfs reload --pid \$MAINPID" "/usr/bin/plugfs reload --pid \$MAINPID" "$(unit_setting ExecReload)"

# --- a config the daemon refuses: the daemon reads $CFG, the command a good
# copy naming the same control socket ---
cp "$CFG" "$T/good.ini"
sed -i 's/^level = info$/level = debug/; s/^cache_timeout = 60$/cache_timeout = 60\nalow_other = true/' "$CFG"
"$PLUGFS_BIN" -c "$T/good.ini" reload >"$T/out" 2>"$T/err"
check_eq "refused config: exit 1" 1 $?
check "refused config: the message names the key" grep -q "unknown key \`alow_other' in \[mount\]" "$T/err"
check "refused config: the message names the file and line" grep -q "$CFG:6" "$T/err"
check "refused config: the message says the running config is kept" grep -q "the running config is kept" "$T/err"
check_eq "refused config: nothing on stdout" "" "$(cat "$T/out")"
check "refused config: the daemon logs it at error" grep -q "plugfs error: reload failed, keeping the running config: .*alow_other" "$DAEMON_LOG"
# The old level (info) is still in force: a new client is a debug line.
"$PLUGFS_BIN" -c "$T/good.ini" status >/dev/null
check "refused config: the old log level is in force (no debug line)" bash -c "! grep -q 'plugfs debug:' '$DAEMON_LOG'"

# --- the same broken file read by the command itself: the daemon is not asked ---
n_before=$(grep -c "reload failed" "$DAEMON_LOG")
"$PLUGFS_BIN" -c "$CFG" reload >/dev/null 2>"$T/err"
check_eq "broken local config: exit 1" 1 $?
check "broken local config: the key is named" grep -q "alow_other" "$T/err"
check "broken local config: it says the daemon was not asked" grep -q "the daemon was not asked" "$T/err"
check_eq "broken local config: the daemon was not asked" "$n_before" "$(grep -c "reload failed" "$DAEMON_LOG")"

# --- a good config: applied, and said so ---
sed -i '/^alow_other = true$/d; s/^cache_timeout = 60$/cache_timeout = 5/' "$CFG"
plugfs reload >"$T/out" 2>"$T/err"
check_eq "good config: exit 0" 0 $?
check_eq "good config: what was applied" "reloaded $CFG
  applied: [log] level, [mount] cache_timeout" "$(cat "$T/out")"
check_eq "good config: nothing needs a restart" "" "$(cat "$T/err")"
plugfs status >/dev/null
check "good config: the new level is in force (a new client is a debug line)" \
	grep -q "plugfs debug: control: client .* connected" "$DAEMON_LOG"
check "good config: the daemon logs the new cache timeout" grep -q "reload: cache_timeout is now 5s" "$DAEMON_LOG"

# --- a change only a restart applies: named on stderr, still exit 0 ---
sed -i "s|^socket = $CTL\$|socket = $CTL\nmax_clients = 7|" "$CFG"
plugfs reload --json >"$T/out" 2>"$T/err"
check_eq "restart-only change: exit 0" 0 $?
check_eq "restart-only change (--json): restart_needed" '["[control] max_clients"]' \
	"$(jq -c .restart_needed "$T/out" 2>&1)"
check_eq "restart-only change (--json): config" "$CFG" "$(jq -r .config "$T/out" 2>&1)"
plugfs reload >/dev/null 2>"$T/err"
check "restart-only change: named on stderr" grep -q "applied only by a restart.*max_clients" "$T/err"
check "restart-only change: the daemon logs it" grep -q "plugfs warn: reload: .*max_clients changed" "$DAEMON_LOG"

# --- the request ---
raw '{"op":"reload","x":1}' >"$T/raw" 2>&1
check "reload takes no fields" grep -q '"invalid_argument"' "$T/raw"

# --- [discover.NAME] sections: a bad one refuses the reload, the running
# sections stay; a good one is added, then removed ---
printf '[discover.d1]\nroot = relative\n' >>"$CFG"
plugfs reload >/dev/null 2>"$T/err"
check_eq "bad [discover] section: exit 1" 1 $?
check "bad [discover] section: the key and the rule are named" \
	grep -q "\[discover.d1\] root = \`relative': expected an absolute" "$T/err"
mkdir -m 0755 "$T/disc"
sed -i "s|^root = relative\$|root = $T/disc|" "$CFG"
plugfs reload >/dev/null 2>"$T/err"
check_eq "[discover] section added: exit 0" 0 $?
check "[discover] section added: the daemon logs it" \
	grep -q "plugfs info: reload: \[discover.d1\] added (root $T/disc)" "$DAEMON_LOG"
printf 'layout = plugin\n' >>"$CFG"
plugfs reload >/dev/null 2>"$T/err"
check "[discover] section changed: the daemon logs it" \
	grep -q "plugfs info: reload: \[discover.d1\] changed" "$DAEMON_LOG"
sed -i '/^\[discover.d1\]$/,$d' "$CFG"
plugfs reload >/dev/null 2>"$T/err"
check "[discover] section removed: the daemon logs it" \
	grep -q "plugfs info: reload: \[discover.d1\] removed" "$DAEMON_LOG"
check_eq "[discover] sections: added, changed and removed once each" 3 \
	"$(grep -c 'reload: \[discover.d1\]' "$DAEMON_LOG")"

stop_daemon
finish
