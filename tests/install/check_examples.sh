#!/usr/bin/env bash
# The installed examples build and run: `cmake --install` into a fresh prefix, copy
# share/doc/openndk/examples somewhere else as a user would, build them with their Makefile
# through pkg-config (PKG_CONFIG_LIBDIR: the prefix's openndk.pc and nothing else), and run
# hello against itself over loopback with the installed library and provider.
# Usage: check_examples.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
command -v pkg-config >/dev/null || { echo "SKIP: pkg-config is not installed"; exit 77; }
command -v make >/dev/null || { echo "SKIP: make is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
"$src/tests/install/build_examples.sh" "$tmp/prefix" "$tmp/examples"
echo "install: the installed examples build with their Makefile through pkg-config, and hello runs"
