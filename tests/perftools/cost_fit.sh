#!/usr/bin/env bash
# tool_perf_cost_fit: bench/cost.sh's busy-polled fit (its fit function: start-up + a * round
# trips + b * CQ polls over four runs, by the normal equations) recovers a and b from counts made
# with known ones, rejects runs whose polls per round trip do not vary, and rejects a fit whose
# empty poll would cost more than the mean poll. The function is taken from cost.sh itself.
#   cost_fit.sh SOURCE_DIR
set -euo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
eval "$(sed -n '/^fit() {/,/^}/p' "$src/bench/cost.sh")"
declare -F fit >/dev/null || { echo "FAIL: no fit function in bench/cost.sh"; exit 1; }
fails=0
# expect NAME WANT: fit's output on $tmp/d must be WANT ("" for a rejected fit).
expect() {
  local got rc=0
  got=$(fit "$tmp/d" 0) || rc=$?
  if [ "$rc" != 0 ]; then got=''; fi
  if [ "$got" = "$2" ]; then echo "ok: $1: ${got:-rejected}"; else echo "FAIL: $1: got '${got:-rejected}', want '${2:-rejected}'"; fails=$((fails + 1)); fi
}
# rows: round trips, polls, instructions, the polls' inclusive instructions
gen() {
  local s=$1 a=$2 b=$3; shift 3
  while [ $# -gt 0 ]; do
    echo "$1 $2 $((s + a * $1 + b * $2)) $((600 * $2))"; shift 2
  done >"$tmp/d"
}
gen 2400000 2215 140 2000 11517 4000 13525 2000 11655 4000 4071
expect "a=2215 b=140, polls 1 to 5.8 per round trip" "2215 140.0 4.00"
gen 1000000 1800 90 2000 4000 4000 20000 2000 9000 4000 4400
expect "a=1800 b=90, other polls" "1800 90.0 3.15"
gen 1000000 1800 90 2000 4000 4000 8000 2000 4001 4000 8002
expect "the same polls per round trip in every run" ""
gen 1000000 1800 900 2000 4000 4000 20000 2000 9000 4000 4400
expect "an empty poll above the mean poll's 600" ""
[ "$fails" = 0 ] || exit 1
