#!/usr/bin/env bash
# The main demo: what the runtime sees on this machine (ndkinfo), then a server and a client
# process on loopback moving data with RDMA Writes, RDMA Reads and Sends through the runtime and
# the iwarp provider, with ndkperf's live progress line and its result tables. Each operation
# runs twice: first unverified (the bandwidth), then with every payload checked (the shared
# 64-bit-word pattern; the check itself is fast, but verification keeps a slot per message in
# flight, so more memory is touched than in the unverified run).
# The tools find the build tree's providers by themselves (NDK_PROVIDER_PATH still wins).
set -euo pipefail
build=${1:-build/release}
ndkinfo=$build/tools/ndkinfo/ndkinfo
ndkperf=$build/tools/ndkperf/ndkperf
port=${NDK_DEMO_PORT:-18515}
seconds=${NDK_DEMO_SECONDS:-3}
verify_seconds=${NDK_DEMO_VERIFY_SECONDS:-2}

echo "== ndkinfo: NDK providers and adapters on this machine"
"$ndkinfo" --adapter lo

server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT
echo
echo "== ndkperf server on 127.0.0.1:$port (a second process)"
"$ndkperf" -s "127.0.0.1:$port" &
server_pid=$!
# Wait until the server listens (ndkinfo lists its endpoint), at most 10 s.
for _ in $(seq 100); do
  "$ndkinfo" --adapter lo --endpoints 2>/dev/null | grep "127.0.0.1:$port" >/dev/null && break
  sleep 0.1
done

for op in write read send; do
  echo
  echo "== RDMA ${op^^}: 64 KiB messages for ${seconds} s, payloads NOT verified (the bandwidth)"
  "$ndkperf" -c "127.0.0.1:$port" -t "$op" -z 65536 -D "$seconds"
  echo "== RDMA ${op^^}: the same for ${verify_seconds} s, every payload VERIFIED (correctness)"
  "$ndkperf" -c "127.0.0.1:$port" -t "$op" -z 65536 -D "$verify_seconds" --verify
done
echo
echo "== 8-byte Send/Receive latency"
"$ndkperf" -c "127.0.0.1:$port" -t send --lat -z 8 -n 2000
