#!/usr/bin/env bash
# tests/wdk/pair.sh - the rdmapair drivers (tests/wdk/drivers, built with the WDK kit) under
# ndkdrv: the server driver listens, the client driver connects, and the pair does Send/Receive,
# RDMA Read and RDMA Write with every byte checked, then both unload with no verifier finding.
#
# Usage: pair.sh MODE NDKDRV SERVER_DRIVER CLIENT_DRIVER
#   MODE lo4    both on lo, 127.0.0.1 (one interface index)
#        lo6    both on lo, ::1
#        netns  two network namespaces this script creates, joined by a veth pair: two
#               interfaces with two interface indexes, like two back-to-back RNICs
# The provider is NDK_PROVIDERS (default iwarp). Exit: 0 pass, 1 fail, 77 skip (one reason).
set -uo pipefail
mode=$1 ndkdrv=$2 server=$3 client=$4
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$ndkdrv" ] && [ -f "$server" ] && [ -f "$client" ] || fail "missing $ndkdrv, $server or $client"
export NDK_PROVIDERS=${NDK_PROVIDERS:-iwarp}

tmp=$(mktemp -d /tmp/ndk-wdkpair.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap "exit 1" TERM INT

port=$((20000 + $$ % 20000))
run_s=(env) run_c=(env)
case $mode in
lo4 | lo6)
	if_s=$(cat /sys/class/net/lo/ifindex) || skip "no lo interface"
	if_c=$if_s
	if [ "$mode" = lo4 ]; then
		addr_s=127.0.0.1
	else
		ip -6 addr show dev lo 2>/dev/null | grep -q 'inet6 ::1/' || skip "lo has no ::1 (IPv6 disabled here)"
		addr_s=::1
	fi
	addr_c=$addr_s
	;;
netns)
	[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
	for c in unshare nsenter ip timeout; do command -v $c >/dev/null || skip "$c not installed"; done
	# Two holder processes, each alone in a fresh network namespace that dies with it.
	home=$(readlink /proc/self/ns/net)
	for side in s c; do
		unshare -n sleep 230 &
		p=$!
		pids+=($p)
		ns=""
		for _ in $(seq 50); do
			ns=$(readlink /proc/$p/ns/net 2>/dev/null) || break
			[ "$ns" != "$home" ] && break
			sleep 0.05
		done
		[ -n "$ns" ] && [ "$ns" != "$home" ] || skip "unshare -n did not give a new network namespace"
		eval "pid_$side=$p"
	done
	in_s() { nsenter --net=/proc/$pid_s/ns/net "$@"; }
	in_c() { nsenter --net=/proc/$pid_c/ns/net "$@"; }
	in_s ip link add wdk0 type veth peer name wdk1 netns "$pid_c" 2>"$tmp/veth.err" ||
		skip "cannot create a veth pair: $(head -1 "$tmp/veth.err")"
	in_s ip link set lo up && in_s ip addr add 10.78.0.1/24 dev wdk0 && in_s ip link set wdk0 up &&
		in_c ip link set lo up && in_c ip addr add 10.78.0.2/24 dev wdk1 && in_c ip link set wdk1 up ||
		fail "could not configure the namespaces' interfaces"
	if_s=$(in_s ip -o link show dev wdk0 | cut -d: -f1)
	if_c=$(in_c ip -o link show dev wdk1 | cut -d: -f1)
	addr_s=10.78.0.1 addr_c=10.78.0.2
	run_s=(nsenter --net=/proc/$pid_s/ns/net) run_c=(nsenter --net=/proc/$pid_c/ns/net)
	;;
*) fail "unknown mode $mode" ;;
esac
echo "mode $mode: server on interface index $if_s ($addr_s port $port), client on index $if_c ($addr_c)," \
	"provider $NDK_PROVIDERS"

t0=$(date +%s.%N)
"${run_s[@]}" timeout 150 "$ndkdrv" run "$server" --param IfIndex="$if_s" --param Address="$addr_s" \
	--param Port="$port" >"$tmp/server.log" 2>&1 &
srv=$!
pids+=($srv)
for _ in $(seq 600); do   # up to 60 s: a loaded machine may take long to start a process
	grep -q "listening on" "$tmp/server.log" 2>/dev/null && break
	kill -0 $srv 2>/dev/null || break
	sleep 0.1
done
"${run_c[@]}" timeout 150 "$ndkdrv" run "$client" --param IfIndex="$if_c" --param Address="$addr_s" \
	--param LocalAddress="$addr_c" --param Port="$port" >"$tmp/client.log" 2>&1
crc=$?
wait $srv
src=$?
t1=$(date +%s.%N)
echo "---- server driver (ndkdrv exit $src)"
cat "$tmp/server.log"
echo "---- client driver (ndkdrv exit $crc)"
cat "$tmp/client.log"
echo "---- both drivers loaded, ran and unloaded in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s"
[ $src = 0 ] && [ $crc = 0 ] || fail "ndkdrv exit status: server $src, client $crc"
grep -q "rdmapair-server: PASS" "$tmp/server.log" && grep -q "rdmapair-client: PASS" "$tmp/client.log" ||
	fail "a driver did not report PASS"
# A close that timed out or failed is a provider defect even where the late completion still
# came before the unload check.
grep -E "waiting for a close completion|closing an NDK object" "$tmp/server.log" "$tmp/client.log" &&
	fail "a driver's close did not complete in time"
echo "PASS: $mode"
