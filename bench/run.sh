#!/usr/bin/env bash
# make bench: ndkperf over the iwarp provider side by side with the peers a user would pick,
# all on loopback (127.0.0.1 only), in one go.
#
#   bench/run.sh [--quick] [BUILD_DIR]       (BUILD_DIR: build/release by default)
#
# --quick (or BENCH_QUICK=1, e.g. BENCH_QUICK=1 make bench): one repetition (ABBA still), sizes
# 8 B, 64 KiB and 1 MiB, so every issue-15 target is measured once; about 10 minutes on 2 cores.
# With BENCH_ONLY it narrows further (e.g. BENCH_ONLY='^ndk\.send\.bw$|^ndk\.write\.bw$').
# Peers: raw TCP (iperf3 one stream; sockperf ping-pong busy-polled and blocking), UCX over TCP
# (ucx_perftest tag/put/get bandwidth and tag/put latency), libfabric's tcp provider (our
# bench/fi_peer: RMA write, RMA read, send/recv bandwidth and ping-pong); ours with MPA CRC off
# and on; CRC-32C speed (bench/crc_bench); what waiting alone costs (bench/wait_floor: raw TCP
# ping-pong waiting in a blocking recv, in epoll_wait, or in io_uring). Every server runs on one
# CPU and every client on another (taskset). Each repetition runs every measurement twice, in an
# order and then in the reverse order (ABBA), and counts as the mean of the two; a run during
# which other processes took more than BENCH_MAX_OTHER % of the CPU drops its repetition
# (counted). The median of the repetitions is kept, with their spread.
# Results: BUILD_DIR/bench/{table.md,results.csv,results.json,samples.csv,machine.txt,raw/}.
#
# Environment: BENCH_REPS (5), BENCH_SECONDS (1, whole seconds), BENCH_SECONDS_LARGE (3: sizes
# of 1 MiB and more), BENCH_SIZES ("8 4096 65536 1048576"), BENCH_ONLY (extended regex on
# measurement ids, e.g. 'ndk|fi\.'), BENCH_BW_POLL (1: ndkperf and fi_peer busy-poll in bandwidth
# runs; 0: they block), BENCH_DEPTH (32: ndkperf's and fi_peer's window), BENCH_CPUS ("0 1":
# server CPU, client CPU; "" to not pin), BENCH_MAX_OTHER (10), BENCH_ORDER (abba; once: every
# measurement once per repetition, half the time, no drift cancellation), BENCH_SYSCALLS (1:
# after the table, bench/syscalls.sh counts system calls per MiB, ours and the peers; 0: not),
# BENCH_MSGCOST (1: then bench/msgcost.sh, what a message costs ours in user space beside
# sockperf, from syscall tracepoints; 0: not), BENCH_COST (1: then bench/cost.sh, the cost table
# in counts: instructions, system calls, mutex pairs per operation; 0: not), BENCH_COST_ONLY (1:
# only bench/cost.sh, nothing else), BENCH_SCALE (1: then bench/scale.sh; 0: not),
# BENCH_CC (a TCP congestion control, e.g. cubic: every tool runs in a private network
# namespace whose default it is; empty: the machine's).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

usage() { # the comment block at the top of this file
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
}

quick=${BENCH_QUICK:-0}
build=
orig_args=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "bench: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) [ -z "$build" ] || { echo "bench: one build directory only" >&2; exit 2; }; build=$1 ;;
  esac
  shift
done
build=${build:-build/release}
[ -d "$build" ] || { echo "bench: build directory $build does not exist (run make build)" >&2; exit 1; }
build=$(cd "$build" && pwd)

# BENCH_COST_ONLY=1 (BENCH_COST_ONLY=1 make bench): only the cost table, counts rather than times.
if [ "${BENCH_COST_ONLY:-0}" = 1 ]; then
  exec "$here/cost.sh" "$build"
fi

reps=${BENCH_REPS:-5}
secs=${BENCH_SECONDS:-1}
secs_large=${BENCH_SECONDS_LARGE:-3}
sizes=${BENCH_SIZES:-"8 4096 65536 1048576"}
only=${BENCH_ONLY:-}
bw_poll=${BENCH_BW_POLL:-1}
depth=${BENCH_DEPTH:-32}
cpus=${BENCH_CPUS-"0 1"}
max_other=${BENCH_MAX_OTHER:-10}
order=${BENCH_ORDER:-abba}
case "$quick" in 0 | 1) ;; *) echo "bench: BENCH_QUICK must be 0 or 1" >&2; exit 2 ;; esac
if [ "$quick" = 1 ]; then
  reps=${BENCH_REPS:-1}
  sizes=${BENCH_SIZES:-"8 65536 1048576"}
