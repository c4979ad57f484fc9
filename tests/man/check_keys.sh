#!/usr/bin/env bash
# The iwarp provider's configuration keys (what its sources read with iw_cfg_u32/iw_cfg_str) are
# the keys ndk-iwarp(7) documents in its CONFIGURATION section, no more and no fewer.
# Usage: check_keys.sh PROVIDER_SOURCE_DIR PAGE
set -euo pipefail
src=$1
page=$2
in_src=$(grep -rhoP --include='*.c' 'iw_cfg_(u32|str)\([^,]+, "\K[a-z0-9_]+' "$src" | sort -u)
in_page=$(awk '/^\.Sh / { keep = ($2 == "CONFIGURATION"); next }
               keep && /^\.It Cm / { print $3 }' "$page" | sort -u)
[ -n "$in_src" ] || { echo "FAIL: found no configuration keys in $src"; exit 1; }
only_src=$(comm -23 <(echo "$in_src") <(echo "$in_page"))
only_page=$(comm -13 <(echo "$in_src") <(echo "$in_page"))
rc=0
[ -z "$only_src" ] || { echo "FAIL: read by the provider but not in $(basename "$page"):" $only_src; rc=1; }
[ -z "$only_page" ] || { echo "FAIL: in $(basename "$page") but not read by the provider:" $only_page; rc=1; }
[ $rc -eq 0 ] && echo "provider and $(basename "$page") agree on the keys:" $in_src
exit $rc
