#!/usr/bin/env bash
# Builds and runs the whole suite in every configuration CI checks: gcc, clang with ASan+UBSan
# and clang with TSan (-Werror everywhere; a plain "clang" configuration is also available).
# Prints one line per configuration and a closing "N passed, N failed, N skipped" line.
# Exit status: 0 only when nothing failed.
# Environment: NDK_TEST_CONFIGS (default "gcc asan tsan"), NDK_TEST_REGEX (ctest -R filter),
# NDK_BUILD_ROOT (default build/test), JOBS.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_root=${NDK_BUILD_ROOT:-$root/build/test}
jobs=${JOBS:-$(nproc)}
configs=${NDK_TEST_CONFIGS:-gcc asan tsan}
total_pass=0 total_fail=0 total_skip=0
failed_configs=()
summary=()

for cfg in $configs; do
  case $cfg in
    gcc)   cc=gcc;   san= ;;
    clang) cc=clang; san= ;;
    asan)  cc=clang; san=address,undefined ;;
    tsan)  cc=clang; san=thread ;;
    *) echo "unknown configuration $cfg" >&2; exit 2 ;;
  esac
  dir=$build_root/$cfg
  mkdir -p "$build_root"
  echo "=== [$cfg] configure and build ($cc${san:+, -fsanitize=$san})"
  if ! cmake -S "$root" -B "$dir" -DCMAKE_C_COMPILER=$cc -DCMAKE_BUILD_TYPE=RelWithDebInfo \
         -DNDK_SANITIZE="$san" >"$dir.configure.log" 2>&1 \
     || ! cmake --build "$dir" -j "$jobs" >"$dir.build.log" 2>&1; then
    cat "$dir.configure.log" "$dir.build.log" 2>/dev/null | tail -60
    echo "[$cfg] BUILD FAILED"
    failed_configs+=("$cfg(build)")
    total_fail=$((total_fail + 1))
    continue
  fi
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
  # Sanitizer runs keep provider modules mapped so reports can name their frames.
  if [ -n "$san" ]; then export NDK_NO_DLCLOSE=1; else unset NDK_NO_DLCLOSE; fi
  log=$dir.ctest.log
  (cd "$dir" && ctest --output-on-failure -j "$jobs" ${NDK_TEST_REGEX:+-R "$NDK_TEST_REGEX"}) >"$log" 2>&1
  rc=$?
  pass=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* +Passed' "$log")
  skip=$(grep -cE '\*\*\*Skipped' "$log")
  fail=$(grep -cE '\*\*\*(Failed|Timeout|Exception)|\*\*\*Not Run' "$log")
  grep -E '\*\*\*Skipped' "$log" | sed 's/^/  skipped: /'
  grep -hE '^(SKIP|SKIPPED): ' "$log" | sort | uniq -c | sed 's/^/  /'
  if [ $rc -ne 0 ] || [ "$fail" -gt 0 ]; then
    grep -E '\*\*\*(Failed|Timeout|Exception|Not Run)' "$log" | sed 's/^/  FAILED: /'
    sed -n '/The following tests FAILED/,$p' "$log"
    # ctest prints a failing test's output right after its result line; show each block (its
    # last 300 lines), since a test that failed early is far from the log's tail.
    echo "--- [$cfg] output of failing tests:"
    awk 'function flush(i) { for (i = (n > 300 ? n - 300 : 0); i < n; i++) print buf[i % 300]; n = 0 }
         on && (/^ *[0-9]+\/[0-9]+ Test +#/ || /^ +Start +[0-9]+: / || /^[0-9]+% tests passed/) { flush(); on = 0 }
         /\*\*\*(Failed|Timeout|Exception)/ { on = 1; n = 0 }
         on { buf[n++ % 300] = $0 }
         END { if (on) flush() }' "$log"
    failed_configs+=("$cfg")
    [ "$fail" -eq 0 ] && fail=1
  fi
  summary+=("[$cfg] $pass passed, $fail failed, $skip skipped")
  echo "${summary[-1]}"
  total_pass=$((total_pass + pass)); total_fail=$((total_fail + fail)); total_skip=$((total_skip + skip))
done

echo "=== summary"
printf '%s\n' "${summary[@]}"
[ ${#failed_configs[@]} -gt 0 ] && echo "failed configurations: ${failed_configs[*]}"
echo "total: $total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
