#!/usr/bin/env bash
# The provider's own capture (iwarp.capture, ndk-iwarp(7) PACKET CAPTURE): an ndkperf server and
# client each write their connection to a pcapng file, over IPv4 and IPv6, with MPA CRC on and
# off, for Write, Read and Send. tshark (plain -r, the two payload heuristics switched off) must
# decode MPA, DDP and RDMAP with no malformed frame and, with CRC, every CRC good; the bytes one
# side captured sending must be the bytes the other side captured receiving (sum and content per
# direction), and both files must carry the kernel's initial sequence numbers (the same ISNs on
# both sides). iwarp.capture_port captures only the named local port. Runs in a private network
# namespace; skips without tshark or unshare.
# Usage: wire_capture.sh BUILD_DIR [ipv4|ipv6|read|port|all]
set -euo pipefail
build=$1
if [ -z "${NDK_WIRE_IN_NETNS:-}" ]; then
  for t in tshark unshare ip ss; do
    command -v "$t" >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
  done
  NDK_WIRE_IN_NETNS=1 exec unshare -n "$0" "$@" || { echo "SKIP: cannot create a network namespace (run as root)"; exit 77; }
fi
ip link set lo up
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
export NDK_PROVIDER_PATH=$build/providers NDK_CONFIG=/nonexistent
ndkperf=$build/tools/ndkperf/ndkperf
TS=(tshark -n --disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp)
fail() { echo "FAIL: $*"; exit 1; }

wait_listen() {
  for _ in $(seq 100); do ss -ltnH "sport = :$1" | grep -q . && return 0; sleep 0.05; done
  fail "server on port $1 did not listen"
}

# One pass of tshark over a capture: per frame, ports, absolute sequence number, SYN/ACK flags,
# RDMAP opcodes, MPA Request/Reply keys, payload (tshark starts slowly: two runs per file only).
fields() {
  "${TS[@]}" -o tcp.relative_sequence_numbers:FALSE -r "$1" -T fields -E separator=';' \
    -e tcp.srcport -e tcp.dstport -e tcp.seq -e tcp.flags.syn -e tcp.flags.ack -e iwarp_rdma.opcode \
    -e iwarp_mpa.key.req -e iwarp_mpa.key.rep -e tcp.payload -e _ws.malformed 2>/dev/null
}
# Per direction (src port - dst port): the payload hex into OUT.<dir>, and the byte count.
dump_dirs() {
  awk -F';' -v out="$2" '$9 != "" { f = out "." $1 "-" $2; printf "%s", $9 > f; n[$1 "-" $2] += length($9) / 2 }
                        END { for (k in n) print k, n[k] }' "$1" | sort
}

port=18731
run_case() {   # family op crc
  local fam=$1 op=$2 crc=$3 addr sfile cfile
  if [ "$fam" = 6 ]; then addr="[::1]"; else addr=127.0.0.1; fi
  port=$((port + 1))
  sfile=$tmp/s-$fam-$op-$crc.pcapng
  cfile=$tmp/c-$fam-$op-$crc.pcapng
  NDK_IWARP_CRC=$crc NDK_IWARP_CAPTURE=$sfile "$ndkperf" -s "$addr:$port" --once >"$tmp/s.log" 2>&1 &
  local sp=$!
  pids+=($sp)
  wait_listen $port
  local crcopt=()
  rm -rf "$tmp/cl" && mkdir "$tmp/cl"
  [ "$crc" = 1 ] && crcopt=(--crc)
  NDK_IWARP_CRC=$crc NDK_IWARP_CAPTURE=$tmp/cl/c-%p.pcapng "$ndkperf" -c "$addr:$port" -t "$op" -z 5000 -n 30 -d 4 \
      "${crcopt[@]}" --verify >"$tmp/c.log" 2>&1 || { cat "$tmp/c.log"; fail "ndkperf -t $op"; }
  wait $sp || true
  mv "$tmp"/cl/c-*.pcapng "$cfile"
  for f in "$sfile" "$cfile"; do
    [ -s "$f" ] || fail "no capture $f"
    # The full dissection (CRC verdicts) of the server's file; fields of both.
    mal=0 good=0 bad=0
    if [ "$f" = "$sfile" ]; then
      "${TS[@]}" -r "$f" -V >"$tmp/v.txt" 2>&1 || fail "tshark cannot read $f: $(head -3 "$tmp/v.txt")"
      mal=$(grep -c 'Malformed' "$tmp/v.txt" || true)
      good=$(grep -c 'Good CRC32' "$tmp/v.txt" || true)
      bad=$(grep -c 'Bad CRC32' "$tmp/v.txt" || true)
    fi
    fields "$f" >"$f.txt"
    fpdus=$(cut -d';' -f6 "$f.txt" | tr ',' '\n' | grep -c . || true)
    local req rep
    req=$(cut -d';' -f7 "$f.txt" | grep -c . || true)
    rep=$(cut -d';' -f8 "$f.txt" | grep -c . || true)
    mal=$((mal + $(cut -d';' -f10 "$f.txt" | grep -c . || true)))
    echo "IPv$fam $op crc=$crc $(basename "$f"): $fpdus FPDUs, MPA Request $req Reply $rep, good CRC $good, bad $bad, malformed $mal"
    [ "$mal" -eq 0 ] || { grep -m3 -B15 Malformed "$tmp/v.txt" || true; fail "malformed frames in $f"; }
    [ "$bad" -eq 0 ] || fail "bad CRCs in $f"
    [ "$req" -eq 1 ] && [ "$rep" -eq 1 ] || fail "tshark did not find the MPA Request and Reply in $f"
    [ "$fpdus" -ge 30 ] || fail "only $fpdus FPDUs decoded in $f"
    if [ "$crc" = 1 ] && [ "$f" = "$sfile" ]; then [ "$good" -ge "$fpdus" ] || fail "not every FPDU's CRC checked in $f"; fi
  done
  # What one side sent is what the other received: sums and content, per direction.
  local ds dc
  ds=$(dump_dirs "$sfile.txt" "$tmp/sd")
  dc=$(dump_dirs "$cfile.txt" "$tmp/cd")
  [ "$ds" = "$dc" ] || fail "payload bytes per direction differ: server [$ds] client [$dc]"
  for d in "$tmp"/sd.*; do
    cmp -s "$d" "$tmp/cd.${d##*/sd.}" || fail "payload content of ${d##*/sd.} differs between the two captures"
  done
  rm -f "$tmp"/sd.* "$tmp"/cd.*
  echo "  bytes per direction (src-dst bytes), equal in both files: $(echo $ds)"
  # The kernel's sequence numbers: both files carry the same absolute ISNs.
  local is ic
  is=$(awk -F';' '$4 == 1 { print $3 }' "$sfile.txt" | sort)
  ic=$(awk -F';' '$4 == 1 { print $3 }' "$cfile.txt" | sort)
  [ -n "$is" ] && [ "$is" = "$ic" ] || fail "initial sequence numbers differ: server [$is] client [$ic]"
  grep -q 'random initial sequence numbers' "$tmp/s.log" "$tmp/c.log" && fail "the kernel's sequence numbers were not read"
  return 0
}