fi
case "$secs" in '' | *[!0-9]* | 0) echo "bench: BENCH_SECONDS must be a whole number >= 1" >&2; exit 2 ;; esac
case "$secs_large" in '' | *[!0-9]* | 0) echo "bench: BENCH_SECONDS_LARGE must be a whole number >= 1" >&2; exit 2 ;; esac
case "$reps" in '' | *[!0-9]* | 0) echo "bench: BENCH_REPS must be a number >= 1" >&2; exit 2 ;; esac
case "$depth" in '' | *[!0-9]* | 0) echo "bench: BENCH_DEPTH must be a number >= 1" >&2; exit 2 ;; esac
case "$max_other" in '' | *[!0-9]*) echo "bench: BENCH_MAX_OTHER must be a whole percentage" >&2; exit 2 ;; esac
case "$order" in abba | once) ;; *) echo "bench: BENCH_ORDER must be abba or once" >&2; exit 2 ;; esac
# BENCH_CC: loopback TCP's speed depends on the congestion control (bbr paces a message's
# segments, and held iperf3 to half of cubic's rate on the development VM: docs/performance.md).
# The bench then re-runs itself in a private network namespace with that default, so that every
# tool, ours and the peers, uses it and the machine's own setting is left alone.
cc=${BENCH_CC:-}
cc_file=/proc/sys/net/ipv4/tcp_congestion_control
if [ -n "$cc" ] && [ "${BENCH_CC_NETNS:-0}" != 1 ]; then
  avail=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null || true)
  case " $avail " in
    *" $cc "*) ;;
    *) echo "bench: BENCH_CC=$cc is not available here (available: ${avail:-unknown})" >&2; exit 2 ;;
  esac
  # A new namespace starts with the machine's current default and may switch only to one of the
  # allowed ones (the kernel answers EPERM otherwise); where bbr booted, cubic is not among them.
  allowed=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control 2>/dev/null || true)
  case " $allowed $(cat "$cc_file" 2>/dev/null) " in
    *" $cc "*) ;;
    *) echo "bench: BENCH_CC=$cc: a private network namespace may only pick an allowed congestion" \
         "control (net.ipv4.tcp_allowed_congestion_control: ${allowed:-unknown}); allow it with" \
         "sysctl -w net.ipv4.tcp_allowed_congestion_control=\"$allowed $cc\" (as root)" >&2; exit 2 ;;
  esac
  if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
    ns=(unshare -n)
  elif unshare -rn true 2>/dev/null; then
    ns=(unshare -rn)
  else
    echo "bench: BENCH_CC needs a private network namespace (root, or user namespaces)" >&2
    exit 2
  fi
  exec "${ns[@]}" env BENCH_CC_NETNS=1 bash "$0" "${orig_args[@]}"
fi
if [ "${BENCH_CC_NETNS:-0}" = 1 ]; then
  ip link set lo up || { echo "bench: cannot bring up lo in the private network namespace" >&2; exit 1; }
  [ "$(cat "$cc_file" 2>/dev/null)" = "$cc" ] || echo "$cc" >"$cc_file" 2>/dev/null ||
    { echo "bench: cannot make $cc the private network namespace's congestion control" >&2; exit 1; }
fi
cc_now=$(cat "$cc_file" 2>/dev/null || echo unknown)

# dur SIZE: seconds for a run at SIZE (the 1 MiB points run longer: fewer messages per second).
dur() { if [ "$1" -ge 1048576 ] && [ "$secs_large" -gt "$secs" ]; then echo "$secs_large"; else echo "$secs"; fi; }

lo=127.0.0.1
# One fixed port per tool; each is checked free before its server starts.
p_ndk=18500      # ndkperf server waiting for notifications
p_ndk_poll=18501 # ndkperf server busy-polling (ndkperf -s --poll)
p_fi=18525
p_iperf=18520
p_sock_block=18530
p_sock_busy=18531
p_ucx=18540

out=$build/bench
raw=$out/raw
rm -rf "$raw"
mkdir -p "$raw"
samples=$out/samples.csv
status_file=$out/status.txt
: >"$status_file"

