#!/usr/bin/env bash
# make fuzz: builds the libFuzzer targets (wire layer and RX engine; clang, ASan+UBSan) and runs each for
# FUZZ_SECONDS, starting from the committed seeds plus the corpus earlier runs grew.
# Prints one line per target: executions, crashes, timeouts, out-of-memory, corpus size.
# Crashing inputs are kept in <build>/fuzz-runs/<target>/artifacts/; to reproduce one, run the
# target on it: <build>/tests/fuzz/fuzz_<target> <file>.
# Environment: FUZZ_SECONDS (default 60), FUZZ_TARGETS (default: all), FUZZ_BUILD
# (default build/fuzz), FUZZ_JOBS (parallel fuzzing processes per target, default 1).
# Exit status: 0 only when no target crashed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
secs=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-mpa fpdu term tx rx}
build=${FUZZ_BUILD:-$root/build/fuzz}
jobs=${FUZZ_JOBS:-1}

mkdir -p "$build"
echo "=== building fuzz targets in $build (clang, ASan+UBSan, libFuzzer)"
if ! cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
       -DNDK_SANITIZE=address,undefined -DNDK_FUZZ=on >"$build.configure.log" 2>&1 \
   || ! cmake --build "$build" -j "$(nproc)" $(for t in $targets; do printf -- '--target fuzz_%s ' "$t"; done) \
       >"$build.build.log" 2>&1; then
  tail -40 "$build.configure.log" "$build.build.log" 2>/dev/null
  echo "fuzz: build failed"
  exit 1
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
printf '%-6s %8s %12s %10s %8s %8s %6s %8s\n' target seconds executions exec/s crashes timeouts ooms corpus
total_crashes=0
for t in $targets; do
  work=$build/fuzz-runs/$t
  mkdir -p "$work/corpus" "$work/artifacts"
  log=$work/log
  start=$(date +%s)
  # Fork mode keeps fuzzing after a crash, so the crash count is a count, not "at least one".
  "$build/tests/fuzz/fuzz_$t" -fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
      -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$work/artifacts/" \
      "$work/corpus" "$root/tests/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -1)
  execs=$(sed -nE 's/^#([0-9]+):.*/\1/p' <<<"$last")
  rate=$(sed -nE 's/.*exec\/s ([0-9]+).*/\1/p' <<<"$last")
  read -r ooms tmos crashes < <(sed -nE 's/.*oom\/timeout\/crash: ([0-9]+)\/([0-9]+)\/([0-9]+).*/\1 \2 \3/p' <<<"$last")
  : "${execs:=0}" "${rate:=0}" "${ooms:=0}" "${tmos:=0}" "${crashes:=0}"
  # A crash while loading the seeds ends the run before fork mode reports: count the artifacts.
  arts=$(find "$work/artifacts" -type f -name 'crash-*' -newer "$log" 2>/dev/null | wc -l)
  if [ "$crashes" -eq 0 ] && { [ "$arts" -gt 0 ] || [ "$rc" -ne 0 ]; }; then crashes=$(( arts > 0 ? arts : 1 )); fi
  corpus=$(find "$work/corpus" -type f | wc -l)
  printf '%-6s %8s %12s %10s %8s %8s %6s %8s\n' "$t" "$took" "$execs" "$rate" "$crashes" "$tmos" "$ooms" "$corpus"
  if [ "$crashes" -gt 0 ]; then
    echo "  crashing inputs in $work/artifacts/, log $log:"
    grep -E 'FUZZ CHECK FAILED|ERROR: (Address|Undefined|libFuzzer)|runtime error' "$log" | sort | uniq -c | head -5 | sed 's/^/  /'
  fi
  total_crashes=$((total_crashes + crashes))
done
[ "$total_crashes" -eq 0 ]
