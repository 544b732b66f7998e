#!/usr/bin/env bash
# kill -9 at random moments, then a restart: nothing acknowledged is lost.
#
# 1. Registration stream: per trial, a client (reg_stream.py) registers
#    allocs one by one on one connection and notes each `ok'; the daemon is
#    killed -9 0.1-1.5 s in.  Then `plugfs state check' passes (quick_check
#    and every row), every acknowledged alloc is in the file, each plugin's
#    list is in the order the stream registered it, and the next start
#    serves it.
# 2. Version-1 migration: a big version-1 file, the daemon killed -9 at a
#    random moment of its migration: the file checks, a start migrates or
#    serves it, every entry is served (a kill between the backup and the
#    commit leaves `state.db.v1.bak': the next start takes it as its own).
# 3. Checkpoint: a stream of big registrations grows the WAL, then SIGTERM
#    (the close checkpoints the WAL into the file) and kill -9 0-150 ms
#    later, inside that checkpoint: as in 1.
#
# Figures: trials run, acknowledged, acknowledged-but-lost.  Trials:
# PLUGFS_CRASH_TRIALS (default 6), PLUGFS_CRASH_MIGRATIONS and
# PLUGFS_CRASH_CHECKPOINTS (default 2 each); `--long' (or
# PLUGFS_CRASH_LONG=1, or the soak mode PLUGFS_SOAK=1) runs 200, 20 and 20.
. "$(dirname "$0")/lib.sh"
require_fuse
command -v sqlite3 >/dev/null || die "sqlite3 is not installed"
command -v jq >/dev/null || die "jq is not installed"

long=${PLUGFS_CRASH_LONG:-${PLUGFS_SOAK:-0}}
[ "${1:-}" = --long ] && long=1
if [ "$long" = 1 ]; then
	TRIALS=${PLUGFS_CRASH_TRIALS:-200} MIGRATIONS=${PLUGFS_CRASH_MIGRATIONS:-20}
	CHECKPOINTS=${PLUGFS_CRASH_CHECKPOINTS:-20}
else
	# 6, 2, 2: each kind of kill met more than once at a random moment;
	# the soak mode's 200, 20, 20 look for the rare ones.
	TRIALS=${PLUGFS_CRASH_TRIALS:-6} MIGRATIONS=${PLUGFS_CRASH_MIGRATIONS:-2}
	CHECKPOINTS=${PLUGFS_CRASH_CHECKPOINTS:-2}
fi
HERE=$PLUGFS_SOURCE_DIR/tests/integration
write_config "[probe]" "mode = none"
sed -i 's/^synchronous = normal$/synchronous = full/' "$CFG"
grep -qx "synchronous = full" "$CFG" || die "cannot set synchronous = full"

trials=0 acked_total=0 lost_total=0 bad_order=0
# rand_ms LO HI: a random whole number of milliseconds in [LO, HI].
rand_ms() { echo $(($1 + RANDOM % ($2 - $1 + 1))); }
sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }

# kill9 PID: SIGKILL and a bounded wait until it is gone; the dead mount is
# left to the next start (as after a real crash).
kill9() {
	local p=$1
	kill -KILL "$p" 2>/dev/null
	_poll "" 10 _gone "$p" || die "pid $p still there 10 s after SIGKILL"
	wait "$p" 2>/dev/null
	local keep=() q
	for q in "${_PIDS[@]}"; do [ "$q" = "$p" ] || keep+=("$q"); done
	_PIDS=("${keep[@]}")
}

# verify WHAT PREFIX ACKED: the file after a crash, offline.
verify() {
	local what=$1 out n
	if ! plugfs state check >"$T/check.out" 2>"$T/check.err"; then
		fail "$what: state check after the crash: $(cat "$T/check.err")"
		return
	fi
	plugfs state dump --json >"$T/dump.json" 2>"$T/dump.err" || {
		fail "$what: state dump: $(cat "$T/dump.err")"
		return
	}
	out=$(python3 "$HERE/crash_verify.py" "$T/dump.json" "$3" "$2")
	read -r _ n _ _ _ lost _ misordered _ <<<"$out"
	acked_total=$((acked_total + n))
	lost_total=$((lost_total + lost))
	bad_order=$((bad_order + misordered))
	[ "$lost" -eq 0 ] && [ "$misordered" -eq 0 ] || fail "$what: $out"
}

# --- 1. kill -9 during a registration stream ---
for t in $(seq 1 "$TRIALS"); do
	start_daemon
	python3 "$HERE/reg_stream.py" "$CTL" "s$t" "$T/acked.$t" 2>>"$T/stream.err" &
	client=$!
	sleep_ms "$(rand_ms 100 1500)"
	kill9 "$DAEMON_PID"
	_poll "" 10 _gone "$client" || { kill -KILL "$client"; fail "trial $t: the client hung"; }
	wait "$client" || fail "trial $t: the client saw an error answer: $(tail -n 1 "$T/stream.err")"
	touch "$T/acked.$t"
	verify "trial $t" "s$t" "$T/acked.$t"
	trials=$((trials + 1))