say() { printf 'bench: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# ---------- tools ----------

need=()
for t in iperf3 sockperf ucx_perftest pkg-config cc awk timeout taskset; do
  command -v "$t" >/dev/null 2>&1 || need+=("$t")
done
[ ${#need[@]} -eq 0 ] || die "missing ${need[*]} (scripts/deps.sh bench installs the Debian packages)"
pkg-config --exists libfabric || die "libfabric-dev is not installed (scripts/deps.sh bench)"

# bench/fi_peer: built here, into the build directory, whenever its source is newer.
fi_peer=$out/fi_peer
if [ ! -x "$fi_peer" ] || [ "$here/fi_peer/fi_peer.c" -nt "$fi_peer" ]; then
  say "building fi_peer"
  # shellcheck disable=SC2046
  cc -std=c11 -O2 -g -Wall -Wextra -Werror -o "$fi_peer" "$here/fi_peer/fi_peer.c" \
    $(pkg-config --cflags --libs libfabric) || die "fi_peer did not build"
fi

# bench/crc_bench: CRC-32C speed of the provider's own crc32c.c, built the same way.
crc_bench=$out/crc_bench
crc_src=$here/../src/providers/iwarp
if [ ! -x "$crc_bench" ] || [ "$here/crc_bench/crc_bench.c" -nt "$crc_bench" ] || [ "$crc_src/crc32c.c" -nt "$crc_bench" ] ||
  [ "$crc_src/crc32c.h" -nt "$crc_bench" ]; then
  say "building crc_bench"
  cc -std=c11 -O2 -g -Wall -Wextra -Werror -I"$crc_src" -o "$crc_bench" "$here/crc_bench/crc_bench.c" \
    "$crc_src/crc32c.c" || die "crc_bench did not build"
fi

# bench/wait_floor: the cost of the wait itself (blocking recv, epoll, io_uring) on raw TCP,
# with io_uring when liburing is installed (scripts/deps.sh bench installs it).
wait_floor=$out/wait_floor
if [ ! -x "$wait_floor" ] || [ "$here/wait_floor/wait_floor.c" -nt "$wait_floor" ]; then
  say "building wait_floor"
  wf_uring=()
  if pkg-config --exists liburing; then
    read -ra wf_uring <<<"-DWAIT_FLOOR_URING $(pkg-config --cflags --libs liburing)"
  else
    say "note: liburing-dev is not installed; wait_floor's io_uring rows will say so"
  fi
  cc -std=c11 -O2 -g -Wall -Wextra -Werror -o "$wait_floor" "$here/wait_floor/wait_floor.c" "${wf_uring[@]}" ||
    die "wait_floor did not build"
fi

# Pinning: every server on one CPU, every client on another, the same for ours and each peer
# (a process's threads, the provider's included, stay on its CPU).
srv_pin=()
cli_pin=()
pin_note=
read -r srv_cpu cli_cpu _ <<<"$cpus" || true
if [ -n "${srv_cpu:-}" ] && [ -n "${cli_cpu:-}" ]; then
  if taskset -c "$srv_cpu" true 2>/dev/null && taskset -c "$cli_cpu" true 2>/dev/null; then
    srv_pin=(taskset -c "$srv_cpu")
    cli_pin=(taskset -c "$cli_cpu")
    pin_note="servers on CPU $srv_cpu, clients on CPU $cli_cpu"
  else
    pin_note="not pinned (CPUs $cpus are not available here)"
    say "note: BENCH_CPUS='$cpus' cannot be used; nothing is pinned"
  fi
else
  pin_note="not pinned (BENCH_CPUS is empty)"
fi

# UCX runs in a private network namespace when we may create one (root, or user namespaces).
ucx_ns=()
if command -v unshare >/dev/null && command -v ip >/dev/null; then
  if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
    ucx_ns=(unshare -n env UCX_PAIR_NETNS=1 UCX_PAIR_CC="$cc")
  elif unshare -rn true 2>/dev/null; then
    ucx_ns=(unshare -rn env UCX_PAIR_NETNS=1 UCX_PAIR_CC="$cc")
  fi
fi
[ ${#ucx_ns[@]} -gt 0 ] ||
  say "note: no private network namespace; ucx_perftest's rendezvous socket will listen on the wildcard address, port $p_ucx, during its runs"

# Our side: ndkperf over the iwarp provider. Anything missing makes it "unavailable", never fatal.
ndkperf=$build/tools/ndkperf/ndkperf
ndk_reason=
provider_dir=
if [ ! -x "$ndkperf" ]; then
  ndk_reason="$ndkperf is not built"
else
  for d in "$build/providers" "$build/src/providers/iwarp" "$build/src/providers"; do
    if [ -e "$d/ndk-iwarp.so" ]; then provider_dir=$d; break; fi
  done
  if [ -z "$provider_dir" ]; then
    f=$(find "$build" -name 'ndk-iwarp.so' -print -quit 2>/dev/null || true)
    [ -n "$f" ] && provider_dir=$(dirname "$f")
  fi
  [ -n "$provider_dir" ] || ndk_reason="the iwarp provider (ndk-iwarp.so) is not built"
fi
ndk_env=(env "NDK_PROVIDER_PATH=$provider_dir")

# ---------- servers ----------

server_pids=()
cleanup() {
  local pid
  for pid in "${server_pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${server_pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  server_pids=()
}
# fd 3 keeps the script's stderr: a trap runs inside whatever redirection is active.
exec 3>&2
trap cleanup EXIT
trap 'say "interrupted; stopping the servers" 2>&3; exit 130' INT TERM

# listening PORT: is a TCP socket listening on PORT (any address, v4 or v6)?
listening() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v p=":$hex" 'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# start_server NAME PORT CMD...: starts CMD in the background and waits until PORT listens.
# Sets server_pid. Returns 1 (with the reason on stderr) when it does not come up.
server_pid=
start_server() {
  local name=$1 port=$2 log
  shift 2
  log=$raw/server-$name.log
  if listening "$port"; then
    echo "port $port ($name) is in use by another program" >&2
    return 1
  fi
  "$@" >>"$log" 2>&1 &
  server_pid=$!
  server_pids+=("$server_pid")
  local _
  for _ in $(seq 1 250); do
    listening "$port" && return 0
    if ! kill -0 "$server_pid" 2>/dev/null; then
      echo "$name server exited: $(tail -n 1 "$log" 2>/dev/null)" >&2
      return 1
    fi
    sleep 0.02
  done
  echo "$name server did not listen on port $port within 5 s" >&2
  return 1
}

stop_server() {
  local pid=$1 keep=() p
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  for p in "${server_pids[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
  server_pids=("${keep[@]+"${keep[@]}"}")
}

# Long-lived servers (they sleep while idle): started on first use, restarted if they died.
declare -A persistent=()
ensure_server() {
  local name=$1 port=$2
  shift 2
  local pid=${persistent[$name]:-}
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && listening "$port"; then
    return 0
  fi
  [ -z "$pid" ] || stop_server "$pid"
  start_server "$name" "$port" "$@" || return 1
  persistent[$name]=$server_pid
}

# ---------- parsing ----------

# json_num FILE KEY...: the first number found for any of the keys (flat or nested JSON).
json_num() {
  local f=$1
  shift
  awk -v keys="$*" '
    BEGIN { n = split(keys, k, " ") }
    { text = text $0 " " }
    END {
      for (i = 1; i <= n; i++) {
        pat = "\"" k[i] "\"[ \t]*:[ \t]*-?[0-9.]+([eE][-+]?[0-9]+)?"
        if (match(text, pat)) {
          s = substr(text, RSTART, RLENGTH); sub(/^[^:]*:[ \t]*/, "", s); print s + 0; exit 0
        }
      }
      exit 1
    }' "$f"
}

# ---------- measurements ----------
# Each m_* prints "VALUE CPU_NS_PER_BYTE" (CPU "" when the tool does not report it) on success;
# on failure it prints the reason on stderr and returns non-zero. Bandwidth in GB/s (10^9 bytes
# per second, payload), latency in microseconds one-way (half the round trip), median sample.

limit=$((secs_large * 3 + 20))

# client NAME OUT ERR CMD...: runs a client with the time limit; on failure says why on stderr.
client() {
  local name=$1 o=$2 e=$3 rc=0
  shift 3
  timeout -k 2 "$limit" "$@" >"$o" 2>"$e" || rc=$?
  case $rc in
    0) return 0 ;;
    124 | 137) echo "$name: timed out after $limit s" >&2 ;;
    *) echo "$name (exit $rc): $(grep -v '^[[:space:]]*$' "$e" | tail -n 1)" >&2 ;;
  esac
  return 1
}

m_ndk() { # OP MODE SIZE TAG   (MODE: bw | bw-crc | lat-poll | lat-block | lat-last-byte)
  local op=$1 mode=$2 size=$3 f=$raw/$4
  # The server's completion mode is its own (ndkperf -s [--poll]): one server for each mode.
  # CRC is the client's choice: MPA uses it when either side asks (RFC 5044 §7.1).
  local poll=0 args=(-t "$op" -z "$size" -D "$(dur "$size")" --json)
  case $mode in
    bw) poll=$bw_poll; args+=(-d "$depth") ;;
    bw-crc) poll=$bw_poll; args+=(-d "$depth" --crc); mode=bw ;;
    lat-poll) poll=1; args+=(--lat) ;;
    lat-block) args+=(--lat) ;;
    # ib_write_lat's and ucp_put_lat's method: one Write each way, both ends spin on the last
    # byte (forced: the iwarp adapter does not advertise IN_ORDER_DMA, as its copies do not
    # promise byte order, but it places a Write's segments in stream order, so the last byte's
    # segment comes last). The JSON says which method ran.
    lat-last-byte) poll=1; args+=(--lat --last-byte) ;;
  esac
  if [ "$poll" = 1 ]; then
    ensure_server ndkperf-poll "$p_ndk_poll" "${srv_pin[@]}" "${ndk_env[@]}" "$ndkperf" -s "$lo:$p_ndk_poll" --poll ||
      return 1
    args+=(-c "$lo:$p_ndk_poll" --poll)
  else
    ensure_server ndkperf "$p_ndk" "${srv_pin[@]}" "${ndk_env[@]}" "$ndkperf" -s "$lo:$p_ndk" || return 1
    args+=(-c "$lo:$p_ndk")
  fi
  client ndkperf "$f" "$f.err" "${cli_pin[@]}" "${ndk_env[@]}" "$ndkperf" "${args[@]}" || return 1
  # ndkperf --json: results[0] has bw_avg_MBps (10^6 B/s), t_typical_us (median one-way) and
  # client_/server_cpu_ns_per_byte.
  local v c s
  if [ "$mode" = bw ]; then
    v=$(json_num "$f" bw_avg_MBps) || { echo "no bw_avg_MBps in ndkperf's JSON" >&2; return 1; }
    c=$(json_num "$f" client_cpu_ns_per_byte) || c=
    s=$(json_num "$f" server_cpu_ns_per_byte) || s=
    awk -v v="$v" -v c="$c" -v s="$s" 'BEGIN {
      printf "%.6g %s\n", v / 1000, (c == "" || s == "") ? "" : sprintf("%.5f", c + s) }'
  else
    if [ "$mode" = lat-last-byte ] && ! grep -q '"write_lat_method":"last-byte"' "$f"; then
      echo "ndkperf did not measure by last-byte polling" >&2
      return 1
    fi
    v=$(json_num "$f" t_typical_us) || { echo "no t_typical_us in ndkperf's JSON" >&2; return 1; }
    echo "$v "
  fi
}

