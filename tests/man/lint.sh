#!/usr/bin/env bash
# mandoc's mdoc checker, stricter than groff (empty macros, bad nesting, misplaced sections):
# any warning or error fails. Usage: lint.sh PAGE
set -euo pipefail
page=$1
command -v mandoc >/dev/null || { echo "SKIP: mandoc is not installed"; exit 77; }
if ! out=$(mandoc -Tlint -Wwarning "$page" 2>&1) || [ -n "$out" ]; then
  echo "FAIL: mandoc -Tlint finds problems in $page:"
  printf '%s\n' "$out"
  exit 1
fi
echo "$(basename "$page"): mandoc -Tlint clean"
