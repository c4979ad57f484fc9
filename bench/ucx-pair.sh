#!/usr/bin/env bash
# One ucx_perftest measurement: server and client on loopback, both started and ended here.
# bench/run.sh runs this inside a private network namespace (unshare -n) when it can, because
# ucx_perftest's rendezvous socket listens on the wildcard address; inside the namespace only
# the loopback interface exists. Usage: ucx-pair.sh PORT TIMEOUT_S ARGS-FOR-THE-CLIENT...
# UCX_PAIR_CPUS="S C" pins the server to CPU S and the client to CPU C (taskset), as run.sh
# pins every other tool.
set -euo pipefail

port=$1 limit=$2
shift 2

# In a fresh namespace the loopback interface starts down, and TCP's congestion control is the
# machine's default again, not that of bench/run.sh's own namespace (BENCH_CC).
if [ "${UCX_PAIR_NETNS:-0}" = 1 ]; then
  ip link set lo up
  if [ -n "${UCX_PAIR_CC:-}" ]; then
    echo "$UCX_PAIR_CC" >/proc/sys/net/ipv4/tcp_congestion_control ||
      { echo "ucx-pair: cannot set TCP congestion control $UCX_PAIR_CC" >&2; exit 1; }
  fi
fi
export UCX_TLS=tcp UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n

listening() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v p=":$hex" 'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

srv_pin=()
cli_pin=()
if [ -n "${UCX_PAIR_CPUS:-}" ]; then
  read -r s c <<<"$UCX_PAIR_CPUS"
  srv_pin=(taskset -c "$s")
  cli_pin=(taskset -c "$c")
fi

server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

if listening "$port"; then
  echo "ucx-pair: port $port is already in use" >&2
  exit 1
fi
"${srv_pin[@]}" ucx_perftest -p "$port" >/dev/null 2>&1 &
server_pid=$!
for _ in $(seq 1 250); do
  listening "$port" && break
  kill -0 "$server_pid" 2>/dev/null || { echo "ucx-pair: ucx_perftest server exited" >&2; exit 1; }
  sleep 0.02
done
listening "$port" || { echo "ucx-pair: ucx_perftest server did not listen on port $port" >&2; exit 1; }

timeout -k 2 "$limit" "${cli_pin[@]}" ucx_perftest 127.0.0.1 -p "$port" "$@"
