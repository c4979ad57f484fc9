#!/bin/bash
# tests/interop/guest/verbs.sh - the guest half of the verbs-provider cells (issue 16; runs INSIDE
# the VM, cwd = the 9p share /mnt/host). Devices: siw0 on the dummy siwd0 (198.18.0.1, as the siw
# matrix) and Soft-RoCE rxe0 on the dummy rxed0 (198.18.1.1). Each device loops to its own
# address, so both ends of every cell run in this guest and nothing leaves it.
#
# Inputs: params.env (CELLS: which cell groups run; CONFORM_CASES: the conformance cases, "all"
#         or a list), ndk/{bin,lib,providers}, exclude/verbs-{rxe,siw}.txt
# Outputs: results/cells.txt (RESULT|verbs|cell|-|detail), results/<cell>.log
set -uo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd /mnt/host
# shellcheck disable=SC1091
. ./params.env
RES=/mnt/host/results
mkdir -p "$RES"
CELLS_OUT=$RES/cells.txt
: >"$CELLS_OUT"
SIW_IP=198.18.0.1 RXE_IP=198.18.1.1
say() { echo "[guest $(cut -d' ' -f1 /proc/uptime)] $*"; }
record() { printf '%s|verbs|%s|-|%s\n' "$1" "$2" "$3" >>"$CELLS_OUT"; say "CELL verbs/$2: $1 ($3)"; }

say "setting up siw0 ($SIW_IP) and rxe0 ($RXE_IP)"
{
	ndkvm-setup || exit 1
	modprobe -a crc32_generic rdma_rxe || exit 1
	if ! ip link show rxed0 >/dev/null 2>&1; then
		ip link add rxed0 type dummy && echo 1 >/proc/sys/net/ipv6/conf/rxed0/disable_ipv6 &&
			ip link set rxed0 up && ip addr add "$RXE_IP/32" dev rxed0 || exit 1
	fi
	rdma link show | grep '^link rxe0/' >/dev/null || rdma link add rxe0 type rxe netdev rxed0 || exit 1
	rdma link show; ibv_devices
} >"$RES/setup.log" 2>&1
src=$?
cat "$RES/setup.log"
[ $src = 0 ] || { record FAIL setup "device set-up failed (results/setup.log)"; exit 1; }
ulimit -l unlimited 2>/dev/null

NDK=/mnt/host/ndk
export LD_LIBRARY_PATH=$NDK/lib NDK_PROVIDER_PATH=$NDK/providers PATH=$NDK/bin:$PATH
export NDK_CONFORM_TIMEOUT_SCALE=${NDK_CONFORM_TIMEOUT_SCALE:-2}
# the suite's largest transfers (up to 1 GiB) take minutes under TCG; 8 MiB keeps every path
export NDK_CONFORM_MAX_TRANSFER=${NDK_CONFORM_MAX_TRANSFER:-8388608}

# ---- ndkinfo: the verbs provider binds siwd0 (siw0, iWARP) and rxed0 (rxe0, RoCE v2)
cell_ndkinfo() {
	local log=$RES/ndkinfo.log
	NDK_PROVIDERS=verbs ndkinfo >"$log" 2>&1
	# the device behind each adapter (OID_OPENNDK_RDMA_DEVICE): rxe's GID is the address, ::ffff:198.18.1.1
	if grep -q "verbs on siwd0" "$log" && grep -q "verbs on rxed0" "$log" && grep -q "RdmaTechnology *iWARP" "$log" &&
		grep -q "RdmaTechnology *RoCEv2" "$log" &&
		grep -qE "RDMA device siw0 port 1, GID\[0\] .*link layer Ethernet \(iWARP transport\)" "$log" &&
		grep -qE "RDMA device rxe0 port 1, GID\[[0-9]+\] ::ffff:198\.18\.1\.1, link layer Ethernet \(IB transport\)" "$log"; then
		record PASS ndkinfo "verbs adapters on siwd0 (siw0, iWARP) and rxed0 (rxe0, RoCE v2, GID ::ffff:198.18.1.1)"
	else
		record FAIL ndkinfo "verbs adapters missing or wrong technology (results/ndkinfo.log)"
	fi
}

