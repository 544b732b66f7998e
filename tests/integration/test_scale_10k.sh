#!/usr/bin/env bash
# 10,000 registrations imported with `plugfs state import': the daemon starts,
# `ls' of the type directory lists them all (once each, also while other
# plugins come and go during the listing), `plugfs list --json' parses
# whole, a register and a deregister are seen through the mount, and a
# restart serves the same tree.  Timings are the benchmark's business
# (plugfs-bench --scale), never asserted here.
. "$(dirname "$0")/lib.sh"
require_fuse
command -v jq >/dev/null || die "jq is missing (contrib/install-deps.sh installs it)"
command -v python3 >/dev/null || die "python3 is missing (contrib/install-deps.sh installs it)"
write_config "[probe]" "mode = none"

N=10000
S=$T/sockets
name() { printf 'plugin-%05d' "$1"; }
alloc() { printf 'a%05d' "$1"; }
{
	printf '{"Plugins": {"csi-node": {'
	sep=
	for ((i = 0; i < N; i++)); do
		printf -v a 'a%05d' "$i"
		printf '%s"plugin-%05d": {"Type": "node", "Version": "1.0", "AllocID": "%s", "ConnectionInfo": {"SocketPath": "%s/%s/csi.sock"}}' \
			"$sep" "$i" "$a" "$S" "$a"
		sep=', '
	done
	printf '}}}\n'
} >"$T/legacy.json"
check "state import of $N registrations" plugfs state import "$T/legacy.json"
seq -f 'plugin-%05g' 0 $((N - 1)) >"$T/expected"

start_daemon
D=$MNT/plugins/csi-node

# ls: every name once, in order once sorted; the raw readdir (ls -f) has no
# repeat.
ls "$D" >"$T/ls"
check "ls lists the $N plugins" cmp -s "$T/expected" "$T/ls"
check_eq "the raw readdir repeats no name" "" "$(ls -f "$D" | sort | uniq -d | head -3 | xargs)"
check_eq "the raw readdir has . .. and the $N" $((N + 2)) "$(ls -f "$D" | wc -l)"
check_eq "st_nlink of the type directory: 2 + $N" $((N + 2)) "$(stat -c %h "$D")"
check_eq "a plugin's csi.sock" "$S/$(alloc 4321)/csi.sock" "$(readlink "$D/$(name 4321)/csi.sock")"

# list --json parsed whole by jq.
plugfs list --json >"$T/list.json"
check_eq "list --json: $N plugins" "$N" "$(jq '.plugins | length' "$T/list.json")"
check_eq "list --json: $N registrations, one active each" "$N" \
	"$(jq '[.plugins[] | select(.active == .registrations[0].alloc)] | length' "$T/list.json")"
check_eq "list --json: the last plugin whole" "$(name $((N - 1))) $S/$(alloc $((N - 1)))/csi.sock" \
	"$(jq -r '.plugins[-1] | "\(.name) \(.registrations[0].socket)"' "$T/list.json")"

# A register and a deregister, seen through the mount.
check "register a new plugin" plugfs register --type csi-node --name extra --alloc x1 \
	--socket "$S/x1/csi.sock"
check_eq "its csi.sock through the mount" "$S/x1/csi.sock" "$(readlink "$D/extra/csi.sock")"
check_eq "ls shows $((N + 1))" $((N + 1)) "$(ls "$D" | wc -l)"
check "deregister one of the $N" plugfs deregister --type csi-node --name "$(name 77)" \
	--alloc "$(alloc 77)"
check "its directory is gone" test ! -e "$D/$(name 77)"
check_eq "ls shows $N" "$N" "$(ls "$D" | wc -l)"

# A listing in progress while plugins come and go between its reads: every
# entry that stays is listed exactly once (readdir offsets are stable).
cat >"$T/listing.py" <<'PY'
import os, subprocess, sys
d, plugfs, cfg, sockets = sys.argv[1:5]
def run(*args):
    subprocess.run([plugfs, "-c", cfg, *args], check=True, stdout=subprocess.DEVNULL)
seen, changed = [], set()
with os.scandir(d) as it:  # readdir(3): one getdents of 32 KiB at a time
    for k, e in enumerate(it):
        seen.append(e.name)
        if k % 1500 == 100:
            # Remove two plugins (listed already or not: readdir order
            # is not name order) and add two.
            for n in ("plugin-%05d" % (9000 - k // 10), "plugin-%05d" % (k // 10)):
                alloc = "a" + n[len("plugin-"):]
                run("deregister", "--type", "csi-node", "--name", n, "--alloc", alloc)
                changed.add(n)
            for j in (0, 1):
                n = "new-%d-%d" % (k, j)
                run("register", "--type", "csi-node", "--name", n, "--alloc", "n%d%d" % (k, j),
                    "--socket", "%s/n%d%d/csi.sock" % (sockets, k, j))
                changed.add(n)
dups = sorted({n for n in seen if seen.count(n) > 1}) if len(seen) != len(set(seen)) else []
stayed = [n for n in os.listdir(d) if n not in changed]
missing = sorted(set(stayed) - set(seen))
print("listed %d, changed %d, repeated %d, missing %d %s %s" %
      (len(seen), len(changed), len(dups), len(missing), dups[:3], missing[:3]))
sys.exit(1 if dups or missing or not changed else 0)
PY
out=$(python3 "$T/listing.py" "$D" "$PLUGFS_BIN" "$CFG" "$S")
rc=$?
echo "# $out"
check_eq "a listing while plugins come and go: no entry that stays skipped or repeated" 0 "$rc"
count=$(ls "$D" | wc -l)

# A restart serves the same tree.
stop_daemon
start_daemon
check_eq "after a restart: the same number of plugins" "$count" "$(ls "$D" | wc -l)"
check_eq "after a restart: the new plugin" "$S/x1/csi.sock" "$(readlink "$D/extra/csi.sock")"
check "after a restart: the deregistered one stays gone" test ! -e "$D/$(name 77)"
check_eq "after a restart: a plugin's csi.sock" "$S/$(alloc 9999)/csi.sock" \
	"$(readlink "$D/$(name 9999)/csi.sock")"
check_eq "after a restart: list --json parses whole" "$count" \
	"$(plugfs list --json | jq '.plugins | length')"
stop_daemon
finish
