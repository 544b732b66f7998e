#!/usr/bin/env bash
# Hostile state files: a corpus made from one valid state file by cutting it
# at every page boundary (and to 1 and 99 bytes) and by overwriting random
# bytes of its header and of its pages (seed PLUGFS_CORPUS_SEED, printed;
# PLUGFS_CORPUS_OVERWRITES per region, default 10, 25 in the soak mode).  For each damaged file:
#
# - `plugfs state check' and `plugfs mount' agree: both refuse it or both
#   load it;
# - a refusal names the file and the problem ("state file `P': ...") and
#   the mount exits 1;
# - a file they load passes SQLite's quick_check, and the mount serves it
#   (damage in free space, or in a field no check can tell from a real
#   value: counted as "loaded, contents changed");
# - `state check' never writes the file, nor a mount that refuses it: its
#   sha256 is the same before and after, and no -wal is left.
#
# test_state_damage has the cases with their exact messages.
. "$(dirname "$0")/lib.sh"
require_fuse
command -v sqlite3 >/dev/null || die "sqlite3 is not installed"
write_config

seed=${PLUGFS_CORPUS_SEED:-$(date +%s)}
# 10 overwrites a region by default (with every cut, the corpus meets the
# header, the schema and the data pages each time; a new seed each run),
# 25 in the soak mode.
overwrites=${PLUGFS_CORPUS_OVERWRITES:-$(soak 10 25)}
RANDOM=$seed
echo "# seed $seed (PLUGFS_CORPUS_SEED=$seed reproduces this corpus)"

{
	for i in $(seq 0 59); do
		echo "register csi-node p$((i % 7)) a$i /run/csi/a$i/csi.sock 1.$i"
	done
	# Free space: registrations removed leave free pages and freeblocks.
	for i in $(seq 0 4 59); do echo "deregister csi-node p$((i % 7)) a$i"; done
} >"$T/prepare"
state_script "$T/prepare"
check "no -wal beside the prepared file" test ! -e "$STATE-wal"
cp "$STATE" "$T/good.db"
size=$(stat -c %s "$T/good.db")
page=$(sqlite3 "$T/good.db" 'PRAGMA page_size')
pages=$((size / page))
echo "# the good file: $size bytes, $pages pages of $page, $(sqlite3 "$T/good.db" 'PRAGMA freelist_count') free"
plugfs state dump >"$T/good.dump" 2>"$T/err" || die "the good file does not dump: $(cat "$T/err")"

refused=0 loaded_same=0 loaded_changed=0 cases=0
# try_mount: `plugfs mount' on $STATE, bounded: 0 when it came up and
# served (stopped again by SIGTERM), else its exit status; its output in
# $T/mount.log.
try_mount() {
	local pid rc
	"$PLUGFS_BIN" -c "$CFG" mount >"$T/mount.log" 2>&1 &
	pid=$!
	_PIDS+=("$pid")
	_poll "$pid" 30 mount_answers "$MNT"
	case $? in
	0)
		ls "$MNT/plugins/csi-node" >/dev/null || echo "the mount does not list csi-node" >>"$T/mount.log"
		kill -TERM "$pid"
		wait "$pid"
		rc=$?
		[ "$rc" -eq 0 ] || return 100
		return 0
		;;
	2) wait "$pid" ;;
	*) kill -KILL "$pid"; wait "$pid"; return 101 ;;
	esac
}

# one_case WHAT: $STATE holds a damaged file; checks it as the header says.
one_case() {
	local what=$1 sum crc mrc bad=
	cases=$((cases + 1))
	rm -f "$STATE-wal" "$STATE-shm" "$STATE-journal"
	sum=$(sha256sum <"$STATE")
	plugfs state check >"$T/out" 2>"$T/err"
	crc=$?
	[ "$(sha256sum <"$STATE")" = "$sum" ] || bad="state check wrote the file"
	try_mount
	mrc=$?
	# A mount that loads the file runs as usual (and writes it); one that
	# refuses it writes nothing.
	if [ "$mrc" -ne 0 ]; then
		[ "$(sha256sum <"$STATE")" = "$sum" ] || bad="${bad:+$bad; }a refusing mount wrote the file"
		[ ! -e "$STATE-wal" ] || bad="${bad:+$bad; }a refusing mount left a -wal"
	fi
	if [ "$crc" -eq 0 ] && [ "$mrc" -eq 0 ]; then
		sqlite3 "file:$STATE?immutable=1" 'PRAGMA quick_check' 2>&1 | grep -qx ok ||
			bad="${bad:+$bad; }loaded, but quick_check fails"
		if plugfs state dump 2>/dev/null | cmp -s - "$T/good.dump"; then
			loaded_same=$((loaded_same + 1))
		else
			loaded_changed=$((loaded_changed + 1))
		fi
	elif [ "$crc" -ne 0 ] && [ "$mrc" -eq 1 ]; then
		refused=$((refused + 1))
		grep -q "^plugfs state check: state file \`$STATE': ..." "$T/err" ||
			bad="${bad:+$bad; }check does not name the file and the problem: $(head -c 300 "$T/err")"
		grep -q "state file \`$STATE': ..." "$T/mount.log" ||
			bad="${bad:+$bad; }mount does not name the file and the problem: $(head -c 300 "$T/mount.log")"
	else
		bad="${bad:+$bad; }check exits $crc, mount $mrc: $(head -c 200 "$T/err") / $(head -c 200 "$T/mount.log")"
	fi
	if [ -n "$bad" ]; then
		fail "$what: $bad"
		cp "$STATE" "$T/failed-$cases.db"
	fi
	rm -f "$STATE-wal" "$STATE-shm"
}

# --- cut at every page boundary, and to 1 and 99 bytes ---
for n in $(seq 1 $((pages - 1))); do
	head -c $((n * page)) "$T/good.db" >"$STATE"
	one_case "cut to $n of $pages pages"
done
for n in 1 99; do
	head -c "$n" "$T/good.db" >"$STATE"
	one_case "cut to $n bytes"
done

# overwrite OFFSET LEN: LEN random bytes at OFFSET of a copy of the good file.
overwrite() {
	cp "$T/good.db" "$STATE"
	# The corpus is reproducible: bytes from $RANDOM, not /dev/urandom.
	local i
	: >"$T/bytes"
	for ((i = 0; i < $2; i++)); do printf "\\$(printf %03o $((RANDOM % 256)))" >>"$T/bytes"; done
	dd if="$T/bytes" of="$STATE" bs=1 seek="$1" conv=notrunc status=none
}
# --- random bytes in the header (the first 100 bytes) ---
for _ in $(seq "$overwrites"); do
	off=$((RANDOM % 100)) len=$((1 + RANDOM % 4))
	overwrite "$off" "$len"
	one_case "$len random byte(s) at $off (header)"
done
# --- random bytes anywhere in the pages ---
for _ in $(seq "$overwrites"); do
	off=$((100 + (RANDOM * 32768 + RANDOM) % (size - 100))) len=$((1 + RANDOM % 8))
	overwrite "$off" "$len"
	one_case "$len random byte(s) at $off (page $((off / page + 1)))"
done

[ "$_FAILED" -eq 0 ] && pass "every damaged file: check and mount agree, refusals named, nothing written"
echo "# damaged files: $cases; refused: $refused; loaded, contents as before (damage in free space): $loaded_same; loaded, contents changed (damage no check can see): $loaded_changed"
check "some damage is refused" test "$refused" -gt 0
check_eq "the good file is untouched" "$(sha256sum <"$T/good.db")" "$(cp "$T/good.db" "$STATE"; sha256sum <"$STATE")"
finish
