#!/usr/bin/env bash
# Runs a driver under ndkdrv and checks both its exit status and that its output matches.
# Usage: expect.sh RC REGEX [NOTREGEX|-] -- ndkdrv run DRIVER.so [ARGS...]
#   RC: the exit status ndkdrv must return ("nonzero" accepts any failure status).
set -uo pipefail
want_rc=$1 regex=$2 notregex=$3
shift 3
[ "$1" = "--" ] && shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
fail=0
if [ "$want_rc" = nonzero ]; then
  [ "$rc" -ne 0 ] || { echo "FAIL: exit status 0, expected a failure"; fail=1; }
elif [ "$rc" -ne "$want_rc" ]; then
  echo "FAIL: exit status $rc, expected $want_rc"
  fail=1
fi
if ! grep -qE -- "$regex" <<<"$out"; then
  echo "FAIL: no line matches: $regex"
  fail=1
fi
if [ "$notregex" != - ] && grep -qE -- "$notregex" <<<"$out"; then
  echo "FAIL: a line matches what must not appear: $notregex"
  fail=1
fi
exit $fail
