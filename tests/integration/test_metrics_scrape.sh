#!/usr/bin/env bash
# plugfs metrics: the Prometheus text format, checked by promtool (Debian's
# prometheus package) and by the values a known history must give: two
# registrations, the newest dies (a switch, failed probes), a refused
# request, lookups through the mount.  --textfile writes the file whole.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
if ! command -v promtool >/dev/null; then
	[ "${CI:-}" = true ] && die "promtool is missing (bash contrib/install-deps.sh installs prometheus; CI=true: not skipping)"
	echo "SKIP: $_TEST: promtool is missing (bash contrib/install-deps.sh)"
	exit 77
fi
write_config "[probe]" "mode = connect" "interval = 0.2" "timeout = 0.5" "failures = 3"
start_daemon
E=$MNT/plugins/csi-node/p
# metric 'NAME{LABELS}': its value in $T/m.txt.
metric() { awk -v k="$1" '$1 == k { print $2 }' "$T/m.txt"; }
scrape() { plugfs metrics >"$T/m.txt"; }

demo a1
demo a2
pid_a2=$DEMO_PID
reg csi-node p a1
reg csi-node p a2
kill -KILL "$pid_a2"
wait "$pid_a2" 2>/dev/null
wait_until 10 "csi.sock fails over to a1" link_is a1
# Its exit was seen at once (a pidfd); the rounds go on probing it.
rounds_failed() {
	scrape && [ "$(metric plugfs_probe_rounds_total)" -ge 1 ] &&
		[ "$(metric 'plugfs_probes_total{result="failed"}')" -ge 3 ]
}
wait_until 10 "the rounds found a2 dead three times" rounds_failed
plugfs register --type csi-node --name 'bad name' --alloc x --socket /x 2>/dev/null
check_eq "a bad register is refused" 1 $?
getfattr -n user.nope "$E/info" >/dev/null 2>&1 # ENODATA, from the daemon
readlink "$E/csi.sock" >/dev/null

scrape
check_eq "plugfs metrics exits 0" 0 $?
check "promtool check metrics accepts the output" promtool check metrics <"$T/m.txt"
check_eq "registrations of csi-node" 2 "$(metric 'plugfs_registrations{type="csi-node"}')"
check_eq "registrations of csi-controller" 0 "$(metric 'plugfs_registrations{type="csi-controller"}')"
check_eq "plugins of csi-node" 1 "$(metric 'plugfs_plugins{type="csi-node"}')"
check_eq "one dead registration" 1 "$(metric 'plugfs_registrations_health{type="csi-node",health="dead"}')"
check_eq "one alive registration" 1 "$(metric 'plugfs_registrations_health{type="csi-node",health="alive"}')"
check_eq "three switches: a1, a2, back to a1" 3 "$(metric plugfs_active_switches_total)"
check_eq "two registered events" 2 "$(metric 'plugfs_registry_events_total{event="registered"}')"
check_eq "two register requests plus the refused one" 3 "$(metric 'plugfs_control_requests_total{op="register"}')"
check "the refused one counted as invalid_argument" \
	test "$(metric 'plugfs_control_answers_total{result="invalid_argument"}')" -ge 1
check "FUSE requests counted" test "$(metric plugfs_fuse_requests_total)" -gt 0
check "the getxattr of a missing attribute counted as ENODATA" \
	test "$(metric 'plugfs_fuse_errors_total{errno="ENODATA"}')" -ge 1
check_eq "this daemon mounted (not resumed)" 0 "$(metric plugfs_fuse_resumed)"
check "failed probes counted (a2: at least failures = 3)" \
	test "$(metric 'plugfs_probes_total{result="failed"}')" -ge 3
check "successful probes counted" test "$(metric 'plugfs_probes_total{result="ok"}')" -ge 1
check "probe rounds counted" test "$(metric plugfs_probe_rounds_total)" -ge 1
check_eq "both registrations watched (one kind each)" 2 \
	"$(($(metric 'plugfs_probe_watches{kind="pidfd"}') + $(metric 'plugfs_probe_watches{kind="inotify"}') + $(metric 'plugfs_probe_watches{kind="poll"}')))"
check_eq "a1's listener has a pidfd (a2's fired)" 1 "$(metric 'plugfs_probe_watches{kind="pidfd"}')"
check "a2's exit counted as an event" test "$(metric plugfs_probe_watch_events_total)" -ge 1
check "the event's probe counted" test "$(metric plugfs_probe_watch_probes_total)" -ge 1
check_eq "no fallback" 0 "$(metric 'plugfs_probe_watch_fallbacks_total{reason="no_pidfd"}')"
check_eq "one directory per socket" 2 "$(metric plugfs_probe_watched_directories)"
check "commits counted (two registrations at least)" \
	test "$(metric plugfs_commit_duration_seconds_count)" -ge 2
check_eq "the +Inf bucket holds every commit" "$(metric plugfs_commit_duration_seconds_count)" \
	"$(metric 'plugfs_commit_duration_seconds_bucket{le="+Inf"}')"
check_eq "the reserve is held" 1 "$(metric plugfs_state_reserve_held)"
check_eq "no deregistration needed it" 0 "$(metric plugfs_state_reserve_releases_total)"
check "checkpoints counted by mode" \
	test -n "$(metric 'plugfs_state_checkpoints_total{mode="truncate"}')"
check_eq "no checkpoint failed" 0 "$(metric plugfs_state_checkpoint_failures_total)"
check_eq "no refused connection" 0 "$(metric 'plugfs_control_connections_total{result="refused"}')"
check_eq "build info" 1 "$(grep -c '^plugfs_build_info{version="[^"]*"} 1$' "$T/m.txt")"

# --textfile: written whole, mode 0644, nothing left beside it.
mkdir -p "$T/textfile"
plugfs metrics --textfile "$T/textfile/plugfs.prom"
check_eq "metrics --textfile exits 0" 0 $?
check "promtool accepts the textfile" promtool check metrics <"$T/textfile/plugfs.prom"
check_eq "the textfile is mode 644" 644 "$(stat -c %a "$T/textfile/plugfs.prom")"
check_eq "nothing else in the textfile directory" "plugfs.prom" "$(ls "$T/textfile")"
plugfs metrics --textfile "$T/nowhere/plugfs.prom" 2>"$T/err"
check_eq "--textfile in a missing directory: exit 1" 1 $?
check "it says where and why" grep -q "\-\-textfile \`$T/nowhere/plugfs.prom': cannot create a file beside it: No such file or directory" "$T/err"
plugfs metrics --textfile "$T/textfile/" 2>"$T/err"
check_eq "--textfile naming a directory: exit 2" 2 $?
check "it names the option and the rule" grep -q "must name a file" "$T/err"
stop_daemon
finish