# ---- ndkconform on the verbs provider over one device
cell_conform() {
	local dev=$1 ip=$2 log=$RES/conform-$1.log args=() c
	if [ "$CONFORM_CASES" = all ]; then
		args=(--all)
		NDK_LOG_LEVEL=2 timeout -k 5 "${CONFORM_TIMEOUT:-900}" ndkconform --provider verbs --addr "$ip" --exclude "exclude/verbs-$dev.txt" \
			"${args[@]}" >"$log" 2>&1
	else
		: >"$log"
		for c in $CONFORM_CASES; do
			timeout -k 5 200 ndkconform --provider verbs --addr "$ip" --exclude "exclude/verbs-$dev.txt" --case "$c" >"$RES/c.tmp" 2>&1
			echo "rc=$? $c" >>"$log"
			cat "$RES/c.tmp" >>"$log"
		done
	fi
	local pass fail notrun
	pass=$(grep -cE '^(pass  |PASS )' "$log"); fail=$(grep -cE '^FAIL  |^rc=(1|2|124|137) ' "$log")
	notrun=$(grep -cE '^notrun|^rc=77 ' "$log")
	if [ "$fail" = 0 ] && [ "$pass" -gt 0 ]; then
		record PASS "conform-$dev" "$pass passed, $notrun not run (exclude/verbs-$dev.txt)"
	else
		record FAIL "conform-$dev" "$pass passed, $fail failed, $notrun not run (results/conform-$dev.log)"
	fi
}

# ---- two processes: a server and a client, each with a timeout.
#   pair LOG TMO "server cmd" "client cmd"; sets PAIR_SRC and PAIR_CRC (124 = timeout)
pair() {
	local log=$1 tmo=$2 scmd=$3 ccmd=$4 sp until u _
	{ echo "## server: $scmd"; } >>"$log"
	timeout -k 5 "$tmo" sh -c "$scmd" >/tmp/pair.server 2>&1 &
	sp=$!
	# the server is ready when it says so (rxe has no TCP listener to look for); TCG is slow
	read -r u _ </proc/uptime; until=$(( ${u%.*} + 20 ))
	while ! grep -qiE 'listen|waiting|server' /tmp/pair.server 2>/dev/null; do
		kill -0 $sp 2>/dev/null || break
		read -r u _ </proc/uptime; [ "${u%.*}" -ge "$until" ] && break
		sleep 0.3
	done
	sleep 0.5
	echo "## client: $ccmd" >>"$log"
	timeout -k 5 "$tmo" sh -c "$ccmd" >/tmp/pair.client 2>&1
	PAIR_CRC=$?
	wait $sp
	PAIR_SRC=$?
	{ echo "## server output (rc $PAIR_SRC)"; cat /tmp/pair.server; echo "## client output (rc $PAIR_CRC)"; cat /tmp/pair.client; } >>"$log"
}

# ---- ndkperf --verify Write/Read/Send and ndkping, both ends on the verbs provider
cell_perf() {
	local dev=$1 ip=$2 log=$RES/perf-$1.log op bad="" port=18600
	: >"$log"
	for op in write read send; do
		port=$((port + 1))
		pair "$log" 120 "ndkperf -s $ip:$port --once --provider verbs" \
			"ndkperf -c $ip:$port -t $op -z 65536 -n 200 -d 16 --verify --provider verbs"
		[ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] || bad="$bad $op(server $PAIR_SRC, client $PAIR_CRC)"
	done
	if [ -z "$bad" ]; then record PASS "perf-$dev" "ndkperf --verify write, read, send: 200 x 64 KiB each"
	else record FAIL "perf-$dev" "failed:$bad (results/perf-$dev.log)"; fi
}

# ---- many RDMA Reads outstanding from the peer, under root's default locked-memory limit: the
# client keeps 16 Reads of 1 MiB in flight against the server (siw answers them from its IRQ
# while a Read Response is still going out), and each side registers 16 MiB. siw charges every
# registration to RLIMIT_MEMLOCK even for root (siw_umem_get), so without the provider lifting
# the limit both sides fail at 8 MiB (ksmbd's reads at queue depth 16 hit it first).
cell_reads() {
	local dev=$1 ip=$2 log=$RES/reads-$1.log
	: >"$log"
	pair "$log" 180 "ulimit -l 8192; ndkperf -s $ip:18650 --once --provider verbs" \
		"ulimit -l 8192; ndkperf -c $ip:18650 -t read -z 1048576 -n 48 -d 16 --verify --provider verbs"
	if [ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ]; then
		record PASS "reads-$dev" "16 x 1 MiB RDMA Reads outstanding, 48 verified, under ulimit -l 8192 (root)"
	else record FAIL "reads-$dev" "server $PAIR_SRC, client $PAIR_CRC (results/reads-$dev.log)"; fi
}

