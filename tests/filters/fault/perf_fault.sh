#!/usr/bin/env bash
# ndkperf under fault rules (a connection broken mid-test, a post failing every Nth time) ends
# with a clear error, without a hang, and releases everything: the verify filter, stacked above
# the fault filter, sees the client close every object before its adapter (no
# adapter-close-open-objects, no error) and writes its close summary. The server runs without
# filters and must notice and exit. Usage: perf_fault.sh NDKPERF
set -u
NDKPERF=$1
T=$(mktemp -d /tmp/ndk-perf-fault.XXXXXX)
SRV=
cleanup() {
  [ -n "$SRV" ] && kill "$SRV" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# run NAME OP RULES PATTERN: one client run under RULES; its stderr must match PATTERN.
run() {
  local name=$1 op=$2 rules=$3 pattern=$4 port
  # A port below the ephemeral range (a test beside us holding thousands of connections takes
  # ports from it), and another one if the server still cannot listen there.
  for _ in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 12000))
    env -u NDK_FILTERS "$NDKPERF" -s "127.0.0.1:$port" --once >"$T/$name.srv" 2>&1 &
    SRV=$!
    for _ in $(seq 1 100); do
      grep -q listening "$T/$name.srv" 2>/dev/null && break
      kill -0 "$SRV" 2>/dev/null || break
      sleep 0.05
    done
    grep -q listening "$T/$name.srv" 2>/dev/null && break
    kill "$SRV" 2>/dev/null
    wait "$SRV" 2>/dev/null
    SRV=
  done
  [ -n "$SRV" ] || { fail "$name: the server could not listen: $(tail -n 1 "$T/$name.srv")"; return; }
  local t0=$SECONDS
  NDK_FILTERS=verify,fault NDK_FAULT_RULES="$rules" NDK_FAULT_SEED=5 NDK_VERIFY_PATH="$T/$name.verify" \
    timeout 60 "$NDKPERF" -c "127.0.0.1:$port" -t "$op" -n 20000 -z 4096 >"$T/$name.out" 2>"$T/$name.err"
  local rc=$?
  echo "== $name ($rules): client exit $rc after $((SECONDS - t0)) s"
  sed -n '/^ndkperf:/p' "$T/$name.err"
  [ "$rc" -eq 124 ] && fail "$name: the client hung"
  [ "$rc" -eq 0 ] && fail "$name: the client succeeded under the fault"
  grep -q "$pattern" "$T/$name.err" || fail "$name: no clear error matching '$pattern': $(cat "$T/$name.err")"
  grep -q "^ndk-fault: seed 5 rule 1 " "$T/$name.err" || fail "$name: no fault was injected"
  if ! grep -q '^ndk-verify: summary' "$T/$name.verify" 2>/dev/null; then
    fail "$name: the client never closed its adapter"
  fi
  if grep '^ndk-verify: \(error\|warning adapter-close-open-objects\) ' "$T/$name.verify" 2>/dev/null; then
    fail "$name: the client misused the API or left objects open on its error path"
  fi
  local srv_rc=0
  for _ in $(seq 1 200); do kill -0 "$SRV" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$SRV" 2>/dev/null; then
    fail "$name: the server did not notice the failed client within 20 s"
    kill "$SRV"
  fi
  wait "$SRV" 2>/dev/null || srv_rc=$?
  SRV=
  echo "   server exit $srv_rc: $(tail -n 1 "$T/$name.srv")"
}

run break write 'NdkWrite:nth=300:break=connection' 'ndkperf: .*\(RDMA Write\|connection\|disconnect\)'
run break-send send 'NdkSend:nth=300:break=connection' 'ndkperf: .*\(Send\|connection\|disconnect\)'
run every-nth write 'NdkWrite:every=500:status=STATUS_INSUFFICIENT_RESOURCES' 'ndkperf: .*STATUS_INSUFFICIENT_RESOURCES'
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "ndkperf under fault: clear errors, no hang, everything released"
