#!/usr/bin/env bash
# The main demo. Today: the runtime's view of this machine (providers, adapters, addresses,
# NDK limits) as ndkinfo shows it, from the build tree.
set -euo pipefail
build=${1:-build/release}
export NDK_PROVIDER_PATH=${NDK_PROVIDER_PATH:-$build/providers}
echo "== ndkinfo: NDK providers and adapters on this machine"
"$build/tools/ndkinfo/ndkinfo"
