#!/usr/bin/env bash
# ndkdrv's host behaviour: --wait-signal unloads on SIGTERM, --unload-after unloads after the
# time even with work pending, bad arguments exit 2.
# Usage: host.sh NDKDRV TRIVIAL.so VERIFIER_DRV.so
set -uo pipefail
ndkdrv=$1 trivial=$2 vf=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$ndkdrv" run "$trivial" --wait-signal >"$tmp/out" 2>&1 &
pid=$!
sleep 0.5
grep -q "trivial: DriverEntry" "$tmp/out" || fail "DriverEntry did not run"
grep -q "trivial: unload" "$tmp/out" && fail "unloaded before the signal"
kill -TERM "$pid"
wait "$pid"
rc=$?
cat "$tmp/out"
[ "$rc" -eq 0 ] || fail "--wait-signal: exit status $rc"
grep -q "trivial: unload" "$tmp/out" || fail "--wait-signal: no DriverUnload after SIGTERM"

# A set timer is pending work; --unload-after ends the wait anyway (and the timer is reported).
start=$(date +%s%N)
out=$("$ndkdrv" run "$vf" --param Case=timer_still_set --unload-after 0.3 2>&1)
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
printf '%s\n' "$out"
[ "$rc" -eq 1 ] || fail "--unload-after: exit status $rc"
[ "$ms" -lt 5000 ] || fail "--unload-after 0.3 took $ms ms"
grep -q "VERIFIER TIMER_STILL_SET" <<<"$out" || fail "no TIMER_STILL_SET"

"$ndkdrv" run "$trivial" --param NoEquals >/dev/null 2>&1
[ $? -eq 2 ] || fail "--param without = is not a usage error"
"$ndkdrv" run "$trivial" --param N=dword:notanumber >/dev/null 2>&1
[ $? -eq 2 ] || fail "an invalid dword: value is not a usage error"
"$ndkdrv" run "$trivial" --unload-after 1 --wait-signal >/dev/null 2>&1
[ $? -eq 2 ] || fail "--unload-after with --wait-signal is not a usage error"
echo "PASS: ndkdrv host behaviour"
