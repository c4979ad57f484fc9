#!/usr/bin/env bash
# tests/interop/run-ksmbd.sh - SMB Direct cells against Linux ksmbd over siw in the QEMU guest:
# the image of vm/build.sh (BUILD_KSMBD=1: ksmbd_smbdirect.ko and ksmbd-tools), ksmbd serving a
# tmpfs share on 198.18.0.1:5445, our ndksmb over our iwarp provider as the client (the cells are
# in guest/ksmbd.sh). The session capture is decoded here with tshark (smb2, smb_direct, iWARP).
#
# Usage: tests/interop/run-ksmbd.sh BUILD_DIR
# Exit status: 0 every cell passed; 1 a cell failed; 77 the harness cannot run here.
# Environment: INTEROP_CACHE (as run.sh), INTEROP_OUT (default BUILD_DIR/interop-ksmbd),
#   INTEROP_VM_TIMEOUT (s, default 1500)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
skip() { echo "SKIPPED: $*"; exit 77; }
log() { printf '[interop-ksmbd %(%H:%M:%S)T] %s\n' -1 "$*"; }
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
BUILD="$(cd "$1" && pwd)"
OUT="${INTEROP_OUT:-$BUILD/interop-ksmbd}"
VM_TIMEOUT=${INTEROP_VM_TIMEOUT:-1500}
command -v qemu-system-x86_64 >/dev/null 2>&1 || skip "qemu-system-x86_64 is not installed"
[ -x "$BUILD/tools/ndksmb/ndksmb" ] || skip "ndksmb is not in the build"
echo quit | timeout 30 qemu-system-x86_64 -accel tcg -M none -nodefaults -display none -monitor stdio >/dev/null 2>&1 \
	|| skip "qemu-system-x86_64 does not start here"

set +e
img=$(BUILD_KSMBD=1 timeout 2400 "$HERE/vm/build.sh" 2>"$BUILD/interop-ksmbd-build.log")
brc=$?
set -e
[ $brc = 3 ] && skip "the guest packages cannot be fetched ($(tail -1 "$BUILD/interop-ksmbd-build.log"))"
[ $brc = 0 ] && [ -n "$img" ] || { tail -20 "$BUILD/interop-ksmbd-build.log"; echo "FAIL: image build (rc $brc)"; exit 1; }

rm -rf "$OUT"; mkdir -p "$OUT/ndk/bin" "$OUT/ndk/lib" "$OUT/ndk/providers"
cp "$BUILD/tools/ndksmb/ndksmb" "$OUT/ndk/bin/"
cp -L "$BUILD"/src/runtime/libndk.so* "$OUT/ndk/lib/" 2>/dev/null || true
cp -L "$BUILD"/providers/*.so "$OUT/ndk/providers/"
"$HERE/stage-libs.sh" "$OUT/ndk/lib" "$OUT/ndk/bin/ndksmb" "$OUT"/ndk/providers/*.so
install -m 755 "$HERE/guest/ksmbd.sh" "$OUT/ksmbd.sh"
printf '#!/bin/sh\nKSMBD_QUICK=%s exec bash /mnt/host/ksmbd.sh\n' "${KSMBD_QUICK:-0}" >"$OUT/start.sh"
log "booting $img (timeout ${VM_TIMEOUT}s); console: $OUT/.vm/console.log"
set +e
"$HERE/vm/boot.sh" --image "$img" --share "$OUT" --script start.sh --timeout "$VM_TIMEOUT" >"$OUT/boot.log" 2>&1
grc=$?
set -e
[ -s "$OUT/results/cells.txt" ] || { tail -30 "$OUT/.vm/console.log" 2>/dev/null; echo "FAIL: no results (guest rc $grc)"; exit 1; }

fails=0
# every capture: iWARP (MPA, DDP/RDMAP) as check-pcaps.sh checks it, SMB Direct and SMB2 present,
# nothing malformed. tshark gives TCP port 5445 to the artemis dissector by default: switched off
# through private profile directories. tshark 4.0's SPNEGO dissector flags the negTokenInit in
# ksmbd's NEGOTIATE response (a BER error in the server's own blob): check-pcaps.sh runs with
# SPNEGO off, and the second pass, with SPNEGO on, excuses that one frame only, by name.
if command -v tshark >/dev/null 2>&1; then
	WS1="$OUT/.wireshark" WS2="$OUT/.wireshark-nospnego"
	mkdir -p "$WS1" "$WS2" "$OUT/pcap-check/ksmbd"
	echo artemis >"$WS1/disabled_protos"
	printf 'artemis\nspnego\n' >"$WS2/disabled_protos"
	ln -sfn "$OUT/pcaps" "$OUT/pcap-check/ksmbd/pcaps"
	WIRESHARK_CONFIG_DIR="$WS2" "$HERE/check-pcaps.sh" "$OUT/pcap-check" >"$OUT/pcap-check.txt" 2>&1 || fails=1
	n=0
	for p in "$OUT"/pcaps/ksmbd-*.pcap; do
		[ -s "$p" ] || continue
		n=$((n + 1))
		ts=(env WIRESHARK_CONFIG_DIR="$WS1" tshark -r "$p" -n --disable-protocol rpcordma)
		nsmb=$("${ts[@]}" -Y smb2 2>/dev/null | wc -l)
		nsd=$("${ts[@]}" -Y smb_direct 2>/dev/null | wc -l)
		nbad=$("${ts[@]}" -Y '_ws.malformed and not (smb2.cmd == 0 and smb2.flags.response == 1)' 2>/dev/null | wc -l)
		nneg=$("${ts[@]}" -Y '_ws.malformed and smb2.cmd == 0 and smb2.flags.response == 1' 2>/dev/null | wc -l)
		echo "$(basename "$p"): $nsmb smb2 frames, $nsd smb_direct frames, $nbad malformed ($nneg in ksmbd's SPNEGO blob of its NEGOTIATE response, not counted)" >>"$OUT/pcap-check.txt"
		[ "$nsmb" -gt 0 ] && [ "$nsd" -gt 0 ] && [ "$nbad" = 0 ] || { echo "BAD|$(basename "$p")|smb2/smb_direct missing or malformed frames" >>"$OUT/pcap-check.txt"; fails=1; }
	done
	[ "$n" -ge 2 ] || { echo "BAD|fewer than two captures" >>"$OUT/pcap-check.txt"; fails=1; }
	sed 's/^/capture: /' "$OUT/pcap-check.txt"
else
	echo "capture: tshark is not installed; captures not decoded"
	fails=1
fi
echo "===== SMB Direct cells against ksmbd over siw (results in $OUT)"
sed 's/|/  /g' "$OUT/results/cells.txt"
grep -q '^FAIL' "$OUT/results/cells.txt" && fails=1
[ "$grc" = 0 ] || [ "$grc" = 1 ] || { echo "FAIL: guest ended with $grc"; fails=1; }
exit $fails
