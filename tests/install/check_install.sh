#!/usr/bin/env bash
# make install end to end: install the build tree into a fresh prefix, check that headers,
# libndk, the iwarp provider, the tools and openndk.pc are there, build a consumer of the runtime
# with `pkg-config openndk` alone, and run it and ndkinfo from the installed tree; the man pages
# are installed where man(1) finds them, with this build's paths filled in.
set -euo pipefail
build=$1
src=$2
command -v pkg-config >/dev/null || { echo "SKIP: pkg-config is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
p=$tmp/prefix
pc=$(find "$p" -name openndk.pc | head -1)
for f in include/ndkpi.h include/ndkinfo.h include/ndisndk.h include/ndk/nt.h include/ndk/runtime.h \
         include/ndk/provider.h bin/ndkinfo bin/ndkping bin/ndkperf; do
  [ -e "$p/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
[ -n "$pc" ] || { echo "FAIL: openndk.pc not installed"; exit 1; }
for f in man1/ndkinfo.1 man1/ndkping.1 man1/ndkperf.1 man1/ndkconform.1 man3/libndk.3 man5/openndk.conf.5 \
         man7/ndk-iwarp.7 man7/ndk-verbs.7; do
  [ -s "$p/share/man/$f" ] || { echo "FAIL: man page $f not installed in share/man"; exit 1; }
  if grep -q '@[A-Z_]*@' "$p/share/man/$f"; then
    echo "FAIL: $f has an unconfigured @VARIABLE@"; exit 1
  fi
done
if command -v man >/dev/null; then
  MANPATH=$p/share/man man -w ndk-iwarp >/dev/null || { echo "FAIL: man does not find ndk-iwarp(7) in the prefix"; exit 1; }
  # The page names the compiled-in path (set at configure time), as the runtime uses it.
  MANPATH=$p/share/man man 5 openndk.conf | grep '/etc/openndk\.conf' >/dev/null ||
    { echo "FAIL: openndk.conf(5) does not name the config file"; exit 1; }
fi
export PKG_CONFIG_PATH=$(dirname "$pc")
provdir=$(pkg-config --variable=providerdir openndk)
[ -e "$provdir/ndk-iwarp.so" ] || { echo "FAIL: no provider in $provdir"; exit 1; }
libdir=$(pkg-config --variable=libdir openndk)
cat >"$tmp/consumer.c" <<'C'
#include <ndkpi.h>
#include <ndk/runtime.h>
#include <arpa/inet.h>
#include <stdio.h>
int main(void)
{
    ndk_rt *rt;
    if (ndk_rt_open(NULL, &rt) != STATUS_SUCCESS)
        return 1;
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    ndk_rt_adapter_id id;
    NDK_ADAPTER *a;
    if (ndk_rt_find_adapter_by_address(rt, (struct sockaddr *)&sin, "iwarp", &id) != STATUS_SUCCESS ||
        ndk_rt_open_adapter(rt, id, (NDK_VERSION){ 2, 1 }, &a) != STATUS_SUCCESS)
        return 2;
    NDK_ADAPTER_INFO info;
    ULONG size = sizeof info;
    NTSTATUS st = a->Dispatch->NdkQueryAdapterInfo(a, &info, &size);
    printf("installed consumer: %s, NDKPI %u.%u, MaxCqDepth %u\n", ndk_rt_status_name(st), info.Version.Major,
           info.Version.Minor, info.MaxCqDepth);
    ndk_rt_close_adapter(rt, a);
    ndk_rt_close(rt);
    return st == STATUS_SUCCESS ? 0 : 3;
}
C
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags openndk) "$tmp/consumer.c" -o "$tmp/consumer" $(pkg-config --libs openndk)
export LD_LIBRARY_PATH=$libdir NDK_PROVIDER_PATH=$provdir NDK_CONFIG=/nonexistent
"$tmp/consumer"
"$p/bin/ndkinfo" --adapter lo | grep 'iwarp on lo' >/dev/null || { echo "FAIL: installed ndkinfo does not show iwarp on lo"; exit 1; }
echo "install: headers, libndk, provider, tools, openndk.pc and man pages installed and usable"