cell_ping() {
	local dev=$1 ip=$2 log=$RES/ping-$1.log
	: >"$log"
	pair "$log" 60 "ndkping -s $ip:7301 --once --provider verbs" "ndkping -c $ip:7301 -C 5 -i 0.2 --provider verbs"
	if [ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] && grep -q '5 received' "$log"; then
		record PASS "ping-$dev" "ndkping: 5 pings between two processes"
	else record FAIL "ping-$dev" "server $PAIR_SRC, client $PAIR_CRC (results/ping-$dev.log)"; fi
}

# ---- verbs over siw (the kernel's iWARP) against our iwarp provider, both directions
cell_cross() {
	local log=$RES/cross-siw.log ip=$SIW_IP bad=""
	local ienv="NDK_IWARP_CRC=0 NDK_IWARP_P2P=0"
	: >"$log"
	pair "$log" 60 "ndkping -s $ip:7311 --once --provider verbs" "env $ienv ndkping -c $ip:7311 -C 5 -i 0.2 --provider iwarp"
	[ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] || bad="$bad ping-iwarp2verbs"
	pair "$log" 60 "env $ienv ndkping -s $ip:7312 --once --provider iwarp" "ndkping -c $ip:7312 -C 5 -i 0.2 --provider verbs"
	[ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] || bad="$bad ping-verbs2iwarp"
	pair "$log" 120 "ndkperf -s $ip:7313 --once --provider verbs" \
		"env $ienv ndkperf -c $ip:7313 -t write -z 65536 -n 200 -d 16 --verify --provider iwarp"
	[ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] || bad="$bad write-iwarp2verbs"
	pair "$log" 120 "env $ienv ndkperf -s $ip:7314 --once --provider iwarp" \
		"ndkperf -c $ip:7314 -t read -z 65536 -n 200 -d 16 --verify --provider verbs"
	[ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] || bad="$bad read-verbs2iwarp"
	if [ -z "$bad" ]; then record PASS cross-siw "verbs/siw <-> iwarp: ndkping both ways, Write iwarp->verbs, Read verbs->iwarp, verified"
	else record FAIL cross-siw "failed:$bad (results/cross-siw.log)"; fi
}

# ---- rdma-core's own tools against the verbs provider on the same device
cell_tools() {
	local dev=$1 ip=$2 log=$RES/tools-$1.log bad=""
	: >"$log"
	pair "$log" 120 "rping -s -a $ip -p 7321 -C 20 -S 4096 -v" "ndkping --rping -c -a $ip -p 7321 -C 20 -S 4096 --provider verbs"
	[ "$PAIR_CRC" = 0 ] && [ "$(grep -c 'ping data' /tmp/pair.server)" -ge 20 ] || bad="$bad rping2verbs"
	# -v: our server says when it listens (rping's own says nothing), so the client does not start
	# on the fixed wait alone (it was once refused on siw while the machine was loaded)
	pair "$log" 120 "ndkping --rping -s -v -a $ip -p 7322 --provider verbs" "rping -c -a $ip -p 7322 -C 20 -S 4096 -v"
	[ "$PAIR_SRC" = 0 ] && [ "$(grep -c 'ping data' /tmp/pair.client)" -ge 20 ] || bad="$bad verbs2rping"
	pair "$log" 120 "ucmatose -b $ip -p 7323 -C 20 -S 1024" "ndkping --cmatose -s $ip -p 7323 -C 20 -S 1024 --provider verbs"
	[ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] || bad="$bad ucmatose2verbs"
	pair "$log" 120 "ndkping --cmatose -b $ip -p 7324 -C 20 -S 1024 --provider verbs" "ucmatose -s $ip -p 7324 -C 20 -S 1024"
	[ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] || bad="$bad verbs2ucmatose"
	if [ -z "$bad" ]; then record PASS "tools-$dev" "rping both ways (20 x 4 KiB), ucmatose both ways (20 x 1 KiB)"
	else record FAIL "tools-$dev" "failed:$bad (results/tools-$dev.log)"; fi
}

