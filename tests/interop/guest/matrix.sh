#!/bin/bash
# tests/interop/guest/matrix.sh - the guest half of the interop matrix (runs INSIDE the VM, cwd =
# the 9p share /mnt/host). One VM boot runs every cell of one siw variant.
#
# Inputs (the share, prepared by tests/interop/run.sh):
#   params.env   VARIANT (default|crc|mpav1|p2p), OUR_ENV (NDK_IWARP_* settings of our side),
#                RPING_SIZES, RPING_ITERS, UCMA_SIZES, UCMA_ITERS
#   ndk/{bin,lib,providers}   our freshly built tools, libndk.so and providers
# Outputs: results/cells.txt (one line per cell: RESULT|variant|cell|bytes|detail),
#          results/<cell>.log (commands, outputs, exit codes), pcaps/<variant>-<cell>.pcap
# Everything runs inside the guest on 198.18.0.1 (siw0 on the dummy siwd0); nothing leaves it.
set -uo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd /mnt/host
# shellcheck disable=SC1091
. ./params.env
IP=198.18.0.1
RES=/mnt/host/results PC=/mnt/host/pcaps
mkdir -p "$RES" "$PC"
CELLS=$RES/cells.txt
: >"$CELLS"
T_START=$(cut -d. -f1 /proc/uptime)
PORT=17000
STALL=${STALL:-20}

now_s() { local u _; read -r u _ </proc/uptime; NOW=${u%.*}; }
say() { echo "[guest $(cut -d' ' -f1 /proc/uptime)] $*"; }
elapsed() { echo $(( $(cut -d. -f1 /proc/uptime) - T_START )); }
# record RESULT CELL BYTES DETAIL
record() {
	printf '%s|%s|%s|%s|%s\n' "$1" "$VARIANT" "$2" "$3" "$4" >>"$CELLS"
	say "CELL $VARIANT/$2: $1 ($4)"
}

say "variant $VARIANT: setting up siw0 on siwd0 ($IP)"
ndkvm-setup >"$RES/setup.log" 2>&1 || { cat "$RES/setup.log"; record FAIL setup "-" "ndkvm-setup failed"; exit 1; }
cat "$RES/setup.log"
{ uname -r; ip -br addr; rdma link show; ibv_devices; grep -E '^(siw|iw_cm|rdma_cm) ' /proc/modules; } >"$RES/env.txt" 2>&1

# our side: binaries from the host build, found through the share
NDK=/mnt/host/ndk
export LD_LIBRARY_PATH=$NDK/lib NDK_PROVIDER_PATH=$NDK/providers
# the siw matrix is about our iwarp provider; the verbs provider has its own cells (verbs.sh)
export NDK_PROVIDERS=iwarp
export PATH=$NDK/bin:$PATH
# our provider's MPA settings for this variant (NDK_IWARP_CRC / _P2P / _MPA_REV, from params.env)
read -r -a OURENV <<<"$OUR_ENV"
say "our side: ${OURENV[*]}"

