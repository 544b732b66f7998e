#!/usr/bin/env bash
# The plugfs program itself: version, help, usage errors.
. "$(dirname "$0")/lib.sh"

out=$("$PLUGFS_BIN" version)
check_eq "plugfs version exits 0" 0 $?
check "plugfs version prints a version" grep -Eq '^plugfs [0-9]+\.[0-9]+\.[0-9]+$' <<<"$out"
check "plugfs --help lists version" bash -c "'$PLUGFS_BIN' --help | grep -q '^  version '"
"$PLUGFS_BIN" no-such-command 2>"$T/err"
check_eq "unknown command exits 2" 2 $?
check "unknown command is named" grep -q "unknown command \`no-such-command'" "$T/err"
"$PLUGFS_BIN" regsiter 2>"$T/err"
check_eq "a mistyped command exits 2" 2 $?
check "a mistyped command gets a suggestion" grep -qF "unknown command \`regsiter'; did you mean \`register'?" "$T/err"
"$PLUGFS_BIN" stauts 2>"$T/err"
check "a swapped pair of letters is a typo too" grep -qF "did you mean \`status'?" "$T/err"
"$PLUGFS_BIN" xyz 2>"$T/err"
check "a word like no command gets no suggestion" bash -c "! grep -q 'did you mean' '$T/err'"
for v in -V --version; do
	check_eq "plugfs $v prints the version" "$out" "$("$PLUGFS_BIN" "$v")"
done
check_eq "plugfs version --json" "$(sed 's/^plugfs //' <<<"$out")" "$("$PLUGFS_BIN" version --json | jq -r .version)"
"$PLUGFS_BIN" version extra 2>/dev/null
check_eq "extra argument to version exits 2" 2 $?
# -c FILE before the command is passed on to every command, version too.
write_config
out=$("$PLUGFS_BIN" -c "$CFG" version)
check_eq "plugfs -c FILE version exits 0" 0 $?
check "plugfs -c FILE version prints the version" grep -Eq '^plugfs [0-9]+\.[0-9]+\.[0-9]+$' <<<"$out"

# Output that cannot be written is an error (exit 1, said on stderr), help too.
for args in "version" "--help" "state --help" "state dump --help" "mount --help" "list --help"; do
	# shellcheck disable=SC2086
	"$PLUGFS_BIN" $args >/dev/full 2>"$T/err"
	check_eq "plugfs $args >/dev/full exits 1" 1 $?
	check "plugfs $args >/dev/full says why" grep -q "cannot write the output" "$T/err"
done
finish
