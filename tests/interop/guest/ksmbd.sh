#!/bin/bash
# tests/interop/guest/ksmbd.sh - the guest half of the SMB Direct cells (runs INSIDE the VM, cwd =
# the 9p share /mnt/host): Linux ksmbd (ksmbd_smbdirect.ko, built by vm/build.sh) serving a tmpfs
# share over siw on 198.18.0.1:5445, and our ndksmb over our iwarp provider as the client.
# Outputs: results/cells.txt (RESULT|ksmbd|cell|bytes|detail), results/*.log, pcaps/ksmbd-*.pcap
set -uo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd /mnt/host
IP=198.18.0.1
RES=/mnt/host/results PC=/mnt/host/pcaps
mkdir -p "$RES" "$PC"
CELLS=$RES/cells.txt
: >"$CELLS"
say() { echo "[guest $(cut -d' ' -f1 /proc/uptime)] $*"; }
record() { printf '%s|ksmbd|%s|%s|%s\n' "$1" "$2" "$3" "$4" >>"$CELLS"; say "CELL ksmbd/$2: $1 ($4)"; }

ndkvm-setup >"$RES/setup.log" 2>&1 || { cat "$RES/setup.log"; record FAIL setup - "ndkvm-setup failed"; exit 1; }
modprobe -a cmac sha512_generic md4 ecb ccm gcm ctr ghash-generic nls_utf8 2>"$RES/modprobe-crypto.log"
modprobe ksmbd_smbdirect 2>"$RES/modprobe.log" || { record FAIL setup - "modprobe ksmbd_smbdirect: $(cat "$RES/modprobe.log")"; exit 1; }
# the share lives on the guest's tmpfs /tmp
SHARE=/tmp/smbshare
mkdir -p "$SHARE" /etc/ksmbd /run /var/run /var/lib
chmod 0777 "$SHARE"
grep -q '^smbtest:' /etc/passwd || echo 'smbtest:x:1000:1000:smbtest:/:/bin/false' >>/etc/passwd
grep -q '^smbtest:' /etc/group || echo 'smbtest:x:1000:' >>/etc/group
cat >/etc/ksmbd/ksmbd.conf <<EOF
[global]
	server signing = auto
	map to guest = bad user
[share]
	path = $SHARE
	read only = no
	guest ok = yes
EOF
ksmbd.adduser -a smbtest -p smbtest >"$RES/adduser.log" 2>&1 || { record FAIL setup - "ksmbd.adduser: $(cat "$RES/adduser.log")"; exit 1; }
start_ksmbd() {
	ksmbd.mountd -n >"$RES/mountd.log" 2>&1 &
	local i
	for i in $(seq 1 50); do
		rdma resource show cm_id 2>/dev/null | grep ':5445' >/dev/null && return 0
		sleep 0.2
	done
	return 1
}
start_ksmbd || { record FAIL setup - "ksmbd does not listen on 5445: $(tail -3 "$RES/mountd.log")"; exit 1; }
rdma resource show cm_id >"$RES/cm_id.txt" 2>&1
say "ksmbd listening: $(grep -c 5445 "$RES/cm_id.txt") rdma_cm listener(s) on 5445"

NDK=/mnt/host/ndk
export LD_LIBRARY_PATH=$NDK/lib NDK_PROVIDER_PATH=$NDK/providers PATH=$NDK/bin:$PATH
# our iwarp provider as the client's RNIC: without NDK_PREFER_SOFTWARE the verbs provider over
# the guest's siw device would serve the address
export NDK_IWARP_CRC=0 NDK_IWARP_P2P=0 NDK_PREFER_SOFTWARE=1
export NDKSMB_USER=smbtest NDKSMB_PASSWORD=smbtest
S=//$IP/share
L=/tmp/local
mkdir -p "$L"
sha() { sha256sum "$1" | cut -d' ' -f1; }