# one cell: run a server and a client under tcpdump.
#   cell NAME TIMEOUT CAP_PACKETS PORT "server cmd" "client cmd"
# Sets CELL_SRC, CELL_CRC (exit codes; 124 = timeout) and writes results/NAME.log and the pcap.
cell() {
	local name=$1 tmo=$2 cap=$3 port=$4 scmd=$5 ccmd=$6 log=$RES/$1.log pcap=/tmp/cell.pcap sp tp cp i
	say "cell $name (timeout ${tmo}s, port $port)"
	: >"$log"
	rm -f "$pcap"
	tcpdump -i lo -s 0 -B 32768 -U -Z root ${cap:+-c $cap} -w "$pcap" "host $IP and tcp port $port" >/tmp/tcpdump.txt 2>&1 &
	tp=$!
	local until NOW
	now_s; until=$((NOW + 5))
	while ! grep -q listening /tmp/tcpdump.txt 2>/dev/null; do now_s; [ "$NOW" -ge "$until" ] && break; sleep 0.2; done
	echo "## server: $scmd" >>"$log"
	timeout -k 5 "$tmo" env "${OURENV[@]}" sh -c "$scmd" >/tmp/cell.server 2>/tmp/cell.server.err &
	sp=$!
	# wait until something listens on the port (siw's listener and ours are both TCP listeners);
	# deadlines use the clock, not loop counts: process start-up is slow under TCG
	now_s; until=$((NOW + 10))
	while ! ss -ltnH "sport = :$port" 2>/dev/null | grep -q .; do
		kill -0 $sp 2>/dev/null || break
		now_s; [ "$NOW" -ge "$until" ] && break
		sleep 0.3
	done
	echo "## client: $ccmd" >>"$log"
	timeout -k 5 "$tmo" env "${OURENV[@]}" sh -c "$ccmd" >/tmp/cell.client 2>/tmp/cell.client.err &
	cp=$!
	# stall watchdog: both ends print progress (rping -v: one line per iteration); when neither
	# output nor the capture grew for STALL seconds the cell is stopped instead of waiting for tmo
	local last="" same=0 now
	while kill -0 $cp 2>/dev/null; do
		sleep 1
		now="$(stat -c %s /tmp/cell.client /tmp/cell.server /tmp/cell.client.err /tmp/cell.server.err "$pcap" 2>/dev/null | tr '\n' ' ')"
		if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0; last=$now; fi
		if [ "$same" -ge "$STALL" ]; then
			echo "## no progress for ${STALL}s (outputs and capture unchanged): stopping the cell" >>"$log"
			echo "harness: no progress for ${STALL}s, stopped" >>/tmp/cell.client.err
			kill $cp $sp 2>/dev/null
			break
		fi
	done
	wait $cp
	CELL_CRC=$?
	[ "$same" -ge "$STALL" ] && CELL_CRC=124
	# the server ends by itself once the client disconnected; give it a little time (less when
	# the client failed: then the server may never have seen a connection)
	now_s; until=$((NOW + 10)); [ "$CELL_CRC" = 0 ] || until=$((NOW + 3))
	while kill -0 $sp 2>/dev/null; do now_s; [ "$NOW" -ge "$until" ] && break; sleep 0.3; done
	if kill -0 $sp 2>/dev/null; then
		echo "## server still running after the client ended: killed" >>"$log"
		kill $sp 2>/dev/null
	fi
	wait $sp
	CELL_SRC=$?
	sleep 0.5
	kill -INT $tp 2>/dev/null; wait $tp 2>/dev/null
	# stdout and stderr are kept apart so that rping's unbuffered stderr lines cannot split its
	# per-iteration stdout lines
	{ echo "## server exit $CELL_SRC, stderr:"; head -c 4000 /tmp/cell.server.err
	  echo "## server stdout:"; grep -av "ping data: rdma-ping-" /tmp/cell.server | head -c 20000; echo "(ping data lines: $(grep -ac "ping data: rdma-ping-" /tmp/cell.server))"
	  echo "## client exit $CELL_CRC, stderr:"; head -c 4000 /tmp/cell.client.err
	  echo "## client stdout:"; grep -av "ping data: rdma-ping-" /tmp/cell.client | head -c 20000; echo "(ping data lines: $(grep -ac "ping data: rdma-ping-" /tmp/cell.client))"
	  echo "## tcpdump:"; cat /tmp/tcpdump.txt; } >>"$log"
	[ -s "$pcap" ] && cp "$pcap" "$PC/$VARIANT-$name.pcap"
	return 0
}
why() { # a one-line reason from a cell's outputs
	local w
	local f=(/tmp/cell.client.err /tmp/cell.server.err /tmp/cell.client /tmp/cell.server)
	w=$( { grep -ha '^ndkping\|^harness' "${f[@]}" | grep -v 'listening on'
		grep -haiE 'error|fail|invalid|mismatch|unknown|usage|not found|refused|reset|timed? ?out|cannot|unable|no such' "${f[@]}"; } 2>/dev/null | grep -av 'ping data:' | awk '!seen[$0]++' | head -2 | cut -c1-200 | tr '\n' ' ')
	echo "server rc=$CELL_SRC client rc=$CELL_CRC${w:+: $w}"
}
# rping_errors FILE: lines of a Linux rping output that mean failure ("wait for RDMA_READ_ADV
# state 10" is how the server notices that the client disconnected: the normal end)
rping_errors() {
	grep -ahE 'error|mismatch|bogus|fail|wait for|unexpected|Invalid' "$1" "$1.err" | grep -avE 'wait for RDMA_READ_ADV state 10|ping data:' | head -3 | cut -c1-160 | tr '\n' ' '
}
rcs_ok() { [ "$CELL_SRC" = 0 ] && [ "$CELL_CRC" = 0 ]; }
have_ndkping() { [ -x "$NDK/bin/ndkping" ]; }

