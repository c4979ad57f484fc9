#!/usr/bin/env bash
# Builds OpenNDK's Debian binary packages (debian/) with dpkg-buildpackage, from a copy of the
# tree so that the working tree stays clean, and checks them with lintian.
# Usage: scripts/deb.sh [OUTDIR]          (default: build/deb)
# Result: OUTDIR/*.deb, *.changes, *.buildinfo; then, as a Debian user:
#   sudo apt install ./build/deb/*.deb
# Environment: JOBS (parallel build jobs, default nproc), NDK_DEB_LINTIAN=0 to skip lintian.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/deb}
for tool in dpkg-buildpackage dh fakeroot; do
  command -v "$tool" >/dev/null || { echo "deb: $tool is missing; run scripts/deps.sh deb (as root) first" >&2; exit 1; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
version=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
src=$out/openndk-$version

# dpkg-buildpackage writes its results next to the source directory: a fresh copy in OUTDIR,
# without build trees, VCS data or old results.
rm -rf "$src"
rm -f "$out"/*.deb "$out"/*.ddeb "$out"/*.changes "$out"/*.buildinfo
mkdir -p "$src"
tar -C "$root" --exclude=./build --exclude=./.git --exclude='./obj-*' --exclude=./debian/.debhelper \
    --exclude=./debian/tmp -cf - . | tar -C "$src" -xf -

# The WDK kit's packages (debian/control.wdk) join once the kit has install rules.
if grep -qs '^install(' "$src/src/wdk/CMakeLists.txt"; then
  cat "$root/debian/control.wdk" >>"$src/debian/control"
fi

start=$(date +%s)
echo "deb: building openndk $version in $src (log: $out/build.log)"
if ! (cd "$src" && DEB_BUILD_OPTIONS="parallel=${JOBS:-$(nproc)} nocheck noddebs" \
        dpkg-buildpackage -b -uc -us --no-sign) >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log" >&2
  echo "deb: dpkg-buildpackage failed (full log: $out/build.log)" >&2
  exit 1
fi
rm -rf "$src"
echo "deb: built in $(( $(date +%s) - start )) s:"
ls -1 "$out"/*.deb | sed 's|^|  |'

if [ "${NDK_DEB_LINTIAN:-1}" != 0 ] && command -v lintian >/dev/null; then
  # Errors fail the build; warnings are shown.
  if ! lintian --fail-on error \
       "$out"/*.changes >"$out/lintian.log" 2>&1; then
    cat "$out/lintian.log" >&2
    echo "deb: lintian reports errors" >&2
    exit 1
  fi
  echo "deb: lintian: no errors ($(grep -c '^W:' "$out/lintian.log" || true) warnings, see $out/lintian.log)"
fi
echo "deb: install with: sudo apt install $out/*.deb"