if [ "${KSMBD_QUICK:-0}" = 2 ]; then
	# diagnosis of concurrent RDMA Reads by ksmbd: queue depth 2..16, provider log on
	head -c 8388609 /dev/urandom >"$L/q"
	for soft in 1 0; do
		for d in 2 16; do
			NDK_PREFER_SOFTWARE=$soft NDK_LOG_LEVEL=7 timeout 120 ndksmb --json --depth $d --io-size 1m put "$L/q" "$S/q$d.bin" >"$RES/q$soft-$d.log" 2>&1
			say "quick2 soft $soft depth $d: rc $? $(grep -o '"transport":"[^"]*"' "$RES/q$soft-$d.log") $(tail -1 "$RES/q$soft-$d.log" | cut -c1-200)"
		done
	done
	dmesg >"$RES/dmesg.txt"
	exit 0
fi
# capture SMB Direct sessions for tshark on the host (smb2, smb_direct, iwarp): one file per
# connection, since the client may reuse its port and tshark then keeps the first one's MPA state
capture() { # NAME CMD...: run CMD under tcpdump, the capture in $PC/ksmbd-NAME.pcap (NAME with a
	# slash: that path under /mnt/host)
	local name=$1 tp i rc out; shift
	out=$PC/ksmbd-$name.pcap; case "$name" in */*) out=/mnt/host/$name.pcap; name=${name##*/} ;; esac
	tcpdump -i lo -s 0 -B 32768 -U -Z root -w "$out" "host $IP and tcp port 5445" >/tmp/tcpdump-$name.txt 2>&1 &
	tp=$!
	for i in $(seq 1 25); do grep -q listening /tmp/tcpdump-$name.txt 2>/dev/null && break; sleep 0.2; done
	"$@"; rc=$?
	sleep 1; kill "$tp" 2>/dev/null; wait "$tp" 2>/dev/null
	cat /tmp/tcpdump-$name.txt >>"$RES/tcpdump.txt"
	return $rc
}
head -c 70000 /dev/urandom >"$L/cap.bin"
capture put timeout 120 ndksmb --quiet put "$L/cap.bin" "$S/cap.bin" >"$RES/capture.log" 2>&1 \
	&& capture get timeout 120 ndksmb --quiet get "$S/cap.bin" "$L/cap.back" >>"$RES/capture.log" 2>&1 \
	&& [ "$(sha "$L/cap.bin")" = "$(sha "$L/cap.back")" ] \
	&& record PASS capture 70000 "put+get under tcpdump (SMB 3.1.1)" || record FAIL capture - "$(tail -2 "$RES/capture.log")"

if [ "${KSMBD_QUICK:-0}" = 1 ]; then
	ksmbd.control -d all >"$RES/debug.txt" 2>&1
	for a in "--dialect 3.0.2" "--tcp --dialect 3.0.2" "--dialect 3.1.1"; do
		say "quick ($a): $(timeout 60 ndksmb $a ls "$S" 2>&1 | tr '\n' ' ')"
	done
	dmesg >"$RES/dmesg.txt"; cat /etc/ksmbd/ksmbd.conf >"$RES/conf.txt"; ls -la /etc/ksmbd >>"$RES/conf.txt"
	ps >"$RES/ps.txt" 2>&1
	exit 0
fi
# put, then get, compared with what ksmbd's share holds on disk: every size with the defaults
# (SMB 3.1.1, the largest I/O both sides allow, so 8 MiB + 1 B crosses ksmbd's 4 MiB MaxRead/
# MaxWrite: three RDMA transfers each way), the sizes around the limits with queue depth 16 and
# 1, without remote invalidation, and in SMB 3.0.2.
for args in "" "--depth 16 --io-size 1m" "--depth 1 --io-size 64k" "--no-invalidate" "--dialect 3.0.2"; do
	tag=$(echo "$args" | tr -d ' .-' | cut -c1-16); tag=${tag:-default}
	case "$args" in
	"") sizes="0 1 1364 65536 1048576 8388609" ;;
	*16*) sizes="1048576 8388609" ;;
	*64k*) sizes="1364 1048576" ;;
	*3.0.2*) sizes=65536 ;;
	*) sizes=1048576 ;;
	esac
	for size in $sizes; do
		f="$L/f$size"
		[ -f "$f" ] || head -c "$size" /dev/urandom >"$f"
		name="${tag}_$size.bin" log="$RES/$tag-$size.log"
		# the cells past the first are captured too (results/, not decoded by the host) for a failure
		if ! capture "results/$tag-$size" timeout 300 ndksmb $args --json put "$f" "$S/$name" >"$log" 2>&1; then
			record FAIL "put-$tag-$size" - "$(tail -1 "$log")"; continue
		fi
		if [ "$(sha "$f")" != "$(sha "$SHARE/$name")" ]; then
			record FAIL "put-$tag-$size" - "share content differs"; continue
		fi
		if ! timeout 300 ndksmb $args --json get "$S/$name" "$L/back" >>"$log" 2>&1; then
			record FAIL "get-$tag-$size" - "$(tail -1 "$log")"; continue
		fi
		if [ "$(sha "$f")" != "$(sha "$L/back")" ]; then
			record FAIL "get-$tag-$size" - "content differs"; continue
		fi
		rd=$(grep -o '"\(io_size\|max_read\|max_write\|rdma_[a-z]*\)": *[0-9]*' "$log" | tr -d ' "' | sort -u | tr '\n' ' ')
		record PASS "putget-$tag-$size" "$size" "sha256 equal (client, share, fetched); $rd"
	done
