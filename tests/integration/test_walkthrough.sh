#!/usr/bin/env bash
# README.md's walkthrough cannot rot: contrib/walkthrough.sh runs it against a
# real daemon and mount (and checks every result it describes), and every
# `$ command' of the README's walkthrough must be one the script ran, in the
# same order, with the output the README shows.
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
check "the walkthrough says it cleaned up" grep -q '^The walkthrough is done' "$T/transcript"
check "the walkthrough removed its socket directory" test ! -e "$W"
check_eq "no registration is left behind" "" "$(plugfs list --json | grep -o '"name": *"demo"')"
check "the mount still answers" test -d "$MNT/plugins/csi-node"
left=$(pgrep -f -- "--socket $W/" || true)
check_eq "no demo plugin is left running" "" "$left"

# The transcript with the paths the README uses.
sed -e "s|$W|/tmp/plugfs-walkthrough|g" -e "s|$MNT|/run/plugfs|g" "$T/transcript" >"$T/norm"

# The README's walkthrough: `$ command' lines of its code blocks, each with the
# output lines shown under it.
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
		outs[cur]+=" ${line#    }"
	else
		cur=-1
	fi
done <"$T/readme"
check "README's walkthrough shows commands (${#cmds[@]})" test "${#cmds[@]}" -ge 12

# output_of LINE: the transcript's lines after line LINE, up to the next
# command, step header or check.
output_of() { awk -v from="$1" 'NR > from { if (/^(\$ |## |# ok: )/) exit; print }' "$T/norm"; }
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
	got=" $(output_of "$ln" | tr -s ' \t\n' ' ') "
	for w in ${outs[i]}; do
		if [[ $got == *" $w "* ]]; then
			pass "README output \`$w' of \`$c' is what the script printed"
		else
			fail "README output \`$w' of \`$c' is not in what the script printed: [$got]"
		fi
	done
done
stop_daemon
finish
