#!/usr/bin/env bash
# Group commit: 16 clients register at once (20 registrations each, one
# connection each, every request waiting for its answer), one of them
# sending a bad registration among its good ones.  The daemon commits the
# requests of all clients waiting together (one transaction, one fsync); the
# bad one is refused alone, before it joins a group (a register is checked
# whole before anything acts on it), and holds up neither its client's
# later requests nor the others'.
# Then: every good one was acknowledged, the bad one refused with its own
# message, the watcher saw the events in commit order (seq ascending, each
# client's registrations in the order it sent them), the mean group was
# larger than one, and after a kill -9 and a restart every acknowledged
# registration is there (synchronous = full) and served through the mount.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
require_fuse
write_config "[probe]" "mode = none"
sed -i 's/^synchronous = normal$/synchronous = full/' "$CFG"
sed -i "s|^socket = $CTL\$|socket = $CTL\nmax_clients = 32|" "$CFG"
grep -q '^synchronous = full$' "$CFG" || die "the config does not say synchronous = full"
start_daemon

plugfs_bg watch --json >"$T/events.json" 2>&1 &
watch_pid=$!
_PIDS+=("$watch_pid")
wait_until 60 "the daemon counts the watcher" watchers_are 1

CLIENTS=16 PER=20 BAD_CLIENT=7 BAD_AT=10
for c in $(seq 0 $((CLIENTS - 1))); do
	: >"$T/in-$c"
	for k in $(seq 0 $((PER - 1))); do
		if [ "$c" = "$BAD_CLIENT" ] && [ "$k" = "$BAD_AT" ]; then
			# A relative socket: refused by the registry's validation,
			# inside the group of the other clients' registrations.
			printf '{"op":"register","id":"%s-%s","types":["csi-node"],"name":"g%s-%s","alloc":"a%s-%s","socket":"relative/csi.sock"}\n' \
				"$c" "$k" "$c" "$k" "$c" "$k" >>"$T/in-$c"
		else
			printf '{"op":"register","id":"%s-%s","types":["csi-node"],"name":"g%s-%s","alloc":"a%s-%s","socket":"/run/gc/%s/%s/csi.sock"}\n' \
				"$c" "$k" "$c" "$k" "$c" "$k" "$c" "$k" >>"$T/in-$c"
		fi
	done
done
groups0=$(plugfs metrics | awk '$1 == "plugfs_control_group_commits_total" {print $2}')
grouped0=$(plugfs metrics | awk '$1 == "plugfs_control_grouped_mutations_total" {print $2}')
pids=()
for c in $(seq 0 $((CLIENTS - 1))); do
	"$CTLRAW" "$CTL" 60 <"$T/in-$c" >"$T/out-$c" 2>&1 &
	pids+=($!)
	_PIDS+=($!)
done
rcs=0
for p in "${pids[@]}"; do wait "$p" || rcs=$((rcs + 1)); done
check_eq "every client got all its answers and exited 0" 0 "$rcs"
groups=$(($(plugfs metrics | awk '$1 == "plugfs_control_group_commits_total" {print $2}') - groups0))
grouped=$(($(plugfs metrics | awk '$1 == "plugfs_control_grouped_mutations_total" {print $2}') - grouped0))
echo "# $grouped mutations in $groups group commits"
check_eq "the group commits carried every good request" $((CLIENTS * PER - 1)) "$grouped"
check "the requests of several clients shared commits (fewer commits than requests)" \
	test "$groups" -lt "$grouped"

good=$((CLIENTS * PER - 1))
cat "$T"/out-* | jq -c 'select(.ok == true) | .id' | sort >"$T/acked"
check_eq "every good registration was acknowledged" "$good" "$(wc -l <"$T/acked")"
check_eq "one answer was a refusal" 1 "$(cat "$T"/out-* | jq -c 'select(.ok == false)' | wc -l)"
bad=$(jq -c 'select(.ok == false)' "$T/out-$BAD_CLIENT")
check_eq "the refusal answers the bad request" "\"$BAD_CLIENT-$BAD_AT\"" "$(jq -c .id <<<"$bad")"
check_eq "the refusal is invalid_argument" '"invalid_argument"' "$(jq -c .error.code <<<"$bad")"
check "the refusal names the field and the rule" \
	grep -q "socket \`relative/csi.sock': must be an absolute path" <<<"$(jq -r .error.message <<<"$bad")"