done

# once over the verbs provider on the guest's siw device (both ends kernel iWARP): 8 MiB + 1 B at
# queue depth 16, so ksmbd keeps several RDMA Reads of the client's 1 MiB registrations in flight
# (root's default ulimit -l of 8 MiB is below what they pin: siw charges it even to root)
log=$RES/verbs-d16.log
if NDK_PREFER_SOFTWARE=0 timeout 300 ndksmb --depth 16 --io-size 1m --json put "$L/f8388609" "$S/verbs_d16.bin" >"$log" 2>&1 \
	&& grep -q '"transport": *"smbdirect (verbs)"' "$log" && [ "$(sha "$L/f8388609")" = "$(sha "$SHARE/verbs_d16.bin")" ] \
	&& NDK_PREFER_SOFTWARE=0 timeout 300 ndksmb --depth 16 --io-size 1m --json get "$S/verbs_d16.bin" "$L/back" >>"$log" 2>&1 \
	&& [ "$(sha "$L/f8388609")" = "$(sha "$L/back")" ]; then
	record PASS putget-verbs-d16-8388609 8388609 "the verbs provider over siw, queue depth 16: sha256 equal"
else
	record FAIL putget-verbs-d16-8388609 - "$(grep -v '^ndk ' "$log" | tail -1)"
fi

j=$(timeout 120 ndksmb --sign --json put "$L/f65536" "$S/signed.bin" 2>&1)
if grep -q '"signed": *true' <<<"$j" && [ "$(sha "$L/f65536")" = "$(sha "$SHARE/signed.bin")" ]; then
	record PASS signed 65536 "signed session, every later signature verified both ways: $(echo "$j" | tr -d '\n')"
else
	record FAIL signed - "$(echo "$j" | tr -d '\n')"
fi
timeout 60 ndksmb ls "$S" >"$RES/ls.log" 2>&1 && grep -q ' default_8388609.bin$' "$RES/ls.log" \
	&& record PASS ls - "$(wc -l <"$RES/ls.log") entries" || record FAIL ls - "$(tail -2 "$RES/ls.log")"
out=$(NDKSMB_PASSWORD=wrong timeout 60 ndksmb ls "$S" 2>&1)
case "$out" in *LOGON_FAILURE*) record PASS bad-password - "$out" ;; *) record FAIL bad-password - "$out" ;; esac

