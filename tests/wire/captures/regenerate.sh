#!/usr/bin/env bash
# tests/wire/captures/regenerate.sh - makes the siw capture fixtures of tests/wire again.
#
# Usage: tests/wire/captures/regenerate.sh BUILD_DIR [DEST]
#   BUILD_DIR  a configured tree with ndkinfo, ndkping, libndk and the iwarp provider built
#              (cmake --build BUILD_DIR --target ndk ndk-iwarp ndkinfo ndkping)
#   DEST       where the fixtures go (default: this folder)
#
# It runs the project's own interop harness (tests/interop/run.sh: one QEMU guest boot per siw
# variant, Linux siw built as Debian's kernel ships it or with one compile-time knob changed)
# with small cells only: rping (Send, RDMA Read, RDMA Write) and ucmatose (Send/Receive with
# ULP private data), each both ways (our provider as client against siw's server, siw's client
# against ours), on a guest lo lowered to MTU 1500 so both sides segment FPDUs as on Ethernet.
# Each passing cell's tcpdump capture is one fixture, <variant>-<cell>.pcap. MANIFEST.txt records
# when and against what they were made. Then rebuild and run
#   ctest --test-dir BUILD_DIR -R 'wire_|fuzz_seeds'
# (wire_captures holds the counts of each file; a fixture made with other sizes needs its row
# there changed), and regenerate the fuzz seeds: fuzz_seedgen tests/fuzz/corpus.
#
# Knobs: CAPTURES_VARIANTS (default "default crc mpav1 p2p"), CAPTURES_WORK (the harness's
# results folder; default BUILD_DIR/wire-captures). Exit status 77 when the harness cannot run.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC_ROOT="$(cd "$HERE/../../.." && pwd)"
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [DEST]" >&2; exit 2; }
BUILD="$(cd "$1" && pwd)"
DEST="$(cd "${2:-$HERE}" && pwd)"
WORK="${CAPTURES_WORK:-$BUILD/wire-captures}"
VARIANTS="${CAPTURES_VARIANTS:-default crc mpav1 p2p}"

# The cell sizes are part of the fixtures' expectations (tests/wire/captures_test.c): 3 rping
# iterations of 3000 bytes (three segments per RDMA Read Response and per RDMA Write at MSS
# 1448), 3 ucmatose messages of 100 bytes each way.
RPING_SIZE=3000 RPING_ITERS=3 UCMA_SIZE=100 UCMA_ITERS=3
# Every cell both ways; the one left out is a documented siw limitation (tests/interop/README.md):
# siw's MPA v1 rping server cannot issue its RDMA Read.
want_cells() {
	case $1 in
	mpav1) echo "rping-siw2ours ucmatose-ours2siw ucmatose-siw2ours" ;;
	*) echo "rping-ours2siw rping-siw2ours ucmatose-ours2siw ucmatose-siw2ours" ;;
	esac
}
BUDGET_KIB=300          # all fixtures together; they are committed

rc=0
INTEROP_OUT="$WORK" INTEROP_VARIANTS="$VARIANTS" INTEROP_CELLS="rping ucmatose" INTEROP_LO_MTU=1500 \
	INTEROP_RPING_SIZES=$RPING_SIZE INTEROP_RPING_ITERS=$RPING_ITERS \
	INTEROP_UCMA_SIZES=$UCMA_SIZE INTEROP_UCMA_ITERS=$UCMA_ITERS INTEROP_VM_TIMEOUT=${INTEROP_VM_TIMEOUT:-480} \
	"$SRC_ROOT/tests/interop/run.sh" "$BUILD" || rc=$?
[ $rc = 77 ] && exit 77

# cell name in the harness -> fixture name: the size suffix goes (the README gives the sizes)
fixture_of() { local c=$2; c=${c%-"$RPING_SIZE"}; c=${c%-"$UCMA_SIZE"}; echo "$1-$c.pcap"; }
missing=()
new=()
for v in $VARIANTS; do
	for c in $(want_cells "$v"); do
		case $c in rping-*) cell=$c-$RPING_SIZE ;; *) cell=$c-$UCMA_SIZE ;; esac
		src=$WORK/$v/pcaps/$v-$cell.pcap
		if ! grep -q "^PASS|$v|$cell|" "$WORK/cells.txt" 2>/dev/null || ! grep -q "^OK|$v|$cell|" "$WORK/pcap-check.txt"; then
			missing+=("$v/$cell (did not pass or its capture did not decode: $WORK/matrix.txt)")
			continue
		fi
		# editcap rewrites the file as plain pcap (microsecond timestamps, Ethernet frames of lo),
		# the format tests/wire/pcap.c reads, whatever tcpdump in the guest wrote
		editcap -F pcap "$src" "$WORK/$(fixture_of "$v" "$c")"
		new+=("$(fixture_of "$v" "$c")")
	done
done
if [ ${#missing[@]} -gt 0 ]; then
	printf 'not regenerated, these cells are missing:\n' >&2
	printf '  %s\n' "${missing[@]}" >&2
	exit 1
fi
total=0
for f in "${new[@]}"; do total=$((total + $(stat -c %s "$WORK/$f"))); done
if [ $total -gt $((BUDGET_KIB * 1024)) ]; then
	echo "the fixtures would take $((total / 1024)) KiB, more than the budget of $BUDGET_KIB KiB" >&2
	exit 1
fi

# Only now replace: a failed run leaves the committed fixtures alone.
for v in $VARIANTS; do rm -f "$DEST/$v"-*.pcap; done
for f in "${new[@]}"; do cp "$WORK/$f" "$DEST/$f"; done
{
	echo "# Written by tests/wire/captures/regenerate.sh; see README.md."
	echo "made: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $(git -C "$SRC_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$SRC_ROOT" diff --quiet HEAD -- src tools tests/interop 2>/dev/null || echo ' with uncommitted changes')"
	echo "cells: rping $RPING_ITERS x $RPING_SIZE B, ucmatose $UCMA_ITERS x $UCMA_SIZE B, guest lo MTU 1500"
	for v in $VARIANTS; do
		echo "[$v]"
		echo "guest kernel: $(head -1 "$WORK/$v/results/env.txt" 2>/dev/null || echo unknown)"
		grep -hE '^(kernel|siw):' "$WORK/$v/image-info.txt" 2>/dev/null || true
		echo "our side: $(sed -n 's/^OUR_ENV="\(.*\)"$/\1/p' "$WORK/$v/params.env")"
		for c in $(want_cells "$v"); do
			case $c in rping-*) cell=$c-$RPING_SIZE ;; *) cell=$c-$UCMA_SIZE ;; esac
			f=$(fixture_of "$v" "$c")
			echo "$f $(stat -c %s "$DEST/$f") bytes sha256 $(sha256sum "$DEST/$f" | cut -c1-16)"
			echo "  tshark: $(grep "^OK|$v|$cell|" "$WORK/pcap-check.txt" | cut -d'|' -f4-)"
		done
	done
} >"$DEST/MANIFEST.txt"
echo "fixtures: ${#new[@]} files, $((total / 1024)) KiB in $DEST (MANIFEST.txt)"
