#!/usr/bin/env bash
# Runs a test command under NDK_FILTERS=verify and fails when the verify filter reported any
# error or warning: the check that a correct consumer (the conformance suite, ndkping, ndkperf,
# ndksmb and its transport) draws no false positive. The command's own result is kept (77 stays
# a skip). Usage: clean_run.sh COMMAND [ARGS...]
set -u
dir=$(mktemp -d /tmp/ndk-verify-clean.XXXXXX)
trap 'rm -rf "$dir"' EXIT
export NDK_FILTERS=verify NDK_VERIFY_PATH="$dir/verify.%p"
"$@"
rc=$?
[ "$rc" -eq 77 ] && exit 77
if cat "$dir"/verify.* 2>/dev/null | grep -q '^ndk-verify: \(error\|warning\) '; then
  echo "FAIL: the verify filter reported violations:"
  cat "$dir"/verify.*
  exit 1
fi
if ! cat "$dir"/verify.* 2>/dev/null | grep -q '^ndk-verify: summary'; then
  echo "FAIL: no verify summary: the filter did not run"
  exit 1
fi
echo "verify: no violations ($(cat "$dir"/verify.* | grep -c '^ndk-verify: summary') adapter close(s))"
exit "$rc"