m_fi() { # TEST MODE SIZE FILE   (TEST: write read send lat; MODE: bw | lat-poll | lat-block)
  local test=$1 mode=$2 size=$3 f=$raw/$4
  ensure_server fi_peer "$p_fi" "${srv_pin[@]}" env FI_PROVIDER=tcp "$fi_peer" -s -a "$lo" -p "$p_fi" || return 1
  # ndkperf's window and ndkperf's warm-up (it has none), so the two differ only in the stack.
  local args=(-c "$lo" -p "$p_fi" -t "$test" -z "$size" -D "$(dur "$size")" -w 0)
  case $mode in
    bw) args+=(-d "$depth"); [ "$bw_poll" = 1 ] && args+=(--poll) ;;
    lat-poll) args+=(--poll) ;;
  esac
  client fi_peer "$f" "$f.err" "${cli_pin[@]}" env FI_PROVIDER=tcp "$fi_peer" "${args[@]}" || return 1
  local v cpu=
  if [ "$mode" = bw ]; then
    v=$(json_num "$f" gbytes_per_s) || { echo "fi_peer printed no result" >&2; return 1; }
    cpu=$(json_num "$f" cpu_ns_per_byte)
  else
    v=$(json_num "$f" lat_us_p50) || { echo "fi_peer printed no result" >&2; return 1; }
  fi
  echo "$v $cpu"
}

