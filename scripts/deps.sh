#!/usr/bin/env bash
# Installs the Debian packages a task needs (when root), or says exactly what to install.
# Usage: scripts/deps.sh build|test|fuzz|bench|interop|deb
set -euo pipefail

# rdma-core: the verbs provider builds against libibverbs/librdmacm (issue 16).
build_pkgs=(gcc make cmake pkg-config nettle-dev liburing-dev libibverbs-dev librdmacm-dev rdma-core ibverbs-providers)
# dpkg-dev, debhelper, fakeroot: tests/install builds the Debian packages and installs them into a scratch root.
test_pkgs=("${build_pkgs[@]}" samba clang libclang-rt-14-dev iproute2 tshark procps qemu-system-x86 qemu-utils cpio kmod zstd xz-utils binutils libc6-dev man-db groff-base mandoc dpkg-dev debhelper fakeroot valgrind strace)
fuzz_pkgs=("${build_pkgs[@]}" clang libclang-rt-14-dev)
bench_pkgs=("${build_pkgs[@]}" iperf3 sockperf ucx-utils libfabric-dev iproute2 util-linux strace linux-perf valgrind)
deb_pkgs=("${build_pkgs[@]}" dpkg-dev debhelper fakeroot lintian)
interop_pkgs=("${build_pkgs[@]}" qemu-system-x86 qemu-utils tshark cpio kmod zstd xz-utils binutils libc6-dev)

case "${1:-build}" in
  build) want=("${build_pkgs[@]}") ;;
  test) want=("${test_pkgs[@]}") ;;
  fuzz) want=("${fuzz_pkgs[@]}") ;;
  bench) want=("${bench_pkgs[@]}") ;;
  interop) want=("${interop_pkgs[@]}") ;;
  deb) want=("${deb_pkgs[@]}") ;;
  *) echo "usage: $0 build|test|fuzz|bench|interop|deb" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "Missing Debian packages: ${missing[*]}" >&2
  echo "Install them with:  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "Installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# One update per machine session is enough; the stamp keeps repeated runs fast.
stamp=/var/lib/apt/periodic/openndk-update-stamp
if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +360 2>/dev/null)" ]; then
  apt-get update -qq
  mkdir -p "$(dirname "$stamp")" && touch "$stamp"
fi
# tshark asks whether non-root users may capture; answer for it.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
apt-get install -y -qq --no-install-recommends "${missing[@]}"
