#!/usr/bin/env bash
# The kit as an external project uses it: install the build tree into a temporary prefix, then
# build a driver out of tree (1) with `pkg-config --cflags --libs openndk-wdk` and (2) with CMake's
# find_package(OpenNDKWdk) + openndk_add_driver, and run both with the installed ndkdrv.
# Usage: install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
command -v pkg-config >/dev/null || { echo "SKIP: pkg-config is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name openndk-wdk.pc | head -1)")/..
[ -f "$libdir/pkgconfig/openndk-wdk.pc" ] || { echo "FAIL: openndk-wdk.pc not installed"; exit 1; }
[ -f "$tmp/prefix/include/openndk-wdk/wdm.h" ] || { echo "FAIL: kit headers not under include/openndk-wdk"; exit 1; }
[ ! -e "$tmp/prefix/include/wdm.h" ] || { echo "FAIL: a kit header shadows the system include directory"; exit 1; }
export PKG_CONFIG_PATH=$libdir/pkgconfig
export LD_LIBRARY_PATH=$libdir
drv=$src/tests/wdk/unit/trivial.c

# (1) pkg-config
cc -shared -fPIC -Wall -Werror $(pkg-config --cflags openndk-wdk) -o "$tmp/trivial_pc.so" "$drv" \
   $(pkg-config --libs openndk-wdk)
out=$("$tmp/prefix/bin/ndkdrv" run "$tmp/trivial_pc.so" 2>&1)
printf '%s\n' "$out"
grep -q "trivial_pc: trivial: unload" <<<"$out" || { echo "FAIL: the pkg-config build did not run"; exit 1; }

# (2) CMake
mkdir -p "$tmp/proj"
cp "$drv" "$tmp/proj/trivial.c"
cat > "$tmp/proj/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(kitdriver C)
find_package(OpenNDKWdk REQUIRED)
openndk_add_driver(trivial_cm trivial.c)
CM
cmake -S "$tmp/proj" -B "$tmp/proj/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/proj/build" >/dev/null
out=$("$tmp/prefix/bin/ndkdrv" run "$tmp/proj/build/trivial_cm.so" 2>&1)
printf '%s\n' "$out"
grep -q "trivial_cm: trivial: unload" <<<"$out" || { echo "FAIL: the CMake build did not run"; exit 1; }
echo "PASS: installed kit builds and runs drivers with pkg-config and with CMake"
