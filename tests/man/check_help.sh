#!/usr/bin/env bash
# Every option a tool's --help lists is in its man page's SYNOPSIS or OPTIONS (as an mdoc Fl
# macro), and every option those sections give is in --help.
# Usage: check_help.sh TOOL PAGE [IGNORE...]
#   IGNORE: words of --help that look like options but are not the tool's (e.g. "netstat -xan").
# --help and -h themselves are left out on both sides (not every tool lists them).
set -euo pipefail
tool=$1
page=$2
shift 2
ignore=" --help -h $* "

# A dash-word of --help: - or -- then a letter, not glued to a preceding word ("ping-pong",
# "rdma-core"); "-q/-t" gives both.
help=$("$tool" --help 2>&1 || true)
if ! grep -qi 'usage' <<<"$help"; then
  echo "FAIL: $tool --help printed no usage:"
  printf '%s\n' "$help"
  exit 1
fi
from_help=$(grep -oP '(?<![A-Za-z0-9_])--?[A-Za-z][A-Za-z0-9_-]*' <<<"$help" | sed 's/-*$//' | sort -u)

# The flags of the page's SYNOPSIS and OPTIONS sections: every word after an Fl macro until the
# next macro name or punctuation ("Fl \-provider Ar name" gives --provider).
from_page=$(awk '
  /^\.Sh / { keep = ($2 == "SYNOPSIS" || $2 == "OPTIONS"); next }
  keep && /^\./ {
    n = split(substr($0, 2), w, /[ \t]+/)
    for (i = 1; i <= n; i++) {
      if (w[i] != "Fl") continue
      for (j = i + 1; j <= n; j++) {
        if (w[j] ~ /^[A-Z][a-z][a-z]?$/ || w[j] ~ /^[|,;:.()\[\]]+$/ || w[j] == "") break
        f = w[j]; gsub(/\\-/, "-", f); gsub(/\\&/, "", f); sub(/[,;:.)]+$/, "", f)
        print "-" f
      }
    }
  }' "$page" | sort -u)

drop() { while read -r o; do case "$ignore" in *" $o "*) ;; *) echo "$o" ;; esac; done; }
from_help=$(drop <<<"$from_help")
from_page=$(drop <<<"$from_page")
[ -n "$from_help" ] || { echo "FAIL: no options found in $tool --help"; exit 1; }

only_help=$(comm -23 <(echo "$from_help") <(echo "$from_page"))
only_page=$(comm -13 <(echo "$from_help") <(echo "$from_page"))
rc=0
if [ -n "$only_help" ]; then
  echo "FAIL: in $(basename "$tool") --help but not in $(basename "$page") SYNOPSIS/OPTIONS:" $only_help
  rc=1
fi
if [ -n "$only_page" ]; then
  echo "FAIL: in $(basename "$page") SYNOPSIS/OPTIONS but not in $(basename "$tool") --help:" $only_page
  rc=1
fi
[ $rc -eq 0 ] && echo "$(basename "$tool") --help and $(basename "$page") agree on:" $from_help
exit $rc
