#!/usr/bin/env bash
# tests/interop/verbs.sh - the verbs provider (issue 16) on Linux's soft RDMA devices in a QEMU
# guest: siw (iWARP) and Soft-RoCE rxe, both in the image vm/build.sh makes (the same image the
# siw matrix boots, default variant). One boot runs guest/verbs.sh: ndkinfo, ndkconform on the
# verbs provider over rxe and over siw (with exclude/verbs-<dev>.txt), ndkperf --verify and
# ndkping between two processes, 16 Reads outstanding under root's default ulimit -l (siw),
# verbs-over-siw against our iwarp provider in both directions,
# rdma-core's own tools against verbs, and the WDK kit's rdmapair drivers (tests/wdk) under ndkdrv
# over each device (WSK's NDK extension opening the verbs adapter by interface index), and the
# system view (ndkinfo --resources from a third process while an ndkping pair runs over rxe and over siw).
#
# Usage: tests/interop/verbs.sh BUILD_DIR
# Exit status: 0 every cell passed; 1 a cell failed; 77 the harness cannot run here (one
# "SKIPPED: reason" line). Environment: INTEROP_CACHE, INTEROP_OUT (default BUILD_DIR/interop-verbs),
# INTEROP_VM_TIMEOUT (s, default 1500), VERBS_CELLS (cell groups, default all but bench-rxe
# bench-siw, which bench/verbs-guest.sh runs), VERBS_CONFORM_CASES ("all" or case names; default
# all), BENCH_REPS BENCH_BW_SIZE BENCH_BW_ITERS[1] BENCH_LAT_ITERS[1] (the bench cells).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC_ROOT="$(cd "$HERE/../.." && pwd)"
skip() { echo "SKIPPED: $*"; exit 77; }
log() { printf '[interop-verbs %(%H:%M:%S)T] %s\n' -1 "$*"; }

