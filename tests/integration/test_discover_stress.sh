#!/usr/bin/env bash
# A fuzz-like stress of the discovery: steps chosen at random under one
# [discover.s] root ($R, root's, 0755) change what its allocation
# directories hold, and after each one the test waits (15 s at most) until
# the mount, `plugfs list' and its own model of the root agree, then checks:
#   (a) every csi.sock and allocs/* of $MNT/plugins/*/* leads (its link's
#       text, read with find -printf %l, never followed through the mount)
#       to $R/<alloc>/csi.sock whose directory is a real directory of $R
#       (realpath -e, no symlink), root's and not writable by others, no
#       mount point, and whose socket is one of the pool plugins' (device
#       and inode), never the untrusted one's; the untrusted plugin's name
#       is never registered, at any time;
#   (b) `plugfs state check' passes (the daemon running; after a kill -9,
#       on the file it left);
#   (c) no thread is blocked: `plugfs status' and a statfs of the mount
#       answer within 5 s, and no task of the daemon stays in D state for
#       5 s (looked at again each second only once one is seen there).
#       They answer in milliseconds here: 5 s is a margin of 100 times and
#       more.  A hang prints each task's kernel stack, aborts this test's
#       own FUSE connection and fails.
# Three csi_plugin.py plugins (node, controller, monolith) listen outside
# the root ($T/pool); an allocation's socket is a hard link of one of
# theirs.  An untrusted area $T/evil (nobody's, 0777) holds a fourth,
# evil.example.com, run as nobody, at $T/evil/x/csi.sock.  The steps:
#   create       a new allocation directory with its socket, made in place
#                or made outside and renamed in (half and half)
#   create_bind  a new directory whose csi.sock is an empty file with a pool
#                socket bind-mounted onto it: a mount point, never served
#   rename       an allocation directory renamed in the root
#   remove       one removed: rm -rf, or renamed out of the root
#   swap         a directory exchanged (renameat2 RENAME_EXCHANGE, atomic)
#                with a symlink to $T/evil/x
#   sockswap     a socket exchanged with a symlink to the evil socket
#   evilbind     $T/evil/x bind-mounted onto a new allocation directory,
#                or onto a registered one or its socket (two in three)
#   open         an allocation directory made 0777 (not trusted)
#   own          the own mount ($MNT/plugins) bind-mounted onto a new
#                allocation directory (test_discover_own_mount's case;
#                PLUGFS_STRESS_OWN=0 leaves it out)
#   undo         one of swap, sockswap, evilbind, open, own, create_bind
#                undone (twice in a deck)
#   kill9        kill -9 of plugfs, the state file checked, a new start
#   reexec       SIGUSR2: a re-exec, whose start scans the root before the
#                new program serves
# Each bind mount left is undone on exit (on_cleanup: umount -l).  The
# steps are dealt from decks holding each kind once (undo twice), each
# deck shuffled by bash's RANDOM seeded with PLUGFS_STRESS_SEED (printed;
# the same seed deals the same steps; the timing of the daemon's answers
# may still differ).  A step whose kind finds no allocation to act on
# creates one first; one that makes a directory past 12 removes one first.  The
# probe mode is csi for an even seed, connect for an odd one.
# Counts: 2 decks (26 steps; 3 decks took 29 s alone here, ASan build, and
# 71 s beside the other tests) by default: each kind twice (a kill -9
# and a re-exec twice each) amid varied states of the others, so that
# every transition the discovery reconciles (a directory, a socket, a
# symlink, a mount point, the trust, a restart's and a re-exec's scan) is
# met more than once, and a new seed each run deals other states;
# `$(soak 2 40)' decks (520 steps) in the soak mode.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/control_lib.sh"
. "$(dirname "$0")/csi_lib.sh"
require_fuse

SEED=${PLUGFS_STRESS_SEED:-$(((${EPOCHREALTIME/[.,]/} ^ $$) % 32768))}
RANDOM=$SEED
DECKS=$(soak 2 40)
MODE=$([ $((SEED % 2)) = 0 ] && echo csi || echo connect)
echo "# seed $SEED (PLUGFS_STRESS_SEED=$SEED reproduces the steps), $DECKS decks, probe mode $MODE"

