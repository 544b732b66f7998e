#!/usr/bin/env bash
# README.md's walkthrough cannot rot: contrib/walkthrough.sh runs it against a
# real daemon and mount (and checks every result it describes), and every
# `$ command' of the README's walkthrough must be one the script ran, in the
# same order, and the lines the README shows under it exactly what the
# script printed, once times, pids, the version and ls's sizes are
# normalised (norm).
. "$(dirname "$0")/lib.sh"
require_fuse
SRC=$PLUGFS_SOURCE_DIR
W=$T/walk
README=$SRC/README.md

write_config
start_daemon
PLUGFS_CONFIG=$CFG PLUGFS=$PLUGFS_BIN PLUGFS_DEMO_PLUGIN=$PLUGFS_DEMO_PLUGIN \
	WALKTHROUGH_DIR=$W bash "$SRC/contrib/walkthrough.sh" >"$T/transcript" 2>&1
rc=$?
sed 's/^/    | /' "$T/transcript"
check_eq "contrib/walkthrough.sh exits 0" 0 "$rc"
n=$(grep -c '^# ok: ' "$T/transcript")
check "the walkthrough checked its results ($n)" test "$n" -ge 11
check "the walkthrough says it cleaned up" grep -q '^# The walkthrough is done' "$T/transcript"
check "the walkthrough removed its socket directory" test ! -e "$W"
check_eq "no registration is left behind" "" "$(plugfs list --json | grep -o '"name": *"demo"')"
check "the mount still answers" test -d "$MNT/plugins/csi-node"
left=$(pgrep -f -- "--socket $W/" || true)
check_eq "no demo plugin is left running" "" "$left"

# The transcript with the paths the README uses.
sed -e "s|$W|/tmp/plugfs-walkthrough|g" -e "s|$MNT|/run/plugfs|g" \
	-e "s|$STATE|/var/lib/plugfs/state.db|g" -e "s|$CTL|/run/plugfs.sock|g" "$T/transcript" >"$T/norm"

# norm: what differs from run to run, in the README's outputs and the
# script's alike: times (ISO 8601 and ls's), the uptime, pids, the version,
# ls -l's sizes and totals; runs of blanks (ls's columns) are one.
norm() {
	sed -E -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z/TIME/g' \
		-e 's/\(up [0-9]+d [0-9]{2}:[0-9]{2}:[0-9]{2}\)/(up UPTIME)/' \
		-e 's/^plugfs [0-9][0-9.]* \(pid [0-9]+\)/plugfs VERSION (pid PID)/' \
		-e 's/^([-dlrwxst]{10}) +([0-9]+) +([^ ]+) +([^ ]+) +[0-9]+ +[A-Z][a-z]{2} +[0-9]+ +([0-9]{2}:[0-9]{2}|[0-9]{4}) /\1 \2 \3 \4 SIZE DATE /' \
		-e 's/^total [0-9]+$/total N/' -e 's/[[:space:]]+/ /g' -e 's/ $//'
}

# The README's walkthrough: `$ command' lines of its code blocks, each with the
# output lines shown under it (up to the next command or the end of the block).
awk '/^## A five-minute walkthrough/ {on = 1; next} /^## / {on = 0} on' "$README" >"$T/readme"
check "README has the walkthrough section" test -s "$T/readme"
cmds=()
outs=()
cur=-1
while IFS= read -r line; do
	if [[ $line == '    $ '* ]]; then
		cmds+=("${line#    }")
		outs+=("")
		cur=$((${#cmds[@]} - 1))
	elif [[ $line == '    '* ]] && [ "$cur" -ge 0 ]; then
		outs[cur]+="${line#    }"$'\n'
	else
		cur=-1
	fi
done <"$T/readme"
check "README's walkthrough shows commands (${#cmds[@]})" test "${#cmds[@]}" -ge 18
shown=0
for o in "${outs[@]}"; do [ -n "$o" ] && shown=$((shown + 1)); done
check "README's walkthrough shows the output of commands ($shown)" test "$shown" -ge 14

# output_of LINE: the transcript's lines after line LINE, up to the next
# command, step header or comment (`# ok: ...' checks, notes).
output_of() { awk -v from="$1" 'NR > from { if (/^(\$ |## |# )/) exit; print }' "$T/norm"; }
after=0
for i in "${!cmds[@]}"; do
	c=${cmds[i]}
	ln=$(awk -v from="$after" -v c="$c" 'NR > from && $0 == c {print NR; exit}' "$T/norm")
	if [ -z "$ln" ]; then
		fail "README command is run by the script, in order: $c"
		continue
	fi
	pass "README command is run by the script, in order: $c"
	after=$ln
	# Every line the script printed is in the README, and nothing else.
	want=$(printf '%s' "${outs[i]}" | norm)
	got=$(output_of "$ln" | sed '/^$/d' | norm)
	check_eq "README shows what \`$c' printed (normalised)" "$want" "$got"
done
# The normalisation leaves what matters: a README output that differs only
# in an alloc id, a path or a health would fail.
check_eq "norm keeps alloc ids, paths and health" \
	"7be41d55 /tmp/x/csi.sock 1.1.0 node TIME alive" \
	"$(echo "7be41d55 /tmp/x/csi.sock 1.1.0 node 2026-11-30T09:50:53Z alive" | norm)"
check_eq "norm keeps ls -l's names and targets" \
	"lrwxrwxrwx 1 root root SIZE DATE csi.sock -> /tmp/a/csi.sock" \
	"$(echo "lrwxrwxrwx 1 root root 41 Nov 30 09:50 csi.sock -> /tmp/a/csi.sock" | norm)"
stop_daemon
finish
