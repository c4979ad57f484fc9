#!/usr/bin/env bash
# A provider's configuration keys (what its sources read through the call READER, by default the
# iwarp provider's iw_cfg_u32/iw_cfg_str) are the keys its page documents in its CONFIGURATION
# section, no more and no fewer. With NONE=none a provider may read no key at all, and then its
# page must document none.
# Usage: check_keys.sh PROVIDER_SOURCE_DIR PAGE [READER_REGEX [none]]
set -euo pipefail
src=$1
page=$2
reader=${3:-'iw_cfg_(u32|str)'}
none_ok=${4:-}
in_src=$(grep -rhoP --include='*.c' "$reader"'\([^,]+, "\K[a-z0-9_]+' "$src" | sort -u || true)
in_page=$(awk '/^\.Sh / { keep = ($2 == "CONFIGURATION"); next }
               keep && /^\.It Cm / { print $3 }' "$page" | sort -u)
if [ -z "$in_src" ] && [ "$none_ok" = none ]; then
	[ -z "$in_page" ] || { echo "FAIL: the provider reads no key, but $(basename "$page") documents:" $in_page; exit 1; }
	grep -q 'reads no configuration keys' "$page" || { echo "FAIL: $(basename "$page") does not say that the provider reads no keys"; exit 1; }
	echo "the provider reads no configuration key and $(basename "$page") documents none"
	exit 0
fi
[ -n "$in_src" ] || { echo "FAIL: found no configuration keys in $src"; exit 1; }
only_src=$(comm -23 <(echo "$in_src") <(echo "$in_page"))
only_page=$(comm -13 <(echo "$in_src") <(echo "$in_page"))
rc=0
[ -z "$only_src" ] || { echo "FAIL: read by the provider but not in $(basename "$page"):" $only_src; rc=1; }
[ -z "$only_page" ] || { echo "FAIL: in $(basename "$page") but not read by the provider:" $only_page; rc=1; }
[ $rc -eq 0 ] && echo "provider and $(basename "$page") agree on the keys:" $in_src
exit $rc