R=$T/root
mkdir -m 0755 "$R" "$T/pool" "$T/stash"
mkdir -m 0777 "$T/evil" "$T/evil/x"
chown nobody:nogroup "$T/evil" "$T/evil/x"
chmod 0777 "$T/evil" "$T/evil/x"

csi_plugin "$T/pool/p0.sock" --flavour node --name node0.example.com
csi_plugin "$T/pool/p1.sock" --flavour controller --name ctl1.example.com
csi_plugin "$T/pool/p2.sock" --flavour monolith --name mono2.example.com
PTYPES=("csi-node" "csi-controller" "csi-controller csi-node")
PNAME=(node0.example.com ctl1.example.com mono2.example.com)
# setpriv itself (as_nobody is a function: $! would be its subshell's pid).
setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$CSI_PYTHON" "$(csi_plugin_copy)" --socket "$T/evil/x/csi.sock" --flavour monolith \
	--name evil.example.com >>"$T/csi-plugin.log" 2>&1 &
_PIDS+=("$!")
wait_until --pid "$!" 30 "the untrusted plugin listens" test -S "$T/evil/x/csi.sock" || exit 1
POOL_IDS=" $(stat -c '%d:%i' "$T/pool/p0.sock" "$T/pool/p1.sock" "$T/pool/p2.sock" | xargs) "
EVIL_ID=$(stat -c '%d:%i' "$T/evil/x/csi.sock")

write_config "[discover.s]" "root = $R" "[probe]" "mode = $MODE" "interval = 0.5"
start_daemon

# exchange A B: renameat2(A, B, RENAME_EXCHANGE): A and B swap at once.
exchange() {
	"$CSI_PYTHON" -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2) != 0:
    sys.exit("renameat2 %s %s: %s" % (sys.argv[1], sys.argv[2], os.strerror(ctypes.get_errno())))' "$1" "$2"
}
# bind SRC DST: a bind mount, undone on exit (umount_left) unless unbind
# DST undid it before.
declare -A MOUNTED
bind() {
	mount --bind "$1" "$2" || die "mount --bind $1 $2"
	MOUNTED[$2]=1
}
unbind() { umount "$1" && unset "MOUNTED[$1]"; }
umount_left() {
	local m
	for m in "${!MOUNTED[@]}"; do umount -l "$m"; done
}
on_cleanup umount_left

