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
check "it says where and why" grep -q "\-\-textfile \`$T/nowhere/plugfs.prom': directory \`$T/nowhere': \`$T/nowhere': No such file or directory" "$T/err"
plugfs metrics --textfile "$T/textfile/" 2>"$T/err"
check_eq "--textfile naming a directory: exit 2" 2 $?
check "it names the option and the rule" grep -q "must name a file" "$T/err"

# --textfile runs as root (plugfs-metrics.service): it writes only into a
# directory nobody else can change, reached by no symlink someone else
# planted (docs/design.md, "Path trust").  refused_textfile DESC DIR PATTERN:
# exit 1, PATTERN said, nothing written where DIR leads.
VICTIM=$T/victim
mkdir -m 0755 "$VICTIM"
refused_textfile() {
	plugfs metrics --textfile "$2/plugfs.prom" 2>"$T/err"
	check_eq "$1: exit 1" 1 $?
	check "$1: it says why" grep -q -- "$3" "$T/err" || sed 's/^/# /' "$T/err"
	check_eq "$1: nothing written in the victim directory" "" "$(ls -A "$VICTIM")"
}
mkdir -m 1777 "$T/sticky"
as_nobody ln -s "$VICTIM" "$T/sticky/out"
refused_textfile "a symlink nobody planted" "$T/sticky/out" \
	"\`$T/sticky/out' is a symlink owned by uid $(id -u nobody), not root"
as_nobody mkdir "$T/sticky/sub"
as_nobody ln -s "$VICTIM" "$T/sticky/sub/out"
refused_textfile "a symlink nobody planted, further down" "$T/sticky/sub/out/." \
	"\`$T/sticky/sub/out' is a symlink owned by uid $(id -u nobody)"
mkdir -m 0777 "$T/ww"
refused_textfile "a directory others may write" "$T/ww" \
	"directory \`$T/ww' is writable by others (mode 0777) without the sticky bit"
check_eq "nothing written in it" "" "$(ls -A "$T/ww")"
as_nobody mkdir "$T/sticky/nobodys"
refused_textfile "a directory of nobody's" "$T/sticky/nobodys" \
	"directory \`$T/sticky/nobodys' is owned by uid $(id -u nobody), not root"
check_eq "nothing written in it" "" "$(ls -A "$T/sticky/nobodys")"
mkdir -m 0775 "$T/gw" && chgrp nogroup "$T/gw"
refused_textfile "a directory its group may write" "$T/gw" \
	"directory \`$T/gw' is writable by group $(getent group nogroup | cut -d: -f3)"
# Debian's layout: /var/lib/prometheus is the prometheus user's, its
# node-exporter directory root's.  What is written lands in that directory
# (through its fd), whatever the owner of the one above renames later.
mkdir -m 0755 "$T/prom" && chown nobody "$T/prom" && mkdir -m 0755 "$T/prom/node-exporter"
plugfs metrics --textfile "$T/prom/node-exporter/plugfs.prom" 2>"$T/err"
check_eq "a root's directory in nobody's: written" 0 $?
check "promtool accepts it" promtool check metrics <"$T/prom/node-exporter/plugfs.prom"
ln -s "$T/prom/node-exporter" "$T/rootlink"
plugfs metrics --textfile "$T/rootlink/again.prom" 2>"$T/err"
check_eq "through root's own symlink: written" 0 $?
check "it is in the symlink's target" test -s "$T/prom/node-exporter/again.prom"
check_eq "nothing else beside them" "again.prom plugfs.prom" "$(ls "$T/prom/node-exporter" | tr '\n' ' ' | sed 's/ $//')"
stop_daemon
finish
