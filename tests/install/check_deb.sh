#!/usr/bin/env bash
# The Debian packages work: build them (scripts/deb.sh, from a copy of the tree), install them
# with `dpkg -i` into a scratch root with its own dpkg database - never into this system - then
# build the installed examples against the installed files through pkg-config and run hello over
# loopback with the installed libndk and provider, and run the installed ndkinfo. A package that
# misses a file the example needs (header, libndk.so, openndk.pc, provider, example source)
# fails the test.
# Usage: check_deb.sh SOURCE_DIR
# Environment: NDK_DEB_DIR=<dir with freshly built .debs> skips the package build.
set -euo pipefail
src=$1
for tool in dpkg-buildpackage dh fakeroot dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is missing (scripts/deps.sh deb installs it)"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

debs=${NDK_DEB_DIR:-}
if [ -z "$debs" ]; then
  debs=$tmp/deb
  # Lintian runs in `make deb`; here only whether the packages install and work matters.
  JOBS=${JOBS:-2} NDK_DEB_LINTIAN=0 "$src/scripts/deb.sh" "$debs" >"$tmp/deb.log" 2>&1 ||
    { cat "$tmp/deb.log"; echo "FAIL: building the packages failed"; exit 1; }
fi
for p in libndk1 ndk-providers openndk-tools libndk-dev; do
  ls "$debs/${p}_"*.deb >/dev/null 2>&1 || { echo "FAIL: package $p was not built"; exit 1; }
done
for deb in "$debs"/*.deb; do
  # A maintainer script would run chrooted into the scratch root, where there is no shell.
  if dpkg-deb --ctrl-tarfile "$deb" | tar -t | grep -Eq '(pre|post)(inst|rm)$'; then
    echo "FAIL: $(basename "$deb") has maintainer scripts; this test cannot install it into a scratch root"; exit 1
  fi
done

# A scratch root with an empty dpkg database. The packages' dependencies (libc6, liburing2,
# rdma-core's libraries) are this system's, so they are not in that database: --force-depends.
root=$tmp/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
if ! dpkg --root="$root" --force-depends --force-not-root -i "$debs"/*.deb >"$tmp/dpkg.log" 2>&1; then
  cat "$tmp/dpkg.log"; echo "FAIL: dpkg -i into the scratch root failed"; exit 1
fi
installed=$(dpkg --root="$root" -l | awk '/^ii/ {print $2}' | tr '\n' ' ')
echo "installed into the scratch root: $installed"

"$src/tests/install/build_examples.sh" "$root/usr" "$tmp/examples"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
LD_LIBRARY_PATH=$root/usr/lib/$multiarch NDK_PROVIDER_PATH=$root/usr/lib/$multiarch/openndk/providers \
  NDK_CONFIG=/nonexistent "$root/usr/bin/ndkinfo" --adapter lo | grep -q 'iwarp on lo' ||
  { echo "FAIL: the packaged ndkinfo does not show iwarp on lo"; exit 1; }
echo "deb: the packages install with dpkg -i, the examples build against them, hello and ndkinfo run"