m_iperf() { # SIZE FILE
  local size=$1 f=$raw/$2
  ensure_server iperf3 "$p_iperf" "${srv_pin[@]}" iperf3 -s -B "$lo" -p "$p_iperf" || return 1
  client iperf3 "$f" "$f.err" "${cli_pin[@]}" iperf3 -c "$lo" -p "$p_iperf" -B "$lo" -l "$size" -t "$(dur "$size")" -J || {
    grep -m1 '"error"' "$f" >&2 || true
    return 1
  }
  # end.sum_received holds the receiver's byte count; cpu_utilization_percent both ends'.
  awk '
    function num(line) { sub(/.*:/, "", line); gsub(/[ \t,]/, "", line); return line + 0 }
    /"sum_received"/ { inrecv = 1 }
    inrecv && /"bytes"/ && bytes == "" { bytes = num($0) }
    inrecv && /"seconds"/ && sec == "" { sec = num($0) }
    inrecv && /"bits_per_second"/ && bps == "" { bps = num($0) }
    /"host_total"/ { host = num($0) }
    /"remote_total"/ { remote = num($0) }
    END {
      if (bps == "" || bytes + 0 <= 0) exit 1
      cpu = (host + remote) / 100 * sec * 1e9 / bytes
      printf "%.6g %.5f\n", bps / 8 / 1e9, cpu
    }' "$f" || { echo "iperf3 JSON without a result" >&2; return 1; }
}

sock_size() { # sockperf's messages are 14 .. 1048575 bytes
  local s=$1
  [ "$s" -lt 14 ] && s=14
  [ "$s" -gt 1048575 ] && s=1048575
  echo "$s"
}

m_sock() { # MODE SIZE FILE   (MODE: lat-poll | lat-block)
  local mode=$1 size f=$raw/$3 rc=0 args
  size=$(sock_size "$2")
  if [ "$mode" = lat-poll ]; then
    # Both ends spin: non-blocking sockets, the server's epoll with a zero timeout.
    # This server spins while idle too, so it lives only for this run.
    start_server sockperf-busy "$p_sock_busy" "${srv_pin[@]}" sockperf sr --tcp -i "$lo" -p "$p_sock_busy" \
      -m 1048575 --nonblocked --timeout 0 || return 1
    local pid=$server_pid
    args=(pp --tcp -i "$lo" -p "$p_sock_busy" -m "$size" -t "$(dur "$2")" --nonblocked)
    timeout -k 2 "$limit" "${cli_pin[@]}" sockperf "${args[@]}" >"$f" 2>&1 || rc=$?
    stop_server "$pid"
  else
    ensure_server sockperf-block "$p_sock_block" "${srv_pin[@]}" sockperf sr --tcp -i "$lo" -p "$p_sock_block" \
      -m 1048575 || return 1
    args=(pp --tcp -i "$lo" -p "$p_sock_block" -m "$size" -t "$(dur "$2")")
    timeout -k 2 "$limit" "${cli_pin[@]}" sockperf "${args[@]}" >"$f" 2>&1 || rc=$?
  fi
  [ "$rc" = 0 ] || { echo "sockperf ${args[*]}: $(grep -m1 -i error "$f" || tail -n 1 "$f")" >&2; return 1; }
  awk '/percentile 50.000 =/ { v = $NF } END { if (v == "") exit 1; print v + 0, "" }' "$f" ||
    { echo "sockperf printed no median" >&2; return 1; }
}