# throughput: SMB Direct against SMB2 over TCP (port 445) to the same server, interleaved (the
# order alternates per round) so that drift of the TCG host hits both alike; only ratios mean
# anything under TCG. Two shapes: 1 MiB I/Os at depth 4, 64 KiB I/Os at depth 1.
field() { # JSON SECTION KEY: the number of "KEY" inside the "SECTION" object
	grep -o "\"$2\": *{[^}]*}" <<<"$1" | grep -o "\"$3\": *[0-9.e+-]*" | grep -o '[0-9.e+-]*$'
}
BENCH=$RES/bench.txt
: >"$BENCH"
for shape in "1m 4 8m" "64k 1 1m"; do
	set -- $shape
	io=$1 dp=$2 sz=$3 ok=1
	for round in 1 2 3; do
		order="smbd tcp"; [ $((round % 2)) = 0 ] && order="tcp smbd"
		for tr in $order; do
			fl=""; [ "$tr" = tcp ] && fl=--tcp
			j=$(timeout 600 ndksmb $fl --json bench --size "$sz" --io-size "$io" --depth "$dp" "$S/bench-$tr.bin" 2>&1) || { ok=0; echo "$tr $io $dp round $round FAILED: $j" >>"$BENCH"; continue; }
			echo "$tr io=$io depth=$dp round=$round write_mb_s=$(field "$j" write mb_per_s) read_mb_s=$(field "$j" read mb_per_s) write_p50_us=$(field "$j" write lat_p50_us) read_p50_us=$(field "$j" read lat_p50_us)" >>"$BENCH"
		done
	done
	# ratio of the medians of three rounds: SMB Direct / TCP
	med() { grep "^$1 io=$io depth=$dp " "$BENCH" | grep -o "$2=[0-9.e+-]*" | cut -d= -f2 | sort -g | sed -n 2p; }
	line=""
	for k in write_mb_s read_mb_s write_p50_us read_p50_us; do
		a=$(med smbd $k) b=$(med tcp $k)
		r=$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }')
		line+="$k smbd=$a tcp=$b ratio=$r; "
	done
	echo "ratio io=$io depth=$dp size=$sz (median of 3): $line" >>"$BENCH"
	[ $ok = 1 ] && record PASS "bench-$io-d$dp" "$sz" "$line" || record FAIL "bench-$io-d$dp" - "$(grep FAILED "$BENCH" | tail -1)"
done
# a transcript for the README: ndksmb get with its progress line, over SMB Direct
timeout 120 ndksmb get "$S/default_8388609.bin" "$L/readme.bin" >"$RES/transcript.txt" 2>&1 \
	&& [ "$(sha "$L/readme.bin")" = "$(sha "$SHARE/default_8388609.bin")" ] \
	&& record PASS transcript 8388609 "ndksmb get over SMB Direct" || record FAIL transcript - "$(tail -1 "$RES/transcript.txt")"

# the server drops the connection in the middle of a transfer: a clean failure within the
# timeout. `ksmbd.control -s` would be the obvious way, but with a connection open it panics
# Debian 6.1's kernel now and then (list poison in ksmbd_conn_transport_destroy, seen in a
# fresh-clone run), so the cell aborts ksmbd's end of the TCP connection instead (`ss -K`: the
# kernel resets it, siw ends the QP, ksmbd tears the connection down as after any disconnect).
# A put of 64 KiB writes: the share's file grows with each one. 64 MiB, so that the reset
# lands inside the transfer on a fast host too (an 8 MiB put once ended within the 0.2 s the
# watch below used to sleep).
modprobe -a inet_diag tcp_diag 2>>"$RES/modprobe.log"
head -c 67108864 /dev/zero >"$L/stop.src"
( timeout 120 ndksmb --timeout 20000 --depth 1 --io-size 64k put "$L/stop.src" "$S/stop.bin" >"$RES/stop.log" 2>&1; echo "rc=$?" >>"$RES/stop.log" ) &
CP=$!
# drop it once data flows (the share's file holds 256 KiB)
for i in $(seq 1 3000); do
	[ "$(stat -c %s "$SHARE/stop.bin" 2>/dev/null || echo 0)" -gt 262144 ] && break
	sleep 0.01
done
at=$(stat -c %s "$SHARE/stop.bin" 2>/dev/null || echo 0)
t0=$(date +%s)
ss -K -t state established '( sport = :5445 )' >>"$RES/stop.log" 2>&1
wait "$CP"
dt=$(( $(date +%s) - t0 ))
rc=$(sed -n 's/^rc=//p' "$RES/stop.log")
case "$rc" in
0) record FAIL server-drop - "the transfer succeeded although ksmbd's end was reset at $at B (too fast, or ss -K found no socket: $(grep -c ESTAB "$RES/stop.log") killed)" ;;
124) record FAIL server-drop - "ndksmb hung after ksmbd's end was reset" ;;
*) record PASS server-drop "$at" "reset at $at B: ndksmb rc $rc after ${dt}s: $(grep ndksmb "$RES/stop.log" | tail -1)" ;;
esac
say "done"
grep -q '^FAIL' "$CELLS" && exit 1
exit 0
