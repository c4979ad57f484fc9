#!/usr/bin/env bash
# check_help.sh must fail when --help gains an option the page lacks, and when the page gains one
# --help lacks; and pass on the real pair. Usage: check_help_selftest.sh CHECK TOOL PAGE
set -euo pipefail
check=$1
tool=$2
page=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$check" "$tool" "$page" -xan >/dev/null || { echo "FAIL: the real pair does not agree"; exit 1; }
# A tool whose --help lists one option more.
cat >"$tmp/tool" <<SH
#!/bin/sh
"$tool" --help
echo "  --selftest-extra  an option the page does not have"
SH
chmod +x "$tmp/tool"
if "$check" "$tmp/tool" "$page" -xan >"$tmp/out1"; then
  echo "FAIL: an option only in --help went unnoticed"; exit 1
fi
grep -q -- '--selftest-extra' "$tmp/out1" || { echo "FAIL: the report does not name the option"; cat "$tmp/out1"; exit 1; }
# A page whose OPTIONS section lists one option more.
sed 's/^\.Sh OPTIONS$/.Sh OPTIONS\n.Bl -tag -width Ds\n.It Fl \\-selftest-page\nOnly in the page.\n.El/' "$page" >"$tmp/page.1"
grep -q 'selftest-page' "$tmp/page.1" || { echo "FAIL: could not build the test page"; exit 1; }
if "$check" "$tool" "$tmp/page.1" -xan >"$tmp/out2"; then
  echo "FAIL: an option only in the page went unnoticed"; exit 1
fi
grep -q -- '--selftest-page' "$tmp/out2" || { echo "FAIL: the report does not name the option"; cat "$tmp/out2"; exit 1; }
echo "check_help.sh fails on an option missing from either side"
