#!/usr/bin/env bash
# tests/wdk/example.sh - the kit's example driver (examples/driver/hellodrv.c) under ndkdrv on
# lo: it must load, open the adapter through WSK's NDK extension, register its buffer, and unload
# with no verifier finding (ndkdrv exit 0).
# Usage: example.sh NDKDRV HELLODRV. Exit: 0 pass, 1 fail.
set -uo pipefail
ndkdrv=$1 driver=$2
out=$(timeout 80 "$ndkdrv" run "$driver" --param IfIndex="$(cat /sys/class/net/lo/ifindex)" 2>&1)
rc=$?
printf '%s\n' "$out"
[ $rc = 0 ] || { echo "FAIL: ndkdrv exit status $rc"; exit 1; }
grep -q "hellodrv: 16384 bytes registered" <<<"$out" && grep -q "hellodrv: unloaded" <<<"$out" ||
	{ echo "FAIL: hellodrv did not register its buffer and unload"; exit 1; }
echo "PASS: hellodrv"
