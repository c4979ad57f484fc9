#!/usr/bin/env bash
# tests/wdk/kitcost.sh - what the WDK kit costs on ndkperf-style traffic: 64 KiB RDMA Writes, 16
# in flight, completions by CQ notification, over iwarp on 127.0.0.1, measured two ways in ABBA
# order (A, B, B, A per round):
#   A  ndkperf -c -t write -z 65536 -d 16 against ndkperf -s   (the runtime API, libndk)
#   B  the rdmapair client driver (BenchWrites=N) against the rdmapair server driver, both under
#      ndkdrv: WSK's NDK extension, the kit's IRQL filter on every callback, reposts from the CQ
#      notification callback at DISPATCH_LEVEL
# Each side reports its own first-post-to-last-completion rate. A manual measurement, not a test.
# Usage: kitcost.sh BUILD_DIR [WRITES (20000)] [ROUNDS (3)]
set -uo pipefail
build=$(cd "$1" && pwd) n=${2:-20000} rounds=${3:-3}
# MPA CRC off on both sides, as ndkperf runs by default (the drivers would get the provider default, on).
export NDK_PROVIDER_PATH=$build/providers NDK_PROVIDERS=iwarp NDK_IWARP_CRC=0
ndkperf=$build/tools/ndkperf/ndkperf ndkdrv=$build/tools/ndkdrv/ndkdrv
srv=$build/tests/wdk/rdmapair_server.so cli=$build/tests/wdk/rdmapair_client.so
lo=$(cat /sys/class/net/lo/ifindex)
tmp=$(mktemp -d /tmp/ndk-kitcost.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
port=21000

wait_listen() { # LOG PID
	for _ in $(seq 100); do
		grep -q "listening on" "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
}
run_a() { # prints Mbit/s of one ndkperf run
	port=$((port + 1))
	"$ndkperf" -s 127.0.0.1:$port --once >"$tmp/a.s" 2>&1 &
	local s=$!
	wait_listen "$tmp/a.s" $s
	"$ndkperf" -c 127.0.0.1:$port -t write -z 65536 -n "$n" -d 16 >"$tmp/a.c" 2>&1
	wait $s
	awk '$1 == 65536 { printf "%.0f\n", $6 * 1000 }' "$tmp/a.c"
}
run_b() { # prints Mbit/s of one driver run
	port=$((port + 1))
	"$ndkdrv" run "$srv" --param IfIndex="$lo" --param Address=127.0.0.1 --param Port=$port >"$tmp/b.s" 2>&1 &
	local s=$!
	wait_listen "$tmp/b.s" $s
	"$ndkdrv" run "$cli" --param IfIndex="$lo" --param Address=127.0.0.1 --param Port=$port \
		--param BenchWrites="$n" >"$tmp/b.c" 2>&1
	wait $s
	sed -n 's/.*bench: .* us: \([0-9]*\) Mbit\/s.*/\1/p' "$tmp/b.c"
}

echo "round order runtime-API(Mbit/s) kit-driver(Mbit/s)"
for r in $(seq "$rounds"); do
	a1=$(run_a) b1=$(run_b) b2=$(run_b) a2=$(run_a)
	echo "$r ABBA $a1,$a2 $b1,$b2"
	echo "$a1 $a2" >>"$tmp/a.all"
	echo "$b1 $b2" >>"$tmp/b.all"
done
tr ' ' '\n' <"$tmp/a.all" | sort -n >"$tmp/a.sorted"
tr ' ' '\n' <"$tmp/b.all" | sort -n >"$tmp/b.sorted"
ma=$(awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }' "$tmp/a.sorted")
mb=$(awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }' "$tmp/b.sorted")
awk -v a="$ma" -v b="$mb" -v n="$n" 'BEGIN { printf "median over %d x 64 KiB Writes: runtime API %d Mbit/s, kit driver %d Mbit/s, ratio %.3f\n", n, a, b, (a > 0 ? b / a : 0) }'