# ---- the WDK kit (issue 36): the rdmapair drivers under ndkdrv, both on one device, the adapter
# opened through WSK's NDK extension by the device's interface index; Send/Receive, RDMA Read and
# RDMA Write with every byte checked, and a clean unload (ndkdrv exits 0 only without a finding)
cell_wdk() {
	local dev=$1 ip=$2 netdev=$3 log=$RES/wdk-$1.log ifindex port
	local drv=$NDK/drivers
	: >"$log"
	if ! command -v ndkdrv >/dev/null || [ ! -f "$drv/rdmapair_server.so" ] || [ ! -f "$drv/rdmapair_client.so" ]; then
		record SKIP "wdk-$dev" "ndkdrv or the rdmapair drivers were not built"
		return
	fi
	ifindex=$(cat "/sys/class/net/$netdev/ifindex")
	port=18801
	[ "$dev" = siw ] && port=18802
	pair "$log" 120 "NDK_PROVIDERS=verbs ndkdrv run $drv/rdmapair_server.so --param IfIndex=$ifindex --param Address=$ip --param Port=$port" \
		"NDK_PROVIDERS=verbs ndkdrv run $drv/rdmapair_client.so --param IfIndex=$ifindex --param Address=$ip --param LocalAddress=$ip --param Port=$port"
	# a close that timed out fails the cell even where its late completion came before the unload
	# check (rxe held a QP 50 s for a window still bound through it)
	if [ "$PAIR_SRC" = 0 ] && [ "$PAIR_CRC" = 0 ] && grep -q "rdmapair-server: PASS" /tmp/pair.server &&
		grep -q "rdmapair-client: PASS" /tmp/pair.client &&
		! grep -qE "waiting for a close completion|closing an NDK object" /tmp/pair.server /tmp/pair.client; then
		record PASS "wdk-$dev" "rdmapair drivers (WSK NDK extension, interface $netdev index $ifindex): Send/Receive, RDMA Read and Write, every byte checked, clean unload"
	else
		record FAIL "wdk-$dev" "server $PAIR_SRC, client $PAIR_CRC (results/wdk-$dev.log)"
	fi
}