# ---------------------------------------------------------------- runtime in the guest
say "ndkinfo"
if [ -x "$NDK/bin/ndkinfo" ]; then
	timeout 30 ndkinfo >"$RES/ndkinfo.txt" 2>&1; r1=$?
	timeout 30 ndkinfo --json >"$RES/ndkinfo.json" 2>&1
	cat "$RES/ndkinfo.txt"
	if [ $r1 = 0 ] && grep -q "198.18.0.1" "$RES/ndkinfo.txt" && grep -q siwd0 "$RES/ndkinfo.txt"; then
		record PASS ndkinfo "-" "an adapter on siwd0 with 198.18.0.1 is listed"
	else
		record FAIL ndkinfo "-" "ndkinfo rc=$r1; no adapter on siwd0/198.18.0.1 in its output (results/ndkinfo.txt)"
	fi
else
	record FAIL ndkinfo "-" "ndkinfo is not in the build"
fi

# ---------------------------------------------------------------- siw <-> siw reference
PORT=$((PORT + 1))
cell siw-siw-rping 60 400 $PORT "rping -s -a $IP -p $PORT -S 4096" "rping -c -v -V -a $IP -p $PORT -C 100 -S 4096"
if rcs_ok && [ "$(grep -ac '^ping data: rdma-ping-' /tmp/cell.client)" = 100 ] && [ -z "$(rping_errors /tmp/cell.client)" ]; then
	record PASS siw-siw-rping "409600 (rping -V, 100 x 4096)" "reference: both ends Linux siw"
elif [ "$VARIANT" = mpav1 ]; then
	record XFAIL-SIW siw-siw-rping "-" "siw limitation (NOTES.md 8.10): MPA v1 passive side accepts with rdma_accept(NULL) -> ORD 0, its RDMA Read is refused; $(why)"
else
	record FAIL siw-siw-rping "-" "reference siw<->siw run failed: $(why)"
fi

# ---------------------------------------------------------------- rping (Send, RDMA Read, RDMA Write)
# rping accepts sizes 26..65535 (RPING_MIN_BUFSIZE .. RPING_BUFSIZE-1). Each size runs RPING_ITERS
# iterations. Linux rping exits 0 even when a run breaks off, so a cell is judged on the output:
# the Linux side runs with -v (one "ping data" line per completed iteration; the client also -V,
# comparing every byte) and ndkping prints one summary line with the count and the comparison.
rping_timeout() { if [ "$1" -ge 32768 ]; then echo 180; else echo 120; fi; }
rping_cap() { if [ "$1" -ge 32768 ]; then echo 600; elif [ "$1" -ge 2048 ]; then echo 2000; else echo ""; fi; }
for sz in $RPING_SIZES; do
	bytes=$((sz * RPING_ITERS))
	# our client -> siw server
	name=rping-ours2siw-$sz; PORT=$((PORT + 1))
	if have_ndkping; then
		cell $name "$(rping_timeout $sz)" "$(rping_cap $sz)" $PORT "rping -s -v -a $IP -p $PORT -S $sz" \
			"ndkping --rping -c -a $IP -p $PORT -C $RPING_ITERS -S $sz -V"
		n_siw=$(grep -ac '^server ping data: rdma-ping-' /tmp/cell.server)
		ours=$(grep -a 'ndkping --rping client:' /tmp/cell.client | head -1)
		errs=$(rping_errors /tmp/cell.server)
		if rcs_ok && [ "$n_siw" = "$RPING_ITERS" ] && [ -z "$errs" ] \
			&& echo "$ours" | grep -q "$RPING_ITERS pings of $sz bytes.*compared byte for byte: ok"; then
			record PASS $name "$bytes (ndkping -V: $RPING_ITERS x $sz)" "our client, siw rping server ($n_siw iterations served)"
		elif [ "$VARIANT" = mpav1 ] && grep -qaiE 'post send error' /tmp/cell.server /tmp/cell.server.err; then
			record XFAIL-SIW $name "-" "siw limitation (NOTES.md 8.10): MPA v1, the siw rping server accepts with rdma_accept(NULL) -> ORD 0 and cannot issue its RDMA Read; $(why)"
		else
			record FAIL $name "-" "siw server served $n_siw/$RPING_ITERS; ${errs:+siw: $errs; }$(why)"
		fi
	else
		record FAIL $name "-" "ndkping is not in the build"
	fi
	# siw client -> our server
	name=rping-siw2ours-$sz; PORT=$((PORT + 1))
	if have_ndkping; then
		cell $name "$(rping_timeout $sz)" "$(rping_cap $sz)" $PORT "ndkping --rping -s -a $IP -p $PORT -S $sz" \
			"rping -c -v -V -a $IP -p $PORT -C $RPING_ITERS -S $sz"
		n_siw=$(grep -ac '^ping data: rdma-ping-' /tmp/cell.client)
		ours=$(grep -a 'ndkping --rping server:' /tmp/cell.server | head -1)
		errs=$(rping_errors /tmp/cell.client)
		if rcs_ok && [ "$n_siw" = "$RPING_ITERS" ] && [ -z "$errs" ] \
			&& echo "$ours" | grep -q "$RPING_ITERS pings of $sz bytes.*compared byte for byte: ok"; then
			record PASS $name "$((2 * bytes)) (rping -V + ndkping: 2 x $RPING_ITERS x $sz)" "siw rping client, our server"
		else
			record FAIL $name "-" "siw client completed $n_siw/$RPING_ITERS; ${errs:+siw: $errs; }$(why)"
		fi
	else
		record FAIL $name "-" "ndkping is not in the build"
	fi
