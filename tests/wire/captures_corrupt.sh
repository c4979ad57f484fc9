#!/bin/sh
# wire_captures must fail on a damaged fixture: a copy of the fixtures in which one payload byte of
# a CRC capture (inside rping's "rdma-ping-" data, an RDMA Read Response) is changed must make it
# report that FPDU's CRC mismatch (RFC 5044 §4.4) and exit non-zero.
# Usage: captures_corrupt.sh WIRE_CAPTURES_BINARY FIXTURE_DIR
set -eu
bin=$1 fixtures=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$fixtures"/*.pcap "$tmp/"
f=$tmp/crc-rping-ours2siw.pcap
at=$(grep -obUa 'rdma-ping-' "$f" | head -1 | cut -d: -f1)
[ -n "$at" ] || { echo "FAIL: no rping data in $f"; exit 1; }
printf 's' | dd of="$f" bs=1 seek="$at" conv=notrunc status=none
if NDK_WIRE_CAPTURES=$tmp "$bin" >"$tmp/out" 2>&1; then
	cat "$tmp/out"; echo "FAIL: wire_captures passed with byte $at of crc-rping-ours2siw.pcap changed"; exit 1
fi
grep 'crc-rping-ours2siw.pcap.*CRC mismatch' "$tmp/out" || { cat "$tmp/out"; echo "FAIL: wire_captures failed, but not on the CRC"; exit 1; }
echo "wire_captures refuses the copy with byte $at changed: ok"
