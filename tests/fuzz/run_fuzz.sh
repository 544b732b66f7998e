#!/usr/bin/env bash
# run_fuzz.sh TARGET SEEDS SECONDS: runs the libFuzzer program TARGET for
# SECONDS on a scratch copy of the seed corpus SEEDS and prints how many
# inputs it ran.  Fails when the fuzzer finds a crash, a leak, a sanitizer
# report or a timeout: the input that did it is kept in $PLUGFS_FUZZ_ARTIFACTS
# (default: the build directory), to be fixed and added to SEEDS.
set -euo pipefail
target=$1 seeds=$2 secs=$3
name=$(basename "$target")
[ -x "$target" ] || { echo "not ok - $target is missing: build it first"; exit 1; }
[ -d "$seeds" ] || { echo "not ok - no seed corpus at $seeds"; exit 1; }
work=$(mktemp -d "/tmp/plugfs-fuzz-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
art=${PLUGFS_FUZZ_ARTIFACTS:-$(dirname "$target")}/
mkdir -p "$work/corpus" "$art"
cp "$seeds"/* "$work/corpus/"
set +e
"$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=70000 \
	-print_final_stats=1 -artifact_prefix="$art$name-" "$work/corpus" >"$work/log" 2>&1
rc=$?
set -e
runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1/p' "$work/log" | tail -n 1)
if [ "$rc" -ne 0 ]; then
	# The report with a `# ' before each line, so that filtered logs (the
	# CI's keeps `N: #' lines) show what was found and where.
	grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|INITED)' "$work/log" | tail -n 60 | sed 's/^/# /'
	echo "not ok - $name: the fuzzer failed (exit $rc); the input is under $art"
	exit 1
fi
echo "# $name: ${runs:-?} executions in $secs s, corpus $(find "$work/corpus" -type f | wc -l) inputs"
if [ -z "$runs" ] || [ "$runs" -eq 0 ]; then
	echo "not ok - $name ran no input"
	exit 1
fi
echo "ok - $name: no crash in ${runs} executions"