declare -A ucx_us=() # microseconds per iteration, per test and size, from the calibration
ucx_cpus=
[ ${#srv_pin[@]} -gt 0 ] && ucx_cpus="$srv_cpu $cli_cpu"
m_ucx() { # TEST WAIT SIZE FILE   (ucx_perftest test name; WAIT: poll | sleep)
  local test=$1 size=$3 f=$raw/$4 n w key per
  local extra=()
  [ "$2" = sleep ] && extra=(-E sleep)
  set -- "${extra[@]+"${extra[@]}"}"
  key="$test $size $*"
  # ucx_perftest counts iterations, not seconds: a short first run per test and size measures
  # the cost of one iteration, and later runs are sized to last about BENCH_SECONDS.
  if [ -z "${ucx_us[$key]:-}" ]; then
    client ucx_perftest "$f.cal" "$f.cal.err" "${ucx_ns[@]}" env "UCX_PAIR_CPUS=$ucx_cpus" "$here/ucx-pair.sh" "$p_ucx" "$limit" \
      -t "$test" -s "$size" -n 200 -w 20 -f "$@" || return 1
    per=$(awk -v lat="$([[ $test == *lat ]] && echo 2 || echo 1)" '
      NF >= 8 && $1 ~ /^[0-9]+$/ { v = $4 * lat } END { if (v == "") exit 1; print v }' "$f.cal") ||
      { echo "ucx_perftest printed no result" >&2; return 1; }
    ucx_us[$key]=$per
  fi
  n=$(awk -v us="${ucx_us[$key]}" -v secs="$(dur "$size")" 'BEGIN {
        if (us <= 0) us = 1; n = int(0.8 * secs * 1e6 / us); if (n < 50) n = 50; if (n > 2000000) n = 2000000; print n }')
  w=$((n / 10 + 1))
  if ! client ucx_perftest "$f" "$f.err" "${ucx_ns[@]}" env "UCX_PAIR_CPUS=$ucx_cpus" "$here/ucx-pair.sh" "$p_ucx" "$limit" \
    -t "$test" -s "$size" -n "$n" -w "$w" -f "$@"; then
    ucx_us[$key]=$(awk -v us="${ucx_us[$key]}" 'BEGIN { print us * 4 }') # shorter next time
    return 1
  fi
  # last line: iterations, p50 latency, avg latency, overall latency, avg bw, overall bw (MiB/s)...
  local lat=0
  [[ $test == *lat ]] && lat=1
  per=$(awk -v lat="$lat" 'NF >= 8 && $1 ~ /^[0-9]+$/ { v = $4 * (lat ? 2 : 1) } END { print v }' "$f")
  [ -n "$per" ] && ucx_us[$key]=$per # the next run's size follows this one's pace
  awk -v lat="$lat" '
    NF >= 8 && $1 ~ /^[0-9]+$/ { l50 = $2; bw = $6; ok = 1 }
    END { if (!ok) exit 1; if (lat) print l50 + 0, ""; else printf "%.6g \n", bw * 1048576 / 1e9 }' "$f" ||
    { echo "ucx_perftest printed no result" >&2; return 1; }
}

m_wait() { # WAIT SIZE TAG   (WAIT: recv | epoll | uring): raw TCP ping-pong, both ends waiting that way
  local wait=$1 size=$2 f=$raw/$3 cpus=()
  [ ${#srv_pin[@]} -gt 0 ] && cpus=(--cpus "$srv_cpu,$cli_cpu")
  client wait_floor "$f" "$f.err" "$wait_floor" --wait "$wait" -z "$size" -t "$(dur "$size")" "${cpus[@]}" --json ||
    return 1
  json_num "$f" median_us | awk '{ print $1, "" }' | grep . || { echo "wait_floor printed no result" >&2; return 1; }
}

m_crc() { # OP SIZE TAG   (OP: crc | copy): CRC-32C GB/s on one core, the client's
  local op=$1 size=$2 f=$raw/$3
  client crc_bench "$f" "$f.err" "${cli_pin[@]}" "$crc_bench" --default --op "$op" -t 0.5 --json "$size" || return 1
  json_num "$f" gbytes_per_s | awk '{ print $1, "" }' | grep . || { echo "crc_bench printed no result" >&2; return 1; }
}

# ---------- the plan ----------
# id | kind | command [| smallest size]. Order within a repetition: for each size, every
# measurement, then (BENCH_ORDER=abba) every measurement again in the reverse order. What a
# target or a ratio column compares stands side by side (ours with CRC off and on, then its
# peers for the same test), so that the two runs of a comparison are seconds apart: the host's
# speed changes within tens of seconds (docs/performance.md), and a pair that far apart would
# meet two different hosts.
plan=(
  "ndk.write.bw|bw|m_ndk write bw"
  "ndk.write.bw.crc|bw|m_ndk write bw-crc"
  "fi.write.bw|bw|m_fi write bw"
  "ucx.put.bw|bw|m_ucx ucp_put_bw poll"
  "tcp.stream.bw|bw|m_iperf"
  "ndk.send.bw|bw|m_ndk send bw"
  "ndk.send.bw.crc|bw|m_ndk send bw-crc"
  "fi.send.bw|bw|m_fi send bw"
  "ucx.tag.bw|bw|m_ucx tag_bw poll"
  "ndk.read.bw|bw|m_ndk read bw"
  "ndk.read.bw.crc|bw|m_ndk read bw-crc"
  "fi.read.bw|bw|m_fi read bw"
  "ucx.get.bw|bw|m_ucx ucp_get poll"
  "ndk.send.lat.poll|lat|m_ndk send lat-poll"
  "tcp.lat.poll|lat|m_sock lat-poll"
  "fi.lat.poll|lat|m_fi lat lat-poll"
  "ndk.write.lat.poll|lat|m_ndk write lat-last-byte"
  "ucx.put.lat|lat|m_ucx ucp_put_lat poll"
  "ucx.tag.lat|lat|m_ucx tag_lat poll"
  "ndk.send.lat.block|lat|m_ndk send lat-block"
  "tcp.lat.block|lat|m_sock lat-block"
  "fi.lat.block|lat|m_fi lat lat-block"
  "ucx.tag.lat.block|lat|m_ucx tag_lat sleep"
  "wait.recv.lat|lat|m_wait recv"
  "wait.epoll.lat|lat|m_wait epoll"
  "wait.uring.lat|lat|m_wait uring"
  "crc.update.bw|bw|m_crc crc|4096"
  "crc.copy.bw|bw|m_crc copy|4096"
)

selected=()
for entry in "${plan[@]}"; do
  id=${entry%%|*}
  if [ -n "$only" ] && ! [[ $id =~ $only ]]; then continue; fi
  selected+=("$entry")
done
[ ${#selected[@]} -gt 0 ] || die "BENCH_ONLY='$only' selects nothing"

# Probe ndkperf once, briefly, so a missing or broken data path shows as one clear line.
if [ -z "$ndk_reason" ]; then
  probe=$raw/ndk-probe.json
  if ! ensure_server ndkperf "$p_ndk" "${srv_pin[@]}" "${ndk_env[@]}" "$ndkperf" -s "$lo:$p_ndk" 2>"$probe.why"; then
    ndk_reason=$(tail -n 1 "$probe.why")
  elif ! timeout -k 2 20 "${cli_pin[@]}" "${ndk_env[@]}" "$ndkperf" -c "$lo:$p_ndk" -t write -z 4096 -D 1 --json \
    >"$probe" 2>"$probe.err"; then
    ndk_reason="probe failed: $(tail -n 1 "$probe.err" 2>/dev/null)"
  fi
fi
if [ -n "$ndk_reason" ]; then
  say "ndkperf: unavailable ($ndk_reason)"
  printf 'ndk\tunavailable (%s)\n' "$ndk_reason" >>"$status_file"
  if [ -n "${persistent[ndkperf]:-}" ]; then stop_server "${persistent[ndkperf]}"; unset 'persistent[ndkperf]'; fi
fi

# ---------- machine ----------
# Whether a virtio balloon reports free memory to the host (VIRTIO_BALLOON_F_REPORTING, feature
# bit 5): "order N" (the smallest block it reports), or "off". A candidate cause of the two
# speeds loopback TCP alternates between on some VMs (docs/performance.md).
page_reporting() {
  local d bits order=/sys/module/page_reporting/parameters/page_reporting_order
  for d in /sys/bus/virtio/drivers/virtio_balloon/virtio*; do
    bits=$(cat "$d/features" 2>/dev/null) || continue
    if [ "${bits:5:1}" = 1 ]; then
      echo "order $(cat "$order" 2>/dev/null || echo unknown)"
      return
    fi
  done
  echo off
}
{
  echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
  echo "cores=$(nproc)"
  echo "kernel=$(uname -r)"
  echo "os=$(sed -n 's/^PRETTY_NAME="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /etc/os-release 2>/dev/null)"
  echo "virt=$(systemd-detect-virt 2>/dev/null || echo unknown)"
  echo "page_reporting=$(page_reporting)"
  echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "iperf3=$(iperf3 --version 2>/dev/null | head -n 1 | awk '{ print $2 }')"
  echo "sockperf=$(sockperf --version 2>/dev/null | awk '/version/ { print $3; exit }')"
  echo "ucx=$(ucx_info -v 2>/dev/null | awk '/Version/ { print $NF; exit }')"
  echo "libfabric=$(pkg-config --modversion libfabric)"
  echo "reps=$reps"
  echo "seconds=$secs"
  echo "seconds_large=$secs_large"
  echo "sizes=$sizes"
  echo "bw_poll=$bw_poll"
  echo "depth=$depth"
  echo "pinning=$pin_note"
  echo "order=$order"
  echo "max_other_pct=$max_other"
  echo "crc_impl=$("$crc_bench" --default --op crc -t 0.01 --json 4096 2>/dev/null | sed -n 's/.*"default": "\([^"]*\)".*/\1/p')"
  echo "ucx_netns=$([ ${#ucx_ns[@]} -gt 0 ] && echo yes || echo no)"
  echo "tcp_cc=$cc_now"
  echo "tcp_cc_from=$([ -n "$cc" ] && echo BENCH_CC || echo default)"
} >"$out/machine.txt"
load1=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load1" 'BEGIN { exit !(l > 0.5) }'; then
  say "note: load average is $load1 before the run; other work on this machine skews the numbers"
fi

# ---------- CPU accounting ----------
# How much of the machine other work took: all CPUs' busy time (/proc/stat: user, nice, system,
# steal; interrupt time is left out, as loopback networking is ours) minus the CPU time of this
# script's process tree (live processes' own and reaped children's time, servers and clients
# included) and of the ksoftirqd threads (loopback TCP processed on our behalf). Clock ticks.
cpu_snapshot() { # prints: busy total ours
  # cat, not awk, opens the per-process files: a process may exit between the glob and the read.
  cat /proc/[0-9]*/stat 2>/dev/null | awk -v me=$$ '
    FILENAME == "/proc/stat" { if ($1 == "cpu") { busy = $2 + $3 + $4 + $9; total = busy + $5 + $6 + $7 + $8 }; next }
    {
      line = $0; i = index(line, "("); j = 0
      for (k = length(line); k > 0; k--) if (substr(line, k, 1) == ")") { j = k; break }
      if (!j) next
      pid = substr(line, 1, i - 2) + 0; comm = substr(line, i + 1, j - i - 1)
      split(substr(line, j + 2), f, " ")
      ppid[pid] = f[2]; t[pid] = f[12] + f[13] + f[14] + f[15]
      if (comm ~ /^ksoftirqd\//) soft += f[12] + f[13]
    }
    END {
      for (p in ppid) {
        q = p
        for (d = 0; d < 64 && q > 1; d++) { if (q == me) { ours += t[p]; break }; q = ppid[q] }
      }
      print busy + 0, total + 0, ours + soft
    }' /proc/stat -
}

# ---------- run ----------
nsizes=$(echo "$sizes" | wc -w)
passes=2
[ "$order" = once ] && passes=1
total=$((reps * nsizes * ${#selected[@]} * passes))
say "$total runs: ${#selected[@]} measurements x $nsizes sizes x $reps repetitions x $passes (order $order), ${secs} s each (${secs_large} s from 1 MiB); $pin_note (results in $out)"
echo "id,size,rep,pass,value,cpu_ns_per_byte,status,other_pct,note" >"$samples"
start=$(date +%s)
read -r busy0 total0 ours0 < <(cpu_snapshot)
k=0
dropped=0
tty=0
[ -t 2 ] && tty=1
for rep in $(seq 1 "$reps"); do
  for size in $sizes; do
    seq_fwd=("${selected[@]}")
    seq_all=("${seq_fwd[@]}")
    if [ "$passes" = 2 ]; then
      for ((i = ${#seq_fwd[@]} - 1; i >= 0; i--)); do seq_all+=("${seq_fwd[$i]}"); done
    fi
    declare -A pass_of=()
    for entry in "${seq_all[@]}"; do
      id=${entry%%|*}
      rest=${entry#*|}
      cmd=${rest#*|}
      minsize=0
      if [[ $cmd == *"|"* ]]; then minsize=${cmd##*|}; cmd=${cmd%|*}; fi
      pass=$((${pass_of[$id]:-0} + 1))
      pass_of[$id]=$pass
      k=$((k + 1))
      [ "$size" -ge "$minsize" ] || continue
      tag="$id-$size-$rep-$pass"
      if [[ $id == ndk.* ]] && [ -n "$ndk_reason" ]; then
        echo "$id,$size,$rep,$pass,,,unavailable,,\"$(echo "$ndk_reason" | tr '",' "' ")\"" >>"$samples"
        continue
      fi
      read -r b0 t0 o0 < <(cpu_snapshot)
      # shellcheck disable=SC2086 # cmd is "function arg..."; it runs in this shell so that
      # the servers it starts stay known to the cleanup trap.
      if $cmd "$size" "$tag" >"$raw/$tag.res" 2>"$raw/$tag.why"; then
        st=ok
      else
        st=failed
      fi
      read -r b1 t1 o1 < <(cpu_snapshot)
      other=$(awk -v b=$((b1 - b0)) -v t=$((t1 - t0)) -v o=$((o1 - o0)) \
        'BEGIN { x = t > 0 ? (b - o) / t * 100 : 0; if (x < 0) x = 0; printf "%.1f\n", x }')
      if [ "$st" = ok ]; then
        read -r v cpu <"$raw/$tag.res" || true
        if awk -v x="$other" -v m="$max_other" 'BEGIN { exit !(x > m) }'; then
          st=dropped
          dropped=$((dropped + 1))
        fi
        echo "$id,$size,$rep,$pass,$v,${cpu:-},$st,$other," >>"$samples"
        [ "$tty" = 1 ] && printf '\rbench: [%d/%d] %-20s %8s B  rep %d.%d: %s (other %s%%)%s        ' \
          "$k" "$total" "$id" "$size" "$rep" "$pass" "$v" "$other" "$([ "$st" = dropped ] && echo ', dropped')" >&2
      else
        why=$(tail -n 1 "$raw/$tag.why" | tr '",\n' "'  ")
        echo "$id,$size,$rep,$pass,,,failed,$other,\"$why\"" >>"$samples"
        [ "$tty" = 1 ] && printf '\n' >&2
        say "[$k/$total] $id $size B rep $rep.$pass: failed ($why)"
      fi
    done
    unset pass_of
  done
  [ "$tty" = 1 ] && printf '\n' >&2
  say "repetition $rep of $reps done ($(($(date +%s) - start)) s, $dropped runs dropped so far for other work above $max_other% of the CPU)"
done
cleanup
read -r busy1 total1 ours1 < <(cpu_snapshot)
other=$(awk -v b=$((busy1 - busy0)) -v t=$((total1 - total0)) -v o=$((ours1 - ours0)) \
  'BEGIN { x = t > 0 ? (b - o) / t * 100 : 0; if (x < 0) x = 0; printf "%.0f\n", x }')
{
  echo "other_cpu_pct=$other"
  echo "dropped_runs=$dropped"
  echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "elapsed_s=$(($(date +%s) - start))"
} >>"$out/machine.txt"

# ---------- report ----------
awk -v out="$out" -f "$here/report.awk" "$out/machine.txt" "$samples"
cat "$out/table.md"
say "wrote $out/table.md, results.csv, results.json (samples.csv has every repetition)"

# ---------- verbs rows: ndkperf over the verbs provider against perftest in the interop guest ----------
if [ "$quick" = 0 ]; then
  "$here/verbs-guest.sh" "$build" "$out" || true
fi

# ---------- syscalls section (bench/syscalls.sh; BENCH_SYSCALLS=0 leaves it out) ----------
if [ "${BENCH_SYSCALLS:-1}" = 1 ]; then
  "$here/syscalls.sh" "$build" || say "the syscalls section failed"
fi

# ---------- per-message cost (bench/msgcost.sh; BENCH_MSGCOST=0 leaves it out) ----------
if [ "${BENCH_MSGCOST:-1}" = 1 ]; then
  "$here/msgcost.sh" "$build" || say "the per-message cost section failed"
fi

# ---------- cost table (bench/cost.sh; BENCH_COST=0 leaves it out) ----------
if [ "${BENCH_COST:-1}" = 1 ]; then
  cost_msg=0
  [ "${BENCH_MSGCOST:-1}" = 1 ] && cost_msg=reuse
  BENCH_COST_MSGCOST=$cost_msg "$here/cost.sh" "$build" || say "the cost table failed"
fi

# ---------- scale section (bench/scale.sh; BENCH_SCALE=0 leaves it out) ----------
if [ "${BENCH_SCALE:-1}" = 1 ]; then
  scale_args=()
  [ "$quick" = 1 ] && scale_args+=(--quick)
  "$here/scale.sh" "${scale_args[@]}" "$build" || say "the scale section failed"
fi
