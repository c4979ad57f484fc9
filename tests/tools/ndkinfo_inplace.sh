#!/bin/sh
# ndkinfo run from the build tree without NDK_PROVIDER_PATH finds the providers built beside its
# libndk; with a provider path that holds none it names the path it searched.
set -u
ndkinfo=$1 provdir=$2
out=$(env -u NDK_PROVIDER_PATH NDK_CONFIG=/nonexistent/openndk.conf "$ndkinfo" 2>&1)
echo "$out" | grep -q "iwarp .*loaded .*($provdir/ndk-iwarp.so)" || {
  echo "FAIL: ndkinfo from the build tree did not load $provdir/ndk-iwarp.so by itself:"; echo "$out"; exit 1; }
out=$(NDK_PROVIDER_PATH=/nonexistent-ndk-providers NDK_CONFIG=/nonexistent/openndk.conf "$ndkinfo" 2>&1)
echo "$out" | grep -q "Providers: none found" && echo "$out" | grep -q "ndk warning: runtime: .*'/nonexistent-ndk-providers'" || {
  echo "FAIL: with no providers ndkinfo does not say which path was searched:"; echo "$out"; exit 1; }
echo "ndkinfo: finds the build tree's providers in place; names the searched path when there are none"