done
# served_link PREFIX ACKED: the link of the plugin of the last alloc in
# ACKED (a plugin the stream PREFIX registered), served by the mount.
served_link() {
	local a
	a=$(tail -n 1 "$2")
	[ -n "$a" ] || return 0
	test -L "$MNT/plugins/csi-node/$1p$((${a#"$1"a} % 8))/csi.sock"
}
start_daemon
check "a start after the last kill serves the stream's plugins" served_link "s$TRIALS" "$T/acked.$TRIALS"
stop_daemon

# --- 2. kill -9 during a version-1 migration ---
n_v1=3000
python3 - "$T/v1.json" "$n_v1" <<'PY'
import json, sys
n = int(sys.argv[2])
doc = {"Plugins": {"csi-node": {f"m{i}": {"AllocID": f"v{i}", "Version": "1.0",
        "ConnectionInfo": {"SocketPath": f"/run/csi/v{i}/csi.sock"}, "Options": {"zone": "a"}}
        for i in range(n)}}}
open(sys.argv[1], "w").write(json.dumps(doc))
PY
rm -f "$T/v1.db"
sqlite3 "$T/v1.db" "CREATE TABLE kv(key TEXT PRIMARY KEY, value TEXT);
	INSERT INTO kv VALUES('dynamic_plugin_registry', readfile('$T/v1.json'));
	PRAGMA user_version = 1;" || die "cannot write the version-1 file"
v1_served() { [ "$(plugfs list --json | jq '[.plugins[] | select(.name | startswith("m"))] | length')" = "$n_v1" ]; }
# How long a migration takes here, to aim the kills inside it.
rm -f "$STATE" "$STATE".v1.bak "$STATE-wal" "$STATE-shm"
cp "$T/v1.db" "$STATE"
t0=$(date +%s%3N)
start_daemon
mig_ms=$(($(date +%s%3N) - t0))
check "a migration without a kill serves every entry" v1_served
stop_daemon
echo "# a migration of $n_v1 entries takes ${mig_ms} ms to a served mount"
between=0
for t in $(seq 1 "$MIGRATIONS"); do
	rm -f "$STATE" "$STATE".v1.bak "$STATE-wal" "$STATE-shm" "$STATE-journal"
	cp "$T/v1.db" "$STATE"
	"$PLUGFS_BIN" -c "$CFG" mount >>"$DAEMON_LOG" 2>&1 &
	pid=$!
	_PIDS+=("$pid")
	sleep_ms "$(rand_ms 1 "$mig_ms")"
	kill9 "$pid"
	trials=$((trials + 1))
	plugfs state check >"$T/check.out" 2>"$T/check.err" ||
		fail "migration $t: state check after the kill: $(cat "$T/check.err")"
	version=$(sqlite3 "file:$STATE?immutable=1" 'PRAGMA user_version')
	# Killed between the backup and the commit, the file is still
	# version 1 with its backup beside it: the next start takes that
	# backup as its own (the same database) and migrates.
	[ -e "$STATE.v1.bak" ] && [ "$version" = 1 ] && between=$((between + 1))
	start_daemon
	check "migration $t (killed at user_version $version): every entry is served" v1_served
	stop_daemon
done

echo "# migrations killed: $MIGRATIONS, $between of them between the backup and the commit"

# --- 3. kill -9 inside the checkpoint of a big WAL ---
for t in $(seq 1 "$CHECKPOINTS"); do
	start_daemon
	python3 "$HERE/reg_stream.py" "$CTL" "c$t" "$T/acked.c$t" BIG 2>>"$T/stream.err" &
	client=$!
	sleep_ms "$(rand_ms 1500 2500)"
	wal=$(stat -c %s "$STATE-wal" 2>/dev/null || echo 0)
	kill -TERM "$DAEMON_PID"
	sleep_ms "$(rand_ms 0 150)"
	kill9 "$DAEMON_PID"
	_poll "" 10 _gone "$client" || { kill -KILL "$client"; fail "checkpoint $t: the client hung"; }
	wait "$client" || fail "checkpoint $t: the client saw an error answer: $(tail -n 1 "$T/stream.err")"
	touch "$T/acked.c$t"
	echo "# checkpoint $t: -wal of $wal bytes at SIGTERM, $(wc -l <"$T/acked.c$t") acknowledged"
	verify "checkpoint $t" "c$t" "$T/acked.c$t"
	trials=$((trials + 1))
done
start_daemon
check "a start after the checkpoint kills serves the stream's plugins" served_link "c$CHECKPOINTS" "$T/acked.c$CHECKPOINTS"
stop_daemon

echo "# trials run: $trials; acknowledged: $acked_total; acknowledged-but-lost: $lost_total; plugins out of order: $bad_order"
check_eq "acknowledged-but-lost" 0 "$lost_total"
check "registrations were acknowledged before the kills" test "$acked_total" -gt 0
finish
