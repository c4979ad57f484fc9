#!/usr/bin/env bash
# Runs one example (examples/) against itself on loopback, server and client as separate
# processes, and checks what both print.
# Usage: run.sh BINDIR EXAMPLE ipv4|ipv6
# The server listens on port 0 and prints the port the provider picked, so concurrent tests
# never race for a port; every process runs under a timeout.
set -euo pipefail
bindir=$1 name=$2 family=$3
bin=$bindir/$name
case $family in
  ipv4) host=127.0.0.1; shown=127.0.0.1 ;;
  ipv6) host='[::1]'; shown=::1
        grep -Eq '^0{31}1 .* lo$' /proc/net/if_inet6 2>/dev/null || { echo "SKIP: lo has no ::1"; exit 77; } ;;
  *) echo "usage: $0 BINDIR EXAMPLE ipv4|ipv6" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

# What each example is run with and must print, line for line (grep -xF); @S@ is the server's
# address without the port, @A@ the one the client was given.
clients=1 server_args=() client_args=()
case $name in
  hello)
    server_expect=("hello: received 'ping' from @S@, answered 'pong'")
    client_expect=("hello: received 'pong' from @A@") ;;
  rdma-write)
    server_expect=("rdma-write: @S@ wrote 31 bytes into our buffer: 'written by rdma-write with RDMA'")
    client_expect=("rdma-write: wrote 31 bytes into @A@ and told it so") ;;
  read-server)
    clients=3 server_args=(-n 3)
    server_expect=("read-server: served 3 clients")
    client_expect=("read-server: read 40 bytes from @A@: 'the read-server's buffer, read with RDMA'") ;;
  srq-server)
    clients=3 server_args=(-n 3)
    server_expect=("srq-server: served 3 clients, 12 messages through one SRQ and one CQ")
    client_expect=("srq-server: sent 4 messages to @A@, the server counted 4") ;;
  teardown-client-first)
    name=teardown bin=$bindir/teardown client_args=(-f)
    server_expect=("teardown: the peer disconnected; flushed 4 receives; closed")
    client_expect=("teardown: disconnected first; 4 receives came back flushed; closed") ;;
  teardown-server-first)
    name=teardown bin=$bindir/teardown server_args=(-f)
    server_expect=("teardown: disconnected first; 4 receives came back flushed; closed")
    client_expect=("teardown: the peer disconnected; flushed 4 receives; closed") ;;
  *) echo "FAIL: no expectations for example '$name'"; exit 1 ;;
esac
[ -x "$bin" ] || { echo "FAIL: $bin is not built"; exit 1; }

timeout 30 "$bin" -s "$host:0" "${server_args[@]}" >"$tmp/server.out" 2>"$tmp/server.err" &
server_pid=$!
addr=
for _ in $(seq 100); do
  addr=$(sed -n "s/^$name: listening on //p" "$tmp/server.out")
  [ -n "$addr" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$addr" ]; then
  echo "FAIL: the $name server did not say where it listens"; cat "$tmp/server.out" "$tmp/server.err"; exit 1
fi

pids=()
for i in $(seq "$clients"); do
  timeout 30 "$bin" -c "$addr" "${client_args[@]}" >"$tmp/client$i.out" 2>"$tmp/client$i.err" &
  pids+=($!)
done
fail=0
for i in $(seq "$clients"); do
  if ! wait "${pids[$((i - 1))]}"; then
    echo "FAIL: client $i of $name exited non-zero"; cat "$tmp/client$i.err"; fail=1
  fi
done
rc=0
wait "$server_pid" || rc=$?
server_pid=
[ "$rc" -eq 0 ] || { echo "FAIL: the $name server exited with $rc"; cat "$tmp/server.err"; fail=1; }

# Checks that file holds exactly the listed lines (plus the server's "listening on").
expect() {
  local file=$1; shift
  local want=("$@") line n
  for line in "${want[@]}"; do
    line=${line//@S@/$shown}; line=${line//@A@/$addr}
    grep -qxF -- "$line" "$file" || { echo "FAIL: $file lacks the line: $line"; echo "--- it has:"; cat "$file"; fail=1; }
  done
  n=$(grep -vc "^$name: listening on " "$file" || true)
  [ "$n" -eq "${#want[@]}" ] || { echo "FAIL: $file has $n lines, expected ${#want[@]}"; cat "$file"; fail=1; }
}
expect "$tmp/server.out" "${server_expect[@]}"
for i in $(seq "$clients"); do expect "$tmp/client$i.out" "${client_expect[@]}"; done
[ "$fail" -eq 0 ] || exit 1
echo "$name over $family: server and $clients client(s) printed what they should"
