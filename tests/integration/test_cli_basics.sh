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
"$PLUGFS_BIN" version extra 2>/dev/null
check_eq "extra argument to version exits 2" 2 $?
finish