# ---- the system view (issue 38): while an ndkping pair runs over the device, ndkinfo in a third
# process lists both ends' QPs from their registries (NDK_RUNTIME_DIR, a directory of this cell):
# connected, with operations and bytes counted each way, and nothing that names a memory key;
# and OID_NDK_STATISTICS there counts the whole adapter (the client's Connect, the server's Accept).
# sv_qps FILE: one line per QP record "pid state ops_out ops_in bytes_out bytes_in remote", from
# `ndkinfo --resources --json` (or --connections --json, which carries the same counters per QP).
sv_qps() {
	tr '{' '\n' <"$1" | awk '
		function num(k) { return match($0, "\"" k "\":[0-9]+") ? substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0 : -1 }
		function str(k) { return match($0, "\"" k "\":\"[^\"]*\"") ? substr($0, RSTART + length(k) + 4, RLENGTH - length(k) - 5) : "-" }
		/^"pid":/ { pid = num("pid") }
		/"pid":/ && /"qp":"[^"]*qp#/ { pid = num("pid") }
		/"type":"qp"/ || (/"qp":"[^"]*qp#/ && /"ops_out":/) {
			print pid, str("state"), num("ops_out"), num("ops_in"), num("bytes_out"), num("bytes_in"), str("remote")
		}'
}
cell_sysview() {
	local dev=$1 ip=$2 log=$RES/sysview-$1.log json=$RES/sysview-$1.json port=7331 rt sp cp k view=--resources
	local good="" procs=0 stats="" why=""
	rt=/tmp/ndk-rt-sysview-$dev
	rm -rf "$rt" && mkdir -m 0700 "$rt"
	: >"$log"
	ndkinfo --help 2>&1 | grep -q -- --resources || view=--connections
	echo "## NDK_RUNTIME_DIR=$rt, ndkinfo $view" >>"$log"
	NDK_RUNTIME_DIR=$rt timeout -k 5 120 ndkping -s "$ip:$port" --once --provider verbs >/tmp/sv.server 2>&1 &
	sp=$!
	for k in $(seq 1 60); do
		grep -qiE 'listen|waiting|server' /tmp/sv.server 2>/dev/null && break
		kill -0 $sp 2>/dev/null || break
		sleep 0.3
	done
	NDK_RUNTIME_DIR=$rt timeout -k 5 120 ndkping -c "$ip:$port" -C 60 -i 0.25 --provider verbs >/tmp/sv.client 2>&1 &
	cp=$!
	# a few snapshots while both run: the first with both ends connected and counting decides
	for k in $(seq 1 25); do
		sleep 1
		kill -0 $cp 2>/dev/null || break
		NDK_RUNTIME_DIR=$rt ndkinfo $view --json >"$json" 2>>"$log" || continue
		good=$(sv_qps "$json" | awk -v ip="$ip" '($2 == "RTS" || $2 == "ESTABLISHED") && $3 > 0 && $4 > 0 && $5 > 0 && $6 > 0 && index($7, ip) == 1 { print $1 }' | sort -u)
		procs=$(printf '%s\n' "$good" | grep -c .)
		[ "$procs" -ge 2 ] || continue
		NDK_RUNTIME_DIR=$rt NDK_PROVIDERS=verbs ndkinfo --stats --json >"$RES/sysview-$dev-stats.json" 2>>"$log"
		stats=$(grep -o '"statistics":{[^}]*}' "$RES/sysview-$dev-stats.json" | awk '
			function num(k) { return match($0, "\"" k "\":[0-9]+") ? substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0 : 0 }
			num("Connect") >= 1 && num("Accept") >= 1 && num("ActiveConnection") >= 2 { print "ok"; exit }')
		break
	done
	{ echo "## snapshot ($view --json): QPs (pid state ops_out ops_in bytes_out bytes_in remote)"; sv_qps "$json"; } >>"$log"
	wait $cp
	local crc=$?
	wait $sp
	local src=$?
	{ echo "## server (rc $src)"; cat /tmp/sv.server; echo "## client (rc $crc)"; cat /tmp/sv.client; } >>"$log"
	[ "$procs" -ge 2 ] || why="$why; $procs process(es) with a connected QP counting both ways (need 2)"
	if grep -Eiq '"[a-z_]*(stag|rkey|lkey|token)[a-z_]*":' "$json"; then why="$why; a key field in the JSON"; fi
	[ "$stats" = ok ] || why="$why; OID_NDK_STATISTICS does not count both processes (Connect, Accept, ActiveConnection 2)"
	# The octet and frame counters are the device's, which the provider does not read: the
	# capabilities must say so (MissingCounterMask bits 26-29), and ndkinfo must not show them as 0.
	grep -q '"MissingCounterMask":1006632960' "$RES/sysview-$dev-stats.json" 2>/dev/null ||
		why="$why; MissingCounterMask is not 0x3c000000 (the octet and frame counters)"
	grep -q '"missing":"RDMAInOctets RDMAOutOctets RDMAInFrames RDMAOutFrames"' "$RES/sysview-$dev-stats.json" 2>/dev/null ||
		why="$why; ndkinfo --stats does not name the counters the provider does not keep"
	# (the adapters listed are the verbs provider's, NDK_PROVIDERS=verbs; the system view's
	# per-process records are every provider's, and iwarp keeps all its counters)
	if grep -o '"statistics":{[^}]*}' "$RES/sysview-$dev-stats.json" 2>/dev/null | grep -q '"RDMAInOctets":'; then
		why="$why; ndkinfo --stats shows a count for a counter the provider does not keep"
	fi
	k=$(grep -o '"provider":"verbs"[^{}]*"counters":{[^}]*}' "$RES/sysview-$dev-stats.json" 2>/dev/null |
		grep -c '"missing":"RDMAInOctets RDMAOutOctets RDMAInFrames RDMAOutFrames"}')
	if [ "${k:-0}" = 0 ] || grep -o '"provider":"verbs"[^{}]*"counters":{[^}]*}' "$RES/sysview-$dev-stats.json" |
		grep -q '"RDMAInOctets":'; then
		why="$why; the system view's per-process verbs counters do not name the ones the provider does not keep"
	fi
	[ "$src" = 0 ] && [ "$crc" = 0 ] || why="$why; ndkping server $src, client $crc"
	rm -rf "$rt"
	if [ -z "$why" ]; then
		record PASS "sysview-$dev" "ndkinfo $view --json during ndkping: both ends' QPs RTS with ops and bytes each way, no key field; --stats counts the whole adapter and names the octet and frame counters missing"
	else record FAIL "sysview-$dev" "${why#; } (results/sysview-$dev.log)"; fi
}

# ---- cost (issue 16 item 3, bench/verbs-guest.sh): ndkperf over verbs against perftest on the same
# device, interleaved (the order flips every repetition). Both are timed the same way, from outside:
# each measurement runs the client twice, with N1 and N2 iterations, and takes the difference of
# the two wall-clock times, so that start-up and connection set-up cancel and neither tool's own
# clock counts (perftest's cycle counter is unreliable under TCG: -D counts no iteration, latencies
# come out as inf). Bandwidth: RDMA Write of SIZE, window 32, both busy-polling; latency: 8-byte
# Send ping-pong, both waiting for completion events (two busy-polling ends on the guest's 2 vCPUs
# measure the scheduler), reported as half the round trip. Under TCG only the ratio means anything.
# Writes results/bench-<dev>.csv: dev,id,rep,tool,value,unit.
bench_wall() { # COMMAND: the command, then a line "WALL start end" (seconds of uptime, 10 ms steps;
	# the guest's date has no %N) and bash's "CPU user sys" of the client process (seconds)
	printf 'read -r a _ </proc/uptime; bash -c %s; rc=$?; read -r b _ </proc/uptime; echo "WALL $a $b"; exit $rc' \
		"$(printf '%q' "TIMEFORMAT='CPU %3U %3S'; time $1")"
}
bench_run() { # TOOL KIND ITERS PORT DEV IP SIZE: one timed client run; echoes its seconds or nothing
	local tool=$1 kind=$2 n=$3 port=$4 dev=$5 ip=$6 size=$7 scmd ccmd
	if [ "$tool" = ndk ] && [ "$kind" = bw ]; then
		scmd="ndkperf -s $ip:$port --once --poll --provider verbs"
		ccmd="ndkperf -c $ip:$port -t write -z $size -n $n -d 32 --poll --provider verbs"
	elif [ "$tool" = ndk ]; then
		scmd="ndkperf -s $ip:$port --once --provider verbs"
		ccmd="ndkperf -c $ip:$port -t send --lat -z 8 -n $n --provider verbs"
	elif [ "$kind" = bw ]; then
		scmd="ib_write_bw -R -d ${dev}0 -s $size -n $n -t 32 -p $port -F"
		ccmd="ib_write_bw -R -d ${dev}0 -s $size -n $n -t 32 -p $port -F $ip"
	else
		scmd="ib_send_lat -R -d ${dev}0 -s 8 -n $n -e -p $port -F"
		ccmd="ib_send_lat -R -d ${dev}0 -s 8 -n $n -e -p $port -F $ip"
	fi
	pair "$BENCH_LOG" 300 "$scmd" "$(bench_wall "$ccmd")"
	[ "$PAIR_CRC" = 0 ] || return 0
	awk '$1 == "CPU" { c = $2 + $3 } $1 == "WALL" { w = $3 - $2 } END { if (w != "") printf "%.6f %.3f\n", w, c }' /tmp/pair.client
}
cell_bench() {
	local dev=$1 ip=$2 csv=$RES/bench-$1.csv port=18700 r t k v t1 t2 bad="" noisy="" order
	local reps=${BENCH_REPS:-3} size=${BENCH_BW_SIZE:-65536}
	local bw1=${BENCH_BW_ITERS1:-200} bw2=${BENCH_BW_ITERS:-1000} lat1=${BENCH_LAT_ITERS1:-200} lat2=${BENCH_LAT_ITERS:-1000}
	BENCH_LOG=$RES/bench-$1.log
	echo "dev,id,rep,tool,value,unit" >"$csv"
	: >"$BENCH_LOG"
	for r in $(seq 1 "$reps"); do
		order="ndk pt"
		[ $((r % 2)) = 0 ] && order="pt ndk"
		for t in $order; do
			for k in bw lat; do
				if [ $k = bw ]; then
					port=$((port + 2))
					t1=$(bench_run "$t" bw "$bw1" $((port - 1)) "$dev" "$ip" "$size")
					t2=$(bench_run "$t" bw "$bw2" "$port" "$dev" "$ip" "$size")
					v=$(awk -v a="${t1% *}" -v b="${t2% *}" -v n=$((bw2 - bw1)) -v s="$size" \
						'BEGIN { if (a != "" && b != "" && b > a) printf "%.6f", n * s * 8 / (b - a) / 1e9 }')
					[ -n "$v" ] && echo "$dev,write.bw.$size,$r,$t,$v,Gbit/s" >>"$csv"
				else
					port=$((port + 2))
					t1=$(bench_run "$t" lat "$lat1" $((port - 1)) "$dev" "$ip" 8)
					t2=$(bench_run "$t" lat "$lat2" "$port" "$dev" "$ip" 8)
					v=$(awk -v a="${t1% *}" -v b="${t2% *}" -v n=$((lat2 - lat1)) \
						'BEGIN { if (a != "" && b != "" && b > a) printf "%.3f", (b - a) / n / 2 * 1e6 }')
					[ -n "$v" ] && echo "$dev,send.lat.8,$r,$t,$v,us" >>"$csv"
					# the client's CPU time per round trip (user + system, the same difference):
					# what the software path costs, apart from how long the guest takes to wake it
					c=$(awk -v a="${t1#* }" -v b="${t2#* }" -v n=$((lat2 - lat1)) \
						'BEGIN { if (a != "" && b != "" && b > a) printf "%.3f", (b - a) / n * 1e6 }')
					[ -n "$c" ] && echo "$dev,send.lat.8.cpu,$r,$t,$c,us CPU per round trip" >>"$csv"
				fi
				# Both runs gave a time, but the longer one was not longer: TCG's noise
				# outweighed the iterations it adds, so the repetition has no value (dropped
				# and counted). A run that gave no time is a failure.
				if [ -z "$v" ] && [ -n "$t1" ] && [ -n "$t2" ]; then noisy="$noisy $k-$t#$r"
				elif [ -z "$v" ]; then bad="$bad $k-$t#$r"; fi
			done
		done
	done
	if [ -z "$bad" ]; then record PASS "bench-$dev" "$reps repetitions of write bw ($size B) and send latency (8 B), ndkperf and perftest, wall-clock differences${noisy:+; dropped (no longer with more iterations):$noisy}"
	else record FAIL "bench-$dev" "no result:$bad (results/bench-$dev.log)"; fi
}

for g in $CELLS; do
	case $g in
	ndkinfo) cell_ndkinfo ;;
	conform-rxe) cell_conform rxe "$RXE_IP" ;;
	conform-siw) cell_conform siw "$SIW_IP" ;;
	perf-rxe) cell_perf rxe "$RXE_IP" ;;
	perf-siw) cell_perf siw "$SIW_IP" ;;
	reads-siw) cell_reads siw "$SIW_IP" ;;
	reads-rxe) cell_reads rxe "$RXE_IP" ;;
	ping-rxe) cell_ping rxe "$RXE_IP" ;;
	ping-siw) cell_ping siw "$SIW_IP" ;;
	cross-siw) cell_cross ;;
	tools-rxe) cell_tools rxe "$RXE_IP" ;;
	tools-siw) cell_tools siw "$SIW_IP" ;;
	bench-rxe) cell_bench rxe "$RXE_IP" ;;
	bench-siw) cell_bench siw "$SIW_IP" ;;
	wdk-rxe) cell_wdk rxe "$RXE_IP" rxed0 ;;
	wdk-siw) cell_wdk siw "$SIW_IP" siwd0 ;;
	sysview-rxe) cell_sysview rxe "$RXE_IP" ;;
	sysview-siw) cell_sysview siw "$SIW_IP" ;;
	esac
done
say "done"