done

# ---------------------------------------------------------------- ucmatose-style Send/Receive with private data
# ndkping --cmatose runs ucmatose's exchange (both sides pre-post COUNT receives; the server sends
# COUNT messages, the client answers each). ucmatose sends uninitialised buffers and compares
# nothing, so the cell checks the counts on both ends; our private data (PDATA, on connect and on
# accept) is compared byte for byte in the capture by check-pcaps.sh.
PDATA=openndk-interop
for sz in $UCMA_SIZES; do
	bytes=$((sz * UCMA_ITERS))
	name=ucmatose-ours2siw-$sz; PORT=$((PORT + 1))
	if have_ndkping; then
		cell $name 90 2000 $PORT "ucmatose -b $IP -p $PORT -C $UCMA_ITERS -S $sz" \
			"ndkping --cmatose -s $IP -p $PORT -C $UCMA_ITERS -S $sz --pdata $PDATA"
		ours=$(grep -a 'ndkping --cmatose client:' /tmp/cell.client | head -1)
		if rcs_ok && grep -aq 'return status 0' /tmp/cell.server \
			&& echo "$ours" | grep -q "1 connection(s), $UCMA_ITERS messages of $sz bytes each way.*: ok"; then
			record PASS $name "private data ${#PDATA} B (capture); $UCMA_ITERS x $sz B each way counted" "our client, siw ucmatose server"
		else record FAIL $name "-" "$(why)"; fi
	else
		record FAIL $name "-" "ndkping is not in the build"
	fi
	name=ucmatose-siw2ours-$sz; PORT=$((PORT + 1))
	if have_ndkping; then
		cell $name 90 2000 $PORT "ndkping --cmatose -b $IP -p $PORT -C $UCMA_ITERS -S $sz --pdata $PDATA" \
			"ucmatose -s $IP -p $PORT -C $UCMA_ITERS -S $sz"
		ours=$(grep -a 'ndkping --cmatose server:' /tmp/cell.server | head -1)
		if rcs_ok && grep -aq 'return status 0' /tmp/cell.client \
			&& echo "$ours" | grep -q "1 connection(s), $UCMA_ITERS messages of $sz bytes each way.*: ok"; then
			record PASS $name "private data ${#PDATA} B (capture); $UCMA_ITERS x $sz B each way counted" "siw ucmatose client, our server"
		else record FAIL $name "-" "$(why)"; fi
	else
		record FAIL $name "-" "ndkping is not in the build"
	fi
done

# ---------------------------------------------------------------- librdmacm rdma_server / rdma_client (16-byte Send each way)
name=rdmacm-ours2siw; PORT=$((PORT + 1))
if have_ndkping; then
	cell $name 60 "" $PORT "rdma_server -s $IP -p $PORT" "ndkping --rdma-client -s $IP -p $PORT"
	if rcs_ok && grep -q 'rdma_server: end 0' /tmp/cell.server; then record PASS $name "32 (16-byte Send each way; on the wire)" "our client, librdmacm rdma_server"
	else record FAIL $name "-" "$(why)"; fi
else
	record FAIL $name "-" "ndkping is not in the build"
fi
name=rdmacm-siw2ours; PORT=$((PORT + 1))
if have_ndkping; then
	cell $name 60 "" $PORT "ndkping --rdma-server -s $IP -p $PORT" "rdma_client -s $IP -p $PORT"
	if rcs_ok && grep -q 'rdma_client: end 0' /tmp/cell.client; then record PASS $name "32 (16-byte Send each way; on the wire)" "librdmacm rdma_client, our server"
	else record FAIL $name "-" "$(why)"; fi
else
	record FAIL $name "-" "ndkping is not in the build"
fi

dmesg >"$RES/dmesg.txt"
say "variant $VARIANT done in $(elapsed)s"
grep -c '^FAIL' "$CELLS" >/dev/null && exit 1
exit 0