# The model: S[alloc] is "KIND N" (N the pool plugin whose socket it holds
# underneath), ALLOCS the allocations in creation order.  KIND: link (a
# directory and its socket: served), bindsock, swapped, sockswap, evilbind,
# open, own (never served).
declare -A S
ALLOCS=()
NEXT=0
PICKED=
newname() { NEXT=$((NEXT + 1)); PICKED=a$NEXT; }
# pick KIND...: PICKED, an allocation (at random) whose kind is one of KIND,
# or empty.  Never in a command substitution: RANDOM is the main shell's.
pick() {
	local a k c=()
	for a in "${ALLOCS[@]}"; do
		for k in "$@"; do [ "${S[$a]%% *}" = "$k" ] && c+=("$a"); done
	done
	PICKED=
	[ "${#c[@]}" -gt 0 ] && PICKED=${c[RANDOM % ${#c[@]}]}
	[ -n "$PICKED" ]
}
forget() {
	local a n=()
	unset "S[$1]"
	for a in "${ALLOCS[@]}"; do [ "$a" = "$1" ] || n+=("$a"); done
	ALLOCS=("${n[@]}")
}

DESC=
do_create() {
	local p=$((RANDOM % 3)) how=$((RANDOM % 2)) a
	newname
	a=$PICKED
	if [ "$how" = 0 ]; then
		mkdir -m 0755 "$R/$a" && ln "$T/pool/p$p.sock" "$R/$a/csi.sock" || die "create $a"
		DESC="create $a (p$p) in place"
	else
		mkdir -m 0755 "$T/stash/$a.new" && ln "$T/pool/p$p.sock" "$T/stash/$a.new/csi.sock" &&
			mv "$T/stash/$a.new" "$R/$a" || die "create $a"
		DESC="create $a (p$p), renamed in"
	fi
	S[$a]="link $p"
	ALLOCS+=("$a")
}
# need KIND...: PICKED an allocation of one of KIND, created first if none.
need() {
	pick "$@" && return
	do_create
	echo "# step $STEP: nothing to act on, first $DESC"
	PICKED=${ALLOCS[-1]}
}
do_create_bind() {
	local p=$((RANDOM % 3)) a
	newname
	a=$PICKED
	mkdir -m 0755 "$R/$a" && : >"$R/$a/csi.sock" || die "create_bind $a"
	bind "$T/pool/p$p.sock" "$R/$a/csi.sock"
	S[$a]="bindsock $p"
	ALLOCS+=("$a")
	DESC="create_bind $a (p$p's socket bind-mounted onto its csi.sock)"
}
do_rename() {
	local a b
	need link open sockswap
	a=$PICKED
	newname
	b=$PICKED
	mv "$R/$a" "$R/$b" || die "rename $a $b"
	S[$b]=${S[$a]}
	forget "$a"
	ALLOCS+=("$b")
	[ "${S[$b]%% *}" = sockswap ] && { mv "$T/stash/$a.sock" "$T/stash/$b.sock" || die "stash of $a"; }
	DESC="rename $a -> $b (${S[$b]%% *})"
}
do_remove() {
	local a k how=$((RANDOM % 2))
	need link open sockswap bindsock evilbind swapped own
	a=$PICKED
	k=${S[$a]%% *}
	DESC="remove $a ($k)"
	case $k in
	bindsock) unbind "$R/$a/csi.sock" || die "umount $R/$a/csi.sock" ;;
	evilbind | own) unbind "$R/$a" || die "umount $R/$a" ;;
	swapped) rm -rf "$T/stash/$a.lnk" ;;
	esac
	if [ "$how" = 0 ]; then
		rm -rf --one-file-system "${R:?}/${a:?}" || die "rm -rf $R/$a"
		DESC+=", rm -rf"
	else
		mv "$R/$a" "$T/stash/gone.$a" || die "mv $R/$a out"
		DESC+=", renamed out of the root"
	fi
	forget "$a"
}
do_swap() {
	local a
	need link
	a=$PICKED
	ln -s "$T/evil/x" "$T/stash/$a.lnk" && exchange "$T/stash/$a.lnk" "$R/$a" || die "swap $a"
	S[$a]="swapped ${S[$a]#* }"
	DESC="swap $a: exchanged with a symlink to $T/evil/x"
}
do_sockswap() {
	local a
	need link
	a=$PICKED
	ln -s "$T/evil/x/csi.sock" "$T/stash/$a.sock" && exchange "$T/stash/$a.sock" "$R/$a/csi.sock" ||
		die "sockswap $a"
	S[$a]="sockswap ${S[$a]#* }"
	DESC="sockswap $a: its socket exchanged with a symlink to the untrusted socket"
}
# A mount sends no inotify event: the discovery follows the mount table
# (/proc/self/mountinfo), and each change has every root read again.  So a
# mount onto a registered allocation directory, or onto its socket, takes
# the registration away at once (it led a consumer through the mount to
# whatever is there: here the untrusted plugin, evil.example.com); one onto
# a new, empty directory is never entered.
do_evilbind() {
	local a p=$((RANDOM % 3))
	if [ $((RANDOM % 3)) != 0 ]; then
		need link
		a=$PICKED
		if [ $((RANDOM % 2)) = 0 ]; then
			bind "$T/evil/x" "$R/$a"
			S[$a]="evilbind ${S[$a]#* }"
			DESC="evilbind $a (registered): $T/evil/x bind-mounted onto it"
		else
			bind "$T/evil/x/csi.sock" "$R/$a/csi.sock"
			S[$a]="bindsock ${S[$a]#* }"
			DESC="evilbind $a (registered): the untrusted socket bind-mounted onto its csi.sock"
		fi
		return
	fi
	newname
	a=$PICKED
	mkdir -m 0755 "$R/$a" || die "mkdir $R/$a"
	bind "$T/evil/x" "$R/$a"
	S[$a]="evilbind $p"
	ALLOCS+=("$a")
	DESC="evilbind $a: a new directory, $T/evil/x bind-mounted onto it"
}
do_open() {
	local a
	need link
	a=$PICKED
	chmod 0777 "$R/$a" || die "chmod $R/$a"
	S[$a]="open ${S[$a]#* }"
	DESC="open $a: made 0777"
}
do_own() {
	local a p=$((RANDOM % 3))
	newname
	a=$PICKED
	mkdir -m 0755 "$R/$a" || die "mkdir $R/$a"
	bind "$MNT/plugins" "$R/$a"
	S[$a]="own $p"
	ALLOCS+=("$a")
	DESC="own $a: a new directory, $MNT/plugins bind-mounted onto it"
}
do_undo() {
	local a k p
	need swapped sockswap evilbind open bindsock own
	a=$PICKED
	k=${S[$a]%% *} p=${S[$a]#* }
	case $k in
	swapped) exchange "$T/stash/$a.lnk" "$R/$a" && rm "$T/stash/$a.lnk" ;;
	sockswap) exchange "$T/stash/$a.sock" "$R/$a/csi.sock" && rm "$T/stash/$a.sock" ;;
	evilbind | own) unbind "$R/$a" && ln -f "$T/pool/p$p.sock" "$R/$a/csi.sock" ;;
	open) chmod 0755 "$R/$a" ;;
	bindsock) unbind "$R/$a/csi.sock" && ln -f "$T/pool/p$p.sock" "$R/$a/csi.sock" ;;
	link) true ;; # need created it
	esac || die "undo $k of $a"
	S[$a]="link $p"
	DESC="undo $k of $a"
	[ "$k" = link ] && DESC="undo: nothing to undo ($a created instead)"
	# An unmount sends no inotify event either: the mount table's change
	# has the directory scanned and watched, and a socket made in it
	# afterwards is found.
}
state_ok() { plugfs state check >/dev/null; }
KILLS=0
do_kill9() {
	kill -KILL "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
	KILLS=$((KILLS + 1))
	check "kill -9 $KILLS: state check of the file it left" state_ok
	start_daemon
	DESC="kill -9 $KILLS and a new start"
}

