#!/usr/bin/env bash
# Our own data traffic on the wire, decoded by tshark: in a private network namespace, dumpcap
# records RDMA Writes, RDMA Reads (request and response) and Sends between two ndkperf processes
# with MPA CRC, plus a TERMINATE (the conformance case in which a peer writes through an unknown
# token); tshark must decode them as iwarp_ddp_rdmap with every CRC good and no malformed frame.
set -euo pipefail
build=$1
if [ -z "${NDK_CAPTURE_IN_NETNS:-}" ]; then
  for t in dumpcap tshark unshare ip; do
    command -v "$t" >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
  done
  NDK_CAPTURE_IN_NETNS=1 exec unshare -n "$0" "$@" || { echo "SKIP: cannot create a network namespace (run as root)"; exit 77; }
fi
ip link set lo up
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
export NDK_PROVIDER_PATH=$build/providers NDK_CONFIG=/nonexistent
ndkperf=$build/tools/ndkperf/ndkperf
cap=$tmp/traffic.pcapng

dumpcap -q -i lo -f tcp -w "$cap" 2>"$tmp/dumpcap.log" &
pids+=($!)
for _ in $(seq 50); do [ -s "$cap" ] && break; sleep 0.1; done
[ -s "$cap" ] || { echo "SKIP: dumpcap cannot capture here: $(head -c 200 "$tmp/dumpcap.log")"; exit 77; }
sleep 0.3

"$ndkperf" -s 127.0.0.1:18700 >"$tmp/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  "$build/tools/ndkinfo/ndkinfo" --adapter lo --endpoints 2>/dev/null | grep '127.0.0.1:18700' >/dev/null && break
  sleep 0.1
done
for op in write read send; do
  "$ndkperf" -c 127.0.0.1:18700 -t $op -z 3000 -n 20 -d 4 --crc --verify >"$tmp/$op.log" 2>&1 \
    || { echo "FAIL: ndkperf -t $op"; cat "$tmp/$op.log"; exit 1; }
done
# A Terminate on the wire: the target of a Write through an unknown token sends one (CRC is the
# provider's default).
"$build/tests/conformance/ndkconform" --provider iwarp --case viol-bad-token-write --addr 127.0.0.1 >"$tmp/viol.log" 2>&1 \
  || { echo "FAIL: conformance viol-bad-token-write"; cat "$tmp/viol.log"; exit 1; }
sleep 0.5
kill -INT "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true

tshark --disable-protocol rpcordma -r "$cap" -V >"$tmp/decode.txt" 2>&1
malformed=$(grep -c 'Malformed' "$tmp/decode.txt" || true)
good=$(grep -c 'Good CRC32' "$tmp/decode.txt" || true)
bad=$(grep -c 'Bad CRC32' "$tmp/decode.txt" || true)
fpdus=$(tshark --disable-protocol rpcordma -r "$cap" -Y iwarp_ddp_rdmap -T fields -e frame.number 2>/dev/null | wc -l)
ops=$(tshark --disable-protocol rpcordma -r "$cap" -Y iwarp_ddp_rdmap -T fields -e iwarp_rdma.opcode 2>/dev/null \
      | tr ',' '\n' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
echo "capture: $fpdus frames with DDP/RDMAP, $good good CRCs, $bad bad, $malformed malformed; opcodes: $ops"
[ "$malformed" -eq 0 ] || { echo "FAIL: tshark reports malformed frames"; grep -m5 -B20 Malformed "$tmp/decode.txt"; exit 1; }
[ "$bad" -eq 0 ] || { echo "FAIL: bad CRCs"; exit 1; }
[ "$fpdus" -gt 0 ] && [ "$good" -ge "$fpdus" ] || { echo "FAIL: not every FPDU carried a verified CRC"; exit 1; }
for op in 0x00 0x01 0x02 0x03 0x07; do
  tshark --disable-protocol rpcordma -r "$cap" -Y "iwarp_rdma.opcode == $op" -T fields -e frame.number 2>/dev/null \
    | grep . >/dev/null || { echo "FAIL: no RDMAP opcode $op (Write 0, Read Request 1, Read Response 2, Send 3, Terminate 7)"; exit 1; }
done
echo "PASS: Write, Read Request, Read Response, Send and Terminate from our provider decode with good CRCs"