[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
BUILD="$(cd "$1" && pwd)" || { echo "no build directory $1" >&2; exit 2; }
CACHE="${INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/openndk-interop}"
mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"
case "$CACHE/" in "$SRC_ROOT"/*) echo "INTEROP_CACHE ($CACHE) must be outside the source tree" >&2; exit 2 ;; esac
export INTEROP_CACHE="$CACHE"
OUT="${INTEROP_OUT:-$BUILD/interop-verbs}"
VM_TIMEOUT="${INTEROP_VM_TIMEOUT:-1500}"
CELLS="${VERBS_CELLS:-ndkinfo conform-rxe conform-siw perf-rxe perf-siw reads-siw ping-rxe ping-siw cross-siw tools-rxe tools-siw wdk-rxe wdk-siw sysview-rxe sysview-siw}"
CONFORM_CASES="${VERBS_CONFORM_CASES:-all}"

[ -e "$BUILD/providers/ndk-verbs.so" ] || skip "ndk-verbs.so was not built (libibverbs-dev/librdmacm-dev missing: scripts/deps.sh build)"
[ -x "$BUILD/tests/conformance/ndkconform" ] || skip "ndkconform was not built in $BUILD"
command -v qemu-system-x86_64 >/dev/null 2>&1 || skip "qemu-system-x86_64 is not installed (scripts/deps.sh test)"
if [ "$(id -u)" != 0 ] && [ ! -d "$CACHE/img" ]; then
	skip "building the guest image needs root and no cached image exists in $CACHE"
fi
echo quit | timeout 30 qemu-system-x86_64 -accel tcg -M none -nodefaults -display none -monitor stdio >/dev/null 2>&1 \
	|| skip "qemu-system-x86_64 does not start here"

T0=$(date +%s)
rm -rf "$OUT"
mkdir -p "$OUT/share/ndk/bin" "$OUT/share/ndk/lib" "$OUT/share/ndk/providers" "$OUT/share/exclude"
for t in ndkinfo ndkping ndkperf; do cp "$BUILD/tools/$t/$t" "$OUT/share/ndk/bin/"; done
cp "$BUILD/tests/conformance/ndkconform" "$OUT/share/ndk/bin/"
cp -L "$BUILD"/src/runtime/libndk.so* "$OUT/share/ndk/lib/"
cp -L "$BUILD"/providers/*.so "$OUT/share/ndk/providers/"
# The WDK kit's driver host and the rdmapair drivers (their kit library comes with stage-libs.sh);
# without them the wdk cells report SKIP in the guest.
mkdir -p "$OUT/share/ndk/drivers"
if [ -x "$BUILD/tools/ndkdrv/ndkdrv" ]; then
	cp "$BUILD/tools/ndkdrv/ndkdrv" "$OUT/share/ndk/bin/"
	for d in rdmapair_server rdmapair_client; do
		f=$(find "$BUILD/tests/wdk" -maxdepth 2 -name "*$d*.so" -print -quit)
		[ -n "$f" ] && cp "$f" "$OUT/share/ndk/drivers/$d.so"
	done
fi
"$HERE/stage-libs.sh" "$OUT/share/ndk/lib" "$OUT"/share/ndk/bin/* "$OUT"/share/ndk/lib/libndk.so* "$OUT"/share/ndk/providers/*.so \
	$(find "$OUT/share/ndk/drivers" -name '*.so')
cp "$SRC_ROOT"/tests/conformance/exclude/verbs-*.txt "$OUT/share/exclude/"
install -m 755 "$HERE/guest/verbs.sh" "$OUT/share/verbs.sh"
printf 'CELLS="%s"\nCONFORM_CASES="%s"\n' "$CELLS" "$CONFORM_CASES" >"$OUT/share/params.env"
# the bench cells' settings (bench/verbs-guest.sh)
for v in BENCH_REPS BENCH_BW_SIZE BENCH_BW_ITERS BENCH_BW_ITERS1 BENCH_LAT_ITERS BENCH_LAT_ITERS1; do
	if [ -n "${!v:-}" ]; then printf '%s="%s"\n' "$v" "${!v}" >>"$OUT/share/params.env"; fi
done
printf '#!/bin/sh\nexec bash /mnt/host/verbs.sh\n' >"$OUT/share/start.sh"

log "image"
set +e
img=$(timeout 1800 "$HERE/vm/build.sh" 2>"$OUT/build.log")
brc=$?
set -e
[ $brc = 3 ] && skip "the Debian kernel/userspace packages for the guest cannot be fetched ($(tail -1 "$OUT/build.log"))"
[ $brc = 0 ] && [ -n "$img" ] || { tail -20 "$OUT/build.log"; echo "FAIL: image build failed (rc $brc)"; exit 1; }
RESF="$OUT/share/results/cells.txt"
# Under TCG on a loaded host the guest kernel can panic in its timer check before /init runs
# ("IO-APIC + timer doesn't work"); such a boot ran nothing, so it is tried once more.
for attempt in 1 2; do
	log "booting $img (timeout ${VM_TIMEOUT}s, attempt $attempt); console: $OUT/share/.vm/console.log"
	set +e
	"$HERE/vm/boot.sh" --image "$img" --share "$OUT/share" --script start.sh --timeout "$VM_TIMEOUT" 2>"$OUT/boot.log" \
		| sed -u 's/\x1bc//g; s/\x1b\[[0-9;?]*[a-zA-Z]//g' | grep --line-buffered -E '^\[guest|CELL|Kernel panic|BUG:|Oops'
	grc=${PIPESTATUS[0]}
	set -e
	[ -s "$RESF" ] && break
	grep -q 'timer doesn.t work' "$OUT/share/.vm/console.log" 2>/dev/null || break
done
[ -s "$RESF" ] || { cat "$OUT/boot.log"; echo "FAIL: the guest recorded no cell (rc $grc)"; exit 1; }
echo "===== verbs provider in the guest (results in $OUT/share/results)"
printf '%-14s %-6s %s\n' CELL RESULT DETAIL
npass=0 nfail=0 nskip=0
while IFS='|' read -r res _ cell _ detail; do
	printf '%-14s %-6s %s\n' "$cell" "$res" "$detail"
	case $res in PASS) npass=$((npass + 1)) ;; SKIP) nskip=$((nskip + 1)) ;; *) nfail=$((nfail + 1)) ;; esac
done <"$RESF"
[ "$grc" = 124 ] && { echo "FAIL: the VM hit its ${VM_TIMEOUT}s timeout"; nfail=$((nfail + 1)); }
echo "===== $npass passed, $nfail failed, $nskip skipped (a tool limit, reason above) in $(( $(date +%s) - T0 ))s"
[ "$nfail" = 0 ]