# reexec: SIGUSR2, the daemon runs itself again on its mount (its start
# scans the root before the new program serves).  20 s: it is ready in
# about 0.6 s here.
REEXECS=0
ready_n() { grep -c 'plugfs info: ready: serving' "$DAEMON_LOG"; }
do_reexec() {
	local n
	n=$(ready_n)
	REEXECS=$((REEXECS + 1))
	DESC="re-exec $REEXECS (SIGUSR2)"
	kill -USR2 "$DAEMON_PID"
	_poll "$DAEMON_PID" 20 eval '[ "$(ready_n)" -gt "$n" ]' || hang "the re-executed program is not ready after 20 s"
}

# expected: the registrations the model says are served, "TYPE NAME ALLOC"
# sorted, one a line.
expected() {
	local a t
	for a in "${ALLOCS[@]}"; do
		[ "${S[$a]%% *}" = link ] || continue
		for t in ${PTYPES[${S[$a]#* }]}; do echo "$t ${PNAME[${S[$a]#* }]} $a"; done
	done | sort
}

# The D-state tasks of the daemon, their task directories.
dstate() {
	local f s out=
	for f in /proc/"$DAEMON_PID"/task/*/stat; do
		read -r s <"$f" 2>/dev/null || continue
		s=${s##*) }
		[ "${s%% *}" = D ] && out+="${f%/stat} "
	done
	echo "$out"
}
hang() {
	local t rc
	if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
		wait "$DAEMON_PID"
		rc=$?
		fail "step $STEP ($DESC): $1, the daemon (pid $DAEMON_PID) exited, status $rc"
		exit 1
	fi
	echo "# hang: $1 (daemon pid $DAEMON_PID)"
	for t in /proc/"$DAEMON_PID"/task/*; do
		echo "# task ${t##*/} ($(cat "$t/comm" 2>/dev/null)), state $(awk '{ print $3 }' "$t/stat" 2>/dev/null):"
		sed 's/^/#   /' "$t/stack" 2>/dev/null
	done
	abort_fuse_conn "$MNT"
	fail "step $STEP ($DESC): $1"
	exit 1
}
# answer RC: what a `timeout -s KILL 5' that failed with RC says.
answer() { if [ "$1" = 137 ]; then echo "no answer in 5 s"; else echo "exit $1:"; fi; }
# (c): no thread blocked.
unblocked() {
	local d i
	local out
	out=$(timeout -s KILL 5 "$PLUGFS_BIN" -c "$CFG" status 2>&1) || hang "plugfs status: $(answer $?) $out"
	out=$(timeout -s KILL 5 stat -f "$MNT" 2>&1) || hang "a statfs of $MNT: $(answer $?) $out"
	d=$(dstate)
	for i in 1 2 3 4 5; do
		[ -n "$d" ] || return 0
		sleep 1
		d=$(dstate)
	done
	hang "tasks in D state for 5 s: $d"
}

# verify: (a) and the agreement of the mount, the registry and the model;
# WHY says what is wrong.  EVIL is set when the untrusted plugin is
# registered (never allowed, not even for a moment).
EVIL=
verify() {
	local view list rel tgt tn a d line
	local -A mp=() act=()
	local got=() tgts=() dirs=() socks=()
	WHY=
	view=$(timeout -s KILL 5 find "$MNT/plugins" -mindepth 3 -maxdepth 4 \
		\( -name csi.sock -o -path '*/allocs/*' \) -printf '%P %l\n' 2>&1) ||
		{ WHY="find over the mount failed: $view"; return 1; }
	list=$(timeout -s KILL 5 "$PLUGFS_BIN" -c "$CFG" list --json 2>&1 | jq -r '.plugins[] | .type as $t |
		.name as $n | .registrations[] | "\($t) \($n) \(.alloc) \(.socket) \(.source)"') ||
		{ WHY="plugfs list --json failed: $list"; return 1; }
	if grep -q evil.example.com <<<"$view$list"; then
		EVIL="the untrusted plugin is registered: $(grep evil.example.com <<<"$view$list" | head -n 3 | xargs)"
		WHY=$EVIL
		return 1
	fi
	while read -r rel tgt; do
		[ -n "$rel" ] || continue
		case $rel in
		*/*/csi.sock) act[${rel%/csi.sock}]=$tgt ;;
		*/*/allocs/*)
			tn=${rel%/allocs/*} a=${rel##*/}
			got+=("${tn%%/*} ${tn#*/} $a")
			[ "$tgt" = "$R/$a/csi.sock" ] || { WHY="$rel leads to $tgt"; return 1; }
			;;
		*) WHY="unexpected entry $rel"; return 1 ;;
		esac
		case $tgt in
		"$R"/*/csi.sock) ;;
		*) WHY="$rel leads to $tgt, outside $R"; return 1 ;;
		esac
		a=${tgt#"$R"/} a=${a%/csi.sock}
		[[ -n $a && $a != */* ]] || { WHY="$rel leads to $tgt, not an allocation's socket"; return 1; }
		tgts+=("$rel")
		dirs+=("$R/$a")
		socks+=("$tgt")
	done <<<"$view"
	for tn in "${!act[@]}"; do
		a=${act[$tn]#"$R"/} a=${a%/csi.sock}
		[[ " ${got[*]} " == *" ${tn%%/*} ${tn#*/} $a "* ]] ||
			{ WHY="$tn/csi.sock leads to $a, not one of its allocs"; return 1; }
	done
	if [ "${#dirs[@]}" -gt 0 ]; then
		while read -r _ _ _ _ d _; do mp[$d]=1; done </proc/self/mountinfo
		local real types i=0
		real=$(realpath -e "${dirs[@]}" 2>&1) || { WHY="realpath -e: $real"; return 1; }
		types=$(stat -c '%n|%F|%u|%a' "${dirs[@]}" 2>&1) || { WHY="stat: $types"; return 1; }
		mapfile -t real <<<"$real"
		mapfile -t types <<<"$types"
		local ids
		ids=$(stat -c '%F|%d:%i' "${socks[@]}" 2>&1) || { WHY="stat: $ids"; return 1; }
		mapfile -t ids <<<"$ids"
		for ((i = 0; i < ${#dirs[@]}; i++)); do
			d=${dirs[i]}
			[ "${real[i]}" = "$d" ] || { WHY="${tgts[i]}: $d resolves to ${real[i]}"; return 1; }
			line=${types[i]#*|}
			[ "${line%%|*}" = directory ] || { WHY="${tgts[i]}: $d is a ${line%%|*}"; return 1; }
			line=${line#*|}
			[ "${line%%|*}" = 0 ] && ! ((8#${line#*|} & 022)) ||
				{ WHY="${tgts[i]}: $d is not trusted (uid ${line%%|*}, mode ${line#*|})"; return 1; }
			[ -z "${mp[$d]:-}" ] && [ -z "${mp[${socks[i]}]:-}" ] ||
				{ WHY="${tgts[i]}: a mount point at $d or its socket"; return 1; }
			[ "${ids[i]%%|*}" = socket ] || { WHY="${tgts[i]}: ${socks[i]} is a ${ids[i]%%|*}"; return 1; }
			[ "${ids[i]#*|}" != "$EVIL_ID" ] || { WHY="${tgts[i]}: ${socks[i]} is the untrusted socket"; return 1; }
			[[ $POOL_IDS == *" ${ids[i]#*|} "* ]] || { WHY="${tgts[i]}: ${socks[i]} is no pool socket"; return 1; }
		done
	fi
	local want have reg
	want=$(expected)
	have=$(printf '%s\n' "${got[@]}" | sed '/^$/d' | sort)
	[ "$have" = "$want" ] || { WHY="the mount serves [$(xargs <<<"$have")], the model expects [$(xargs <<<"$want")]"; return 1; }
	reg=$(awk 'NF { print $1, $2, $3 }' <<<"$list" | sort)
	[ "$reg" = "$want" ] || { WHY="plugfs list has [$(xargs <<<"$reg")], the model expects [$(xargs <<<"$want")]"; return 1; }
	while read -r _ _ a tgt line; do
		[ -n "$a" ] || continue
		[ "$tgt" = "$R/$a/csi.sock" ] && [ "$line" = discover.s ] ||
			{ WHY="plugfs list: alloc $a has socket $tgt, source $line"; return 1; }
	done <<<"$list"
	return 0
}

KINDS=(create create_bind rename remove swap sockswap evilbind open undo undo kill9 reexec)
[ "${PLUGFS_STRESS_OWN:-1}" = 1 ] && KINDS+=(own)
declare -A COUNT
STEP=0
MAXMS=0
START=$EPOCHREALTIME
for ((deck = 0; deck < DECKS; deck++)); do
	d=("${KINDS[@]}")
	for ((i = ${#d[@]} - 1; i > 0; i--)); do
		j=$((RANDOM % (i + 1)))
		k=${d[i]} d[i]=${d[j]} d[j]=$k
	done
	for k in "${d[@]}"; do
		STEP=$((STEP + 1))
		COUNT[$k]=$((${COUNT[$k]:-0} + 1))
		# At most 12 allocations: an older one goes first.
		case $k in
		create | create_bind | evilbind | own)
			if [ "${#ALLOCS[@]}" -ge 12 ]; then
				do_remove
				echo "# step $STEP: 12 allocations, first $DESC"
			fi
			;;
		esac
		"do_$k"
		t0=$EPOCHREALTIME
		unblocked
		end=$((${t0/[.,]/} + 15000000))
		until verify; do
			[ -z "$EVIL" ] || break
			[ "${EPOCHREALTIME/[.,]/}" -lt "$end" ] || break
			sleep 0.1
		done
		if [ -n "$WHY" ]; then
			unblocked
			echo "# the model: $(for a in "${ALLOCS[@]}"; do printf '%s=%s ' "$a" "${S[$a]// /:}"; done)"
			ls -l "$R" | sed 's/^/#   /'
			fail "step $STEP ($DESC): $WHY (seed $SEED)"
			exit 1
		fi
		ms=$(((${EPOCHREALTIME/[.,]/} - ${t0/[.,]/}) / 1000))
		[ "$ms" -gt "$MAXMS" ] && MAXMS=$ms
		pass "step $STEP, $DESC: settled in $ms ms, every served path safe"
		unblocked
		check "step $STEP: state check" state_ok
	done
done
secs=$(((${EPOCHREALTIME/[.,]/} - ${START/[.,]/}) / 1000000))
echo "# $STEP steps in $secs s (seed $SEED, mode $MODE): $(for k in "${!COUNT[@]}"; do printf '%s %s, ' "$k" "${COUNT[$k]}"; done)longest settle $MAXMS ms"
grep -c 'skipped' "$DAEMON_LOG" | sed 's/^/# daemon log lines saying skipped: /'
stop_daemon
finish
