#!/usr/bin/env bash
# The trace of a known ndkping run (3 pings over the iwarp provider on 127.0.0.1) has the
# expected call sequence on both ends: the control calls in order, exactly; the data path by
# count (3 Sends, each with a successful completion that carries its latency from post). The
# server writes text, the client JSON lines; ndktrace reads both and finds every object closed.
# Usage: test_trace_ndkping.sh NDKPING NDKTRACE
set -euo pipefail
ndkping=$1
ndktrace=$2
dir=$(mktemp -d)
trap 'kill $spid 2>/dev/null || true; rm -rf "$dir"' EXIT
spid=
export NDK_FILTERS=trace NDK_TRACE_PATH="$dir/t-%p.log" NDK_PROVIDERS=iwarp
fail() { echo "FAIL: $*"; for f in "$dir"/*; do echo "== $f"; head -c 20000 "$f"; done; exit 1; }

# A free port: the server's trace says when it listens (or that the port was taken).
for attempt in 1 2 3 4 5; do
  port=$((20000 + RANDOM % 30000))
  NDK_TRACE_FORMAT=text "$ndkping" -s 127.0.0.1:$port --once -q >"$dir/server.out" 2>&1 &
  spid=$!
  for _ in $(seq 100); do
    if grep -qs 'fn=NdkListen .*status=STATUS_SUCCESS' "$dir"/t-$spid.log; then break; fi
    kill -0 $spid 2>/dev/null || break
    sleep 0.05
  done
  grep -qs 'fn=NdkListen .*status=STATUS_SUCCESS' "$dir"/t-$spid.log && break
  kill $spid 2>/dev/null || true
  wait $spid 2>/dev/null || true
  rm -f "$dir"/t-$spid.log
  spid=
done
[ -n "$spid" ] || fail "the server never listened"
NDK_TRACE_FORMAT=json "$ndkping" -c 127.0.0.1:$port -C 3 -i 0.05 -q >"$dir/client.out" 2>&1 &
cpid=$!
wait $cpid || fail "ndkping client failed"
wait $spid || fail "ndkping server failed"
spid_done=$spid
spid=
slog="$dir/t-$spid_done.log"
clog="$dir/t-$cpid.log"
[ -s "$slog" ] && [ -s "$clog" ] || fail "missing trace files"

# The consumer thread's calls (tid = pid), data-path calls left out, in record order.
control() { # file pid json
  if [ "$3" = json ]; then
    grep '"ev":"call"' "$1" | grep "\"tid\":$2," | grep -oE '"fn":"[A-Za-z]+"' | sed 's/"fn":"//; s/"//'
  else
    grep ' ev=call ' "$1" | grep " tid=$2 " | grep -oE ' fn=[A-Za-z]+' | sed 's/ fn=//'
  fi | grep -vxE 'NdkSend|NdkReceive|NdkGetCqResults|NdkGetCqResultsEx|NdkArmCq' | tr '\n' ' '
}
want_server="NdkQueryAdapterInfo NdkCreateListener NdkListen NdkGetLocalAddress NdkGetConnectionData NdkCreatePd NdkCreateCq NdkCreateQp NdkCreateMr NdkRegisterMr NdkGetLocalTokenFromMr NdkGetRemoteTokenFromMr NdkAccept NdkGetLocalAddress NdkGetPeerAddress NdkDisconnect NdkCloseConnector NdkCloseQp NdkDeregisterMr NdkCloseMr NdkCloseCq NdkClosePd NdkCloseListener CloseNDKAdapter "
want_client="NdkQueryAdapterInfo NdkCreatePd NdkCreateCq NdkCreateQp NdkCreateMr NdkRegisterMr NdkGetLocalTokenFromMr NdkGetRemoteTokenFromMr NdkCreateConnector NdkConnect NdkGetConnectionData NdkCompleteConnect NdkGetLocalAddress NdkGetPeerAddress NdkDisconnect NdkCloseConnector NdkCloseQp NdkDeregisterMr NdkCloseMr NdkCloseCq NdkClosePd CloseNDKAdapter "
got_server=$(control "$slog" "$spid_done" text)
got_client=$(control "$clog" "$cpid" json)
[ "$got_server" = "$want_server" ] || fail "server sequence: $got_server"
[ "$got_client" = "$want_client" ] || fail "client sequence: $got_client"

# Data path: 3 Sends posted, 3 Send completions with a latency, all successful.
sends=$(grep -c '"ev":"call".*"fn":"NdkSend".*"status":"STATUS_SUCCESS"' "$clog" || true)
[ "$sends" = 3 ] || fail "client posted $sends Sends, not 3"
done_sends=$(grep '"ev":"cqe"' "$clog" | grep '"op":"Send"' | grep '"status":"STATUS_SUCCESS"' | grep -c '"latency_ns":[0-9]' || true)
[ "$done_sends" = 3 ] || fail "client saw $done_sends Send completions, not 3"
recvs=$(grep ' ev=cqe ' "$slog" | grep -c ' op=Receive .*latency_ns=' || true)
[ "$recvs" -ge 3 ] || fail "server saw $recvs Receive completions"
# Records name objects qp#N, carry a nanosecond timestamp and a thread id.
grep -qE '^ts=[0-9]+ tid=[0-9]+ ev=call obj=qp#1 fn=NdkReceive ' "$slog" || fail "server records' shape"
grep -q '"ev":"cb","obj":"connector#1","fn":"NdkRequestCompletion".*"call":"NdkConnect"' "$clog" ||
  fail "no record of the connect's completion callback"

"$ndktrace" "$slog" "$clog" >"$dir/summary" || fail "ndktrace failed"
grep -q ' 0 never closed' "$dir/summary" || fail "ndktrace: objects left open"
grep -qE '^  NdkSend +6 +0 ' "$dir/summary" || fail "ndktrace: NdkSend count"
echo "ok: both ends' call sequences as expected"
