#!/usr/bin/env bash
# A storm: 8 concurrent clients x 500 mixed register/deregister requests on
# overlapping plugins and allocs (plugfs-test-storm, one connection each).
# No client may see an error; afterwards `list --json` must equal the tree
# under the mount, and be the same after a daemon restart.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
# No probing: list --json must be byte for byte the same after a restart,
# and probe times would differ (the sockets do not exist anyway).
write_config "[probe]" "mode = none"
# Room for the 8 storm clients, the watcher and the CLI.
sed -i "s|^socket = $CTL\$|socket = $CTL\nmax_clients = 32|" "$CFG"
start_daemon

plugfs_bg watch --json >"$T/storm-events.json" 2>&1 &
watch_pid=$!
_PIDS+=("$watch_pid")
wait_until 60 "the daemon counts the watcher" watchers_are 1
check_eq "the watcher is connected before the storm" 1 "$(plugfs status --json | jq .watchers)"

start=$(date +%s)
"$STORM" "$CTL" "$T/storm" 8 500 "${STORM_SEED:-$$}" >"$T/storm.out" 2>&1
rc=$?
cat "$T/storm.out" | tail -n 12
check_eq "no storm client saw an error" 0 "$rc"
check "all 4000 requests were answered ok" grep -q '8 clients x 500 ops: 4000 ok, 0 errors' "$T/storm.out"
echo "storm took $(($(date +%s) - start)) s"

plugfs list --json >"$T/list1.json"
check_eq "list --json exits 0" 0 $?
tree_of_json <"$T/list1.json" >"$T/tree-json"
tree_of_mount >"$T/tree-mount"
if diff -u "$T/tree-json" "$T/tree-mount" >"$T/tree.diff"; then
	pass "list --json equals the tree under the mount ($(wc -l <"$T/tree-json") plugins)"
else
	fail "list --json differs from the mount"
	head -40 "$T/tree.diff"
fi
check "the storm left some plugins registered" test -s "$T/tree-json"
n=$(jq '[.plugins[].registrations[]] | length' "$T/list1.json")
check_eq "status counts the registrations list shows" "$n" "$(plugfs status --json | jq .registrations)"

# Every event the watcher saw is well-formed and in a sane order per plugin:
# an `active` event always names the alloc the previous one made active.
bad=$(jq -rs '
	reduce .[] as $e ({}; if $e.event == "active" then
		.[$e.type + "/" + $e.name] as $prev |
		if ($prev // null) != $e.old_alloc then .bad += 1 else . end |
		.[$e.type + "/" + $e.name] = $e.new_alloc else . end) | .bad // 0' "$T/storm-events.json")
check_eq "the active events chain (old = previous new) for every plugin" 0 "$bad"

restart_daemon
plugfs list --json >"$T/list2.json"
if cmp -s "$T/list1.json" "$T/list2.json"; then
	pass "list --json is the same after a restart"
else
	fail "list --json changed across a restart"
	diff -u "$T/list1.json" "$T/list2.json" | head -40
fi
tree_of_mount >"$T/tree-mount2"
check "the mount shows the same tree after a restart" cmp -s "$T/tree-json" "$T/tree-mount2"
kill "$watch_pid" 2>/dev/null
finish
