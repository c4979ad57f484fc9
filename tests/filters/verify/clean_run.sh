#!/usr/bin/env bash
# Runs a test command under NDK_FILTERS=verify and checks what the verify filter reported.
#   clean_run.sh COMMAND [ARGS...]                  nothing may be reported: a correct consumer
#                                                   (conformance, ndkping, ndkperf, ndksmb) draws
#                                                   no false positive
#   clean_run.sh --expect "RULE..." COMMAND [ARGS...]  a case that misuses the API on purpose (to
#                                                   test the provider's answer): exactly these
#                                                   rules, each at least once, and no other
#   clean_run.sh --trace ...                        the same with the trace filter above verify
#                                                   (NDK_FILTERS=trace,verify; the trace is dropped)
# The command's own result is kept (77 stays a skip).
set -u
expect=
filters=verify
while :; do
  case "${1:-}" in
    --expect) expect=$2; shift 2 ;;
    --trace) filters=trace,verify; export NDK_TRACE_PATH=/dev/null; shift ;;
    *) break ;;
  esac
done
dir=$(mktemp -d /tmp/ndk-verify-clean.XXXXXX)
trap 'rm -rf "$dir"' EXIT
export NDK_FILTERS=$filters NDK_VERIFY_PATH="$dir/verify.%p"
"$@"
rc=$?
[ "$rc" -eq 77 ] && exit 77
reports=$(cat "$dir"/verify.* 2>/dev/null | grep '^ndk-verify: \(error\|warning\) ' || true)
if ! cat "$dir"/verify.* 2>/dev/null | grep -q '^ndk-verify: summary'; then
  echo "FAIL: no verify summary: the filter did not run"
  exit 1
fi
fail=0
seen=$(sed -n 's/^ndk-verify: [a-z]* \([a-z-]*\) .*/\1/p' <<<"$reports" | sort -u)
for r in $seen; do
  case " $expect " in
    *" $r "*) ;;
    *) echo "FAIL: verify reported $r"; fail=1 ;;
  esac
done
for r in $expect; do
  grep -qx "$r" <<<"$seen" || { echo "FAIL: verify did not report $r"; fail=1; }
done
if [ "$fail" -ne 0 ]; then
  echo "the reports:"
  cat "$dir"/verify.*
  exit 1
fi
if [ -n "$expect" ]; then
  echo "verify reported exactly: $expect"
  grep '^ndk-verify: \(error\|warning\) ' <<<"$reports" | head -n 20
else
  echo "verify: no violations ($(cat "$dir"/verify.* | grep -c '^ndk-verify: summary') adapter close(s))"
fi
exit "$rc"
