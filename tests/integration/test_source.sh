#!/usr/bin/env bash
# A registration's source, persisted with it: `control' for one registered
# over the control socket, `discover.NAME' for one a [discover.NAME] section
# found (written into the state file here, while the daemon is down, as the
# discovery would have stored it: its socket, a hard link to a2's, in an
# allocation directory of the section's root, which the start's
# reconciliation finds there and keeps).  list --json, show (text and
# JSON), state dump, watch and the metrics say which is which, across a
# restart.  (A plugin's info file does not show it yet.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
write_config "[log]" "level = info"
start_daemon
demo a1 a2
reg csi-node p a1
reg csi-node p a2
check_eq "registered over the control socket: source control" "control control" \
	"$(plugfs list --json | jq -r '[.plugins[].registrations[].source] | join(" ")')"
stop_daemon

mkdir -p -m 0755 "$T/nomad/a2"
ln "$(sock_of a2)" "$T/nomad/a2/csi.sock"
write_config "[log]" "level = info" "[discover.nomad]" "root = $T/nomad" "type = csi-node" "name = p"
sqlite3 "$STATE" "UPDATE registrations SET source = 'discover.nomad', socket = '$T/nomad/a2/csi.sock' WHERE alloc = 'a2'"
"$PLUGFS_BIN" -c "$CFG" state dump >"$T/dump"
check "state dump: the discovered one's source" grep -qx "      source      discover.nomad" "$T/dump"
check_eq "state dump: no source line for one of the control socket" 1 "$(grep -c source "$T/dump")"
start_daemon
check_eq "list --json: each registration's source" "a2=discover.nomad a1=control" \
	"$(plugfs list --json | jq -r '[.plugins[].registrations[] | "\(.alloc)=\(.source)"] | join(" ")')"
plugfs show csi-node p >"$T/show"
check "show: the discovered one says its source" \
	awk '/^\* a2 / { on = 1; next } /^  / && !/^    / { on = 0 } on && $0 == "    source discover.nomad" { f = 1 } END { exit !f }' "$T/show"
check "show: the other says control" grep -qx "    source control" "$T/show"
sed 's/^/# /' "$T/show"
plugfs metrics >"$T/m.txt"
check_eq "metrics: one registration from the control socket" 1 \
	"$(awk '$1 == "plugfs_registrations_by_source{source=\"control\"}" { print $2 }' "$T/m.txt")"
check_eq "metrics: one from discover.nomad" 1 \
	"$(awk '$1 == "plugfs_registrations_by_source{source=\"discover.nomad\"}" { print $2 }' "$T/m.txt")"
# watch: a new registration's event carries its source; an update of the
# discovered one over the control socket makes it control's.
plugfs_bg watch --json >"$T/watch.json" 2>&1 &
WPID=$!
_PIDS+=("$WPID")
watching() { [ "$(plugfs status --json | jq .watchers)" = 1 ]; }
wait_until --pid "$WPID" 30 "the watcher is connected" watching
demo a3
reg csi-node p a3
wait_until --pid "$WPID" 30 "a3's registration is watched" grep -q '"a3"' "$T/watch.json"
check_eq "watch: the event's registration says its source" control \
	"$(jq -r 'select(.alloc == "a3") | .registration.source' "$T/watch.json")"
kill "$WPID"
reg csi-node p a2 --version 9
check_eq "the update over the control socket: source control" control \
	"$(plugfs show csi-node p --json | jq -r '.registrations[] | select(.alloc == "a2") | .source')"
stop_daemon
finish
