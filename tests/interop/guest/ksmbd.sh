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
		rdma resource show cm_id 2>/dev/null | grep -q ':5445' && return 0
		sleep 0.2
	done
	return 1
}
start_ksmbd || { record FAIL setup - "ksmbd does not listen on 5445: $(tail -3 "$RES/mountd.log")"; exit 1; }
rdma resource show cm_id >"$RES/cm_id.txt" 2>&1
say "ksmbd listening: $(grep -c 5445 "$RES/cm_id.txt") rdma_cm listener(s) on 5445"

NDK=/mnt/host/ndk
export LD_LIBRARY_PATH=$NDK/lib NDK_PROVIDER_PATH=$NDK/providers PATH=$NDK/bin:$PATH
export NDK_IWARP_CRC=0 NDK_IWARP_P2P=0
export NDKSMB_USER=smbtest NDKSMB_PASSWORD=smbtest
S=//$IP/share
L=/tmp/local
mkdir -p "$L"
sha() { sha256sum "$1" | cut -d' ' -f1; }

# capture SMB Direct sessions for tshark on the host (smb2, smb_direct, iwarp): one file per
# connection, since the client may reuse its port and tshark then keeps the first one's MPA state
capture() { # NAME CMD...: run CMD under tcpdump, the capture in $PC/ksmbd-NAME.pcap
	local name=$1 tp i rc; shift
	tcpdump -i lo -s 0 -B 32768 -U -Z root -w "$PC/ksmbd-$name.pcap" "host $IP and tcp port 5445" >/tmp/tcpdump-$name.txt 2>&1 &
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
# put, then get, compared with what ksmbd's share holds on disk. SMB 3.0.2: under 3.1.1 ksmbd
# 6.1.192 refuses our signed TREE_CONNECT (its signing key differs from ours; the 3.1.1 cell
# below records it), and 3.0.2 sends TREE_CONNECT unsigned.
D302="--dialect 3.0.2"
for args in "$D302" "$D302 --depth 16 --io-size 1m" "$D302 --no-invalidate" "$D302 --depth 1 --io-size 64k"; do
	tag=$(echo "${args#"$D302"}" | tr -d ' -' | cut -c1-16); tag=${tag:-default}
	for size in 0 1 1364 65536 1048576 8388609; do
		f="$L/f$size"
		[ -f "$f" ] || head -c "$size" /dev/urandom >"$f"
		name="${tag}_$size.bin" log="$RES/$tag-$size.log"
		if ! timeout 300 ndksmb $args --json put "$f" "$S/$name" >"$log" 2>&1; then
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

j=$(timeout 120 ndksmb $D302 --sign --json put "$L/f65536" "$S/signed.bin" 2>&1)
if echo "$j" | grep -q '"signed": *true' && [ "$(sha "$L/f65536")" = "$(sha "$SHARE/signed.bin")" ]; then
	record PASS signed 65536 "signed session, every later signature verified both ways: $(echo "$j" | tr -d '\n')"
else
	record FAIL signed - "$(echo "$j" | tr -d '\n')"
fi
out=$(timeout 60 ndksmb --dialect 3.1.1 ls "$S" 2>&1) && record PASS smb311 - "3.1.1 session and tree connect" \
	|| record FAIL smb311 - "$(echo "$out" | tr '\n' ' ')"
timeout 60 ndksmb $D302 ls "$S" >"$RES/ls.log" 2>&1 && grep -q ' default_8388609.bin$' "$RES/ls.log" \
	&& record PASS ls - "$(wc -l <"$RES/ls.log") entries" || record FAIL ls - "$(tail -2 "$RES/ls.log")"
out=$(NDKSMB_PASSWORD=wrong timeout 60 ndksmb $D302 ls "$S" 2>&1)
case "$out" in *LOGON_FAILURE*) record PASS bad-password - "$out" ;; *) record FAIL bad-password - "$out" ;; esac

# throughput: SMB Direct against SMB2 over TCP to the same server (TCG: only the ratio means anything)
for tr in "" "--tcp"; do
	tag=${tr:-smbd}; tag=${tag#--}
	timeout 600 ndksmb $D302 $tr --json bench --size 32m --io-size 1m --depth 4 "$S/bench-$tag.bin" >"$RES/bench-$tag.json" 2>&1 \
		&& record PASS "bench-$tag" 33554432 "$(tr -d '\n' <"$RES/bench-$tag.json")" \
		|| record FAIL "bench-$tag" - "$(tail -1 "$RES/bench-$tag.json")"
done

# the server goes away in the middle of a transfer: a clean failure within the timeout
head -c 64m /dev/zero >"$L/big"
timeout 300 ndksmb $D302 --quiet put "$L/big" "$S/big.bin" >/dev/null 2>&1
( timeout 120 ndksmb $D302 --timeout 20000 --depth 1 --io-size 64k get "$S/big.bin" "$L/big.back" >"$RES/stop.log" 2>&1; echo "rc=$?" >>"$RES/stop.log" ) &
CP=$!
sleep 2
ksmbd.control -s >>"$RES/stop.log" 2>&1
wait "$CP"
rc=$(sed -n 's/^rc=//p' "$RES/stop.log")
case "$rc" in
0) record FAIL server-stop - "the transfer succeeded although ksmbd stopped (too fast? $(tail -2 "$RES/stop.log" | head -1))" ;;
124) record FAIL server-stop - "ndksmb hung after ksmbd stopped" ;;
*) record PASS server-stop - "rc $rc: $(grep ndksmb "$RES/stop.log" | tail -1)" ;;
esac
say "done"
grep -q '^FAIL' "$CELLS" && exit 1
exit 0