case ${2:-all} in
  ipv4) run_case 4 write 1; run_case 4 write 0 ;;
  ipv6) run_case 6 write 1; run_case 6 send 0 ;;
  read) run_case 4 read 1 ;;
  port) ;;
  *) for fam in 4 6; do for crc in 1 0; do run_case $fam write $crc; done; done; run_case 4 read 1; run_case 6 send 0 ;;
esac
[ "${2:-all}" = all ] || [ "${2:-all}" = port ] || { echo "PASS: captures decode as MPA/DDP/RDMAP, bytes and ISNs agree between the two sides"; exit 0; }

# capture_port: a server whose port is not the one named writes nothing; the named port is captured.
port=$((port + 1))
NDK_IWARP_CAPTURE_PORT=$((port + 100)) NDK_IWARP_CAPTURE=$tmp/none.pcapng "$ndkperf" -s 127.0.0.1:$port --once >"$tmp/s.log" 2>&1 &
sp=$!; pids+=($sp)
wait_listen $port
"$ndkperf" -c 127.0.0.1:$port -t write -z 4096 -n 10 >"$tmp/c.log" 2>&1 || fail "ndkperf (capture_port)"
wait $sp || true
[ ! -e "$tmp/none.pcapng" ] || fail "capture_port=$((port + 100)) captured the connection on port $port"
port=$((port + 1))
NDK_IWARP_CAPTURE_PORT=$port NDK_IWARP_CAPTURE=$tmp/one.pcapng "$ndkperf" -s 127.0.0.1:$port --once >"$tmp/s.log" 2>&1 &
sp=$!; pids+=($sp)
wait_listen $port
"$ndkperf" -c 127.0.0.1:$port -t write -z 4096 -n 10 >"$tmp/c.log" 2>&1 || fail "ndkperf (capture_port)"
wait $sp || true
n=$(fields "$tmp/one.pcapng" | awk -F';' '$4 == 1 && $5 == 0 { print $2 }' | sort -u)
[ "$n" = "$port" ] || fail "capture_port=$port: SYNs to [$n]"
# On a client the key names the client's own (ephemeral) port, never the server's: a client
# given the server's port writes nothing, and one given its local port captures its connection.
# The namespace's ephemeral range is narrowed to one port so that the client's port is known.
port=$((port + 1))
"$ndkperf" -s 127.0.0.1:$port --once >"$tmp/s.log" 2>&1 &
sp=$!; pids+=($sp)
wait_listen $port
NDK_IWARP_CAPTURE_PORT=$port NDK_IWARP_CAPTURE=$tmp/cnone.pcapng "$ndkperf" -c 127.0.0.1:$port -t write -z 4096 -n 10 \
  >"$tmp/c.log" 2>&1 || fail "ndkperf client (capture_port = the server's port)"
wait $sp || true
[ ! -e "$tmp/cnone.pcapng" ] || fail "a client with capture_port=$port (the server's port) captured its connection"
cport=40123
echo "$cport $cport" >/proc/sys/net/ipv4/ip_local_port_range || fail "cannot narrow ip_local_port_range in the test's namespace"
port=$((port + 1))
"$ndkperf" -s 127.0.0.1:$port --once >"$tmp/s.log" 2>&1 &
sp=$!; pids+=($sp)
wait_listen $port
NDK_IWARP_CAPTURE_PORT=$cport NDK_IWARP_CAPTURE=$tmp/cone.pcapng "$ndkperf" -c 127.0.0.1:$port -t write -z 4096 -n 10 \
  >"$tmp/c.log" 2>&1 || { cat "$tmp/c.log"; fail "ndkperf client (capture_port = its own port $cport)"; }
wait $sp || true
[ -s "$tmp/cone.pcapng" ] || fail "a client with capture_port=$cport (its own port) captured nothing"
n=$(fields "$tmp/cone.pcapng" | awk -F';' '$4 == 1 && $5 == 0 { print $1 "->" $2 }' | sort -u)
[ "$n" = "$cport->$port" ] || fail "client capture_port=$cport: SYNs [$n], expected $cport->$port"
echo "capture_port: only the named port's connection is captured (a server's listener port, a client's own port)"
echo "PASS: captures decode as MPA/DDP/RDMAP (IPv4, IPv6, CRC on and off), bytes and ISNs agree between the two sides"
