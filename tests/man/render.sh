#!/usr/bin/env bash
# Renders a man page as man(1) does and fails on any warning (groff's and man-db's), or on an
# empty rendering. Usage: render.sh PAGE
set -euo pipefail
page=$1
command -v man >/dev/null || { echo "SKIP: man (man-db) is not installed"; exit 77; }
command -v groff >/dev/null || { echo "SKIP: groff is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for width in 80 200; do
  LC_ALL=C.UTF-8 MANWIDTH=$width MAN_KEEP_FORMATTING= man --warnings -l "$page" >"$tmp/out" 2>"$tmp/err" || {
    echo "FAIL: man -l $page exited $?"; cat "$tmp/err"; exit 1; }
  if [ -s "$tmp/err" ]; then
    echo "FAIL: $page renders with warnings at width $width:"
    cat "$tmp/err"
    exit 1
  fi
  [ "$(wc -l <"$tmp/out")" -gt 10 ] || { echo "FAIL: $page rendered to almost nothing"; exit 1; }
done
echo "$(basename "$page"): renders without warnings ($(wc -l <"$tmp/out") lines)"