for c in $(seq 0 $((CLIENTS - 1))); do
	want=$PER
	[ "$c" = "$BAD_CLIENT" ] && want=$((PER - 1))
	n=$(jq -c 'select(.ok == true)' "$T/out-$c" | wc -l)
	[ "$n" = "$want" ] || fail "client $c: $n ok answers, expected $want"
done
pass "each client's good registrations were acknowledged, the bad one's client's after it too"
check "the answers of the bad client come in the order it sent its requests" \
	test "$(jq -r .id "$T/out-$BAD_CLIENT" | tr '\n' ' ')" = "$(seq 0 $((PER - 1)) | sed "s/^/$BAD_CLIENT-/" | tr '\n' ' ')"

# jq_all FILTER FILE: FILTER over the lines of FILE (slurped) is true.
jq_all() { jq -se "$1" "$2" >/dev/null; }
registered() { [ "$(jq -c 'select(.event == "registered")' "$T/events.json" | wc -l)" -ge "$good" ]; }
wait_until 60 "the watcher saw every registration" registered
jq -c 'select(.event == "registered")' "$T/events.json" >"$T/reg-events"
check_eq "one registered event per good registration" "$good" "$(wc -l <"$T/reg-events")"
check "no event of the bad registration" bash -c "! grep -q '\"g$BAD_CLIENT-$BAD_AT\"' '$T/events.json'"
check "registered events come in commit order (seq ascending)" \
	jq_all 'map(.registration.seq) | . == (sort | unique)' "$T/reg-events"
inorder=yes
for c in $(seq 0 $((CLIENTS - 1))); do
	got=$(jq -r --arg p "g$c-" 'select(.name | startswith($p)) | .name | ltrimstr($p)' "$T/reg-events" | tr '\n' ' ')
	want=$(seq 0 $((PER - 1)) | { if [ "$c" = "$BAD_CLIENT" ]; then grep -vx "$BAD_AT"; else cat; fi; } | tr '\n' ' ')
	[ "$got" = "$want" ] || { inorder=no; echo "# client $c: events $got"; }
done
check_eq "each client's registrations are events in the order it sent them" yes "$inorder"
check "every plugin's active event follows its registered event" jq_all '
	[.[] | select(.event == "registered" or .event == "active") | .event + " " + .name]
	| . as $l | [range(0; length; 2) | ($l[.] | split(" ")) as $r | ($l[. + 1] | split(" ")) as $a
	  | $r[0] == "registered" and $a[0] == "active" and $r[1] == $a[1]] | all' "$T/events.json"

# kill -9: nothing acknowledged may be lost.
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=
start_daemon
plugfs list --json >"$T/list.json"
check_eq "list --json exits 0 after kill -9 and restart" 0 $?
jq -r '.plugins[] | .name' "$T/list.json" | sort >"$T/listed"
sed 's/"//g; s/^/g/' "$T/acked" | sort >"$T/acked-names"
check "every acknowledged registration is there after kill -9 and restart, and nothing else" \
	cmp -s "$T/listed" "$T/acked-names"
served=0
while read -r name; do
	c=${name#g}
	c=${c%-*}
	k=${name##*-}
	[ "$(readlink "$MNT/plugins/csi-node/$name/csi.sock")" = "/run/gc/$c/$k/csi.sock" ] && served=$((served + 1))
done <"$T/acked-names"
check_eq "every acknowledged registration is served through the mount after the restart" "$good" "$served"
check "the bad registration is not served" test ! -e "$MNT/plugins/csi-node/g$BAD_CLIENT-$BAD_AT"

stop_daemon
check_daemon_log
finish
