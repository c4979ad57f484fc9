#!/usr/bin/env bash
# Shared by check_examples.sh and check_deb.sh: given an installed tree (PREFIX: the directory
# holding include/, lib/, share/), copies its examples to WORKDIR, builds them with the installed
# Makefile through pkg-config - seeing only PREFIX's openndk.pc - and runs hello against itself
# over 127.0.0.1 with PREFIX's libndk and providers. Fails when any of those files is missing.
# Usage: build_examples.sh PREFIX WORKDIR
set -euo pipefail
prefix=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
ex=$prefix/share/doc/openndk/examples
[ -f "$ex/Makefile" ] || { echo "FAIL: no examples Makefile in $ex"; exit 1; }
pc=$(find "$prefix" -name openndk.pc -path '*/pkgconfig/*' | head -1)
[ -n "$pc" ] || { echo "FAIL: openndk.pc is not installed under $prefix"; exit 1; }
export PKG_CONFIG_LIBDIR
PKG_CONFIG_LIBDIR=$(dirname "$pc")
mkdir -p "$work"
cp -r "$ex/." "$work/"
if ! make -C "$work" >"$work/make.log" 2>&1; then
  cat "$work/make.log"; echo "FAIL: the installed examples do not build with their Makefile"; exit 1
fi
for e in hello rdma-write read-server srq-server teardown; do
  if [ -f "$work/$e/$e.c" ] && [ ! -x "$work/$e/$e" ]; then
    echo "FAIL: the Makefile did not build $e"; exit 1
  fi
done
# The kit's driver example builds through its own Makefile line where the kit is installed.
if [ -f "$work/driver/Makefile" ] && pkg-config --exists openndk-wdk; then
  if ! make -C "$work" driver >"$work/make-driver.log" 2>&1; then
    cat "$work/make-driver.log"; echo "FAIL: the installed driver example does not build with 'make driver'"; exit 1
  fi
  echo "the driver example builds against the installed kit"
fi
libdir=$(pkg-config --variable=libdir openndk)
providerdir=$(pkg-config --variable=providerdir openndk)
[ -e "$providerdir/ndk-iwarp.so" ] || { echo "FAIL: no iwarp provider in $providerdir"; exit 1; }
LD_LIBRARY_PATH=$libdir NDK_PROVIDER_PATH=$providerdir NDK_CONFIG=/nonexistent \
  "$here/../examples/run.sh" "$work/hello" hello ipv4
