#!/usr/bin/env bash
# make bench, scale section (issue 14): NDK connections over the iwarp provider side by side with
# plain TCP sockets held the same way, two processes over 127.0.0.1.
#
#   bench/scale.sh [--quick] [BUILD_DIR]      (BUILD_DIR: build/release by default)
#
# Ours: tests/iwarp/test_iw_scale (bench N: one PD, CQ, QP and registered MR per connection at
# depth 32; churn N). Plain TCP: bench/tcp_scale (one socket per connection, a 4-byte round trip
# as its handshake). Figures: connects per second (and CPU per connect, which a loaded machine
# disturbs less) over the 500 connects after 1,000, 5,000 and 19,000 were open; RSS, heap
# (mallinfo2) and descriptors per connection, and per idle unconnected QP (ours); the idle CPU of
# both processes with the connections held; churn rate over sequential connect/disconnect
# cycles; busy-poll 8-byte latency (half the round trip, median and p99) alone and beside the
# held connections, with two figures that other processes' load disturbs less: the lowest median
# of 1,000-sample blocks, and the thread CPU time of one busy poll that finds nothing (it
# says whether the idle connections make the poll path dearer; the latency of one run swings by
# up to 1.5x on a loaded 2-core machine). Ours is measured inside the holding processes (test_iw_scale's latency
# connection, so the provider's progress thread and epoll sets hold the idle sockets), once with
# the idle QPs on CQs of their own and once (bench-shared N) with every client QP on the
# latency connection's CQ; TCP's with sockperf --nonblocked beside tcp_scale's process.
#
# Environment: BENCH_SCALE_N (19500), BENCH_SCALE_CHURN (200000), BENCH_SCALE_REPS (3: the median
# of the repetitions is kept), BENCH_SCALE_IDLE_S (5). --quick: N 5500, churn 20000, one rep.
# Results: BUILD_DIR/bench/scale.md, scale.csv, raw/scale-*.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
quick=0
build=
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "scale: unknown option $1" >&2; exit 2 ;;
    *) build=$1 ;;
  esac
  shift
done
build=$(cd "${build:-build/release}" && pwd)
n=${BENCH_SCALE_N:-19500}
churn=${BENCH_SCALE_CHURN:-200000}
reps=${BENCH_SCALE_REPS:-3}
idle=${BENCH_SCALE_IDLE_S:-5}
if [ "$quick" = 1 ]; then
  n=${BENCH_SCALE_N:-5500}
  churn=${BENCH_SCALE_CHURN:-20000}
  reps=${BENCH_SCALE_REPS:-1}
fi
out=$build/bench
raw=$out/raw
mkdir -p "$raw"
say() { printf 'scale: %s\n' "$*" >&2; }

tcp_scale=$out/tcp_scale
if [ ! -x "$tcp_scale" ] || [ "$here/tcp_scale/tcp_scale.c" -nt "$tcp_scale" ] || [ "$here/scale_probe/scale_probe.c" -nt "$tcp_scale" ]; then
  say "building tcp_scale"
  cc -std=c11 -O2 -g -Wall -Wextra -Werror -o "$tcp_scale" "$here/tcp_scale/tcp_scale.c" "$here/scale_probe/scale_probe.c" || exit 1
fi
iw_scale=$build/tests/iwarp/test_iw_scale
provider_dir=$(find "$build" -name 'ndk-iwarp.so' -print -quit)
[ -z "$provider_dir" ] || provider_dir=$(dirname "$provider_dir")
if [ ! -x "$iw_scale" ] || [ -z "$provider_dir" ]; then
  say "test_iw_scale or the provider is not built"
  exit 1
fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" -lt $((n + 300)) ]; then
  n=$(($(ulimit -n) - 300))
  say "descriptor limit $(ulimit -n): holding $n connections"
fi
export NDK_PROVIDER_PATH=$provider_dir NDK_SCALE_IDLE_S=$idle

p_sock=18561
csv=$out/scale.csv
echo "side,metric,rep,value" >"$csv"

# lat_sock FILE: busy-poll 8-byte latency over TCP (sockperf), median and p99 one-way (µs).
lat_sock() {
  local f=$1 spid rc=0
  sockperf sr --tcp -i 127.0.0.1 -p "$p_sock" --nonblocked --timeout 0 >"$f.srv" 2>&1 &
  spid=$!
  sleep 0.5
  timeout 30 sockperf pp --tcp -i 127.0.0.1 -p "$p_sock" -m 14 -t 2 --nonblocked >"$f" 2>&1 || rc=$?
  kill "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
  [ "$rc" = 0 ] || return 1
  awk '/percentile 50.000 =/ { m = $NF } /percentile 99.000 =/ { p = $NF } END { print m + 0, p + 0 }' "$f"
}

# hold SIDE REP: holds n connections, measures the latency beside them, records everything.
# ndkshared: bench-shared, of which only the latency is kept.
hold() {
  local side=$1 rep=$2 f=$raw/scale-$1-hold-$2.txt hf=$raw/scale-hold-file pid lat=""
  : >"$hf"
  if [ "$side" = ndk ]; then
    NDK_SCALE_HOLD_FILE=$hf "$iw_scale" bench "$n" >"$f" 2>"$f.err" &
  elif [ "$side" = ndkshared ]; then
    NDK_SCALE_HOLD_FILE=$hf "$iw_scale" bench-shared "$n" >"$f" 2>"$f.err" &
  else
    NDK_SCALE_HOLD_FILE=$hf "$tcp_scale" hold "$n" >"$f" 2>"$f.err" &
  fi
  pid=$!
  for _ in $(seq 1 1200); do grep -q '^scale client ready' "$f" && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  sleep "$idle"    # the idle CPU is measured over this, before the latency run
  [ "$side" = tcp ] && { lat=$(lat_sock "$f.lat") || lat=""; }
  rm -f "$hf"
  wait "$pid" || say "$side hold rep $rep failed (exit $?; $f.err)"
  awk -v s="$side" -v r="$rep" '$1 == "scale" && $3 != "ready" && (s != "ndkshared" || $3 ~ /^lat_shared/) { print s "," $2 "_" $3 "," r "," $4 }' "$f" >>"$csv"
  if [ -n "$lat" ]; then
    read -r med p99 <<<"$lat"
    echo "$side,client_lat_beside_median_us,$rep,$med" >>"$csv"
    echo "$side,client_lat_beside_p99_us,$rep,$p99" >>"$csv"
  fi
}

for rep in $(seq 1 "$reps"); do
  say "repetition $rep of $reps: TCP latency alone"
  if l=$(lat_sock "$raw/scale-tcp-lat-$rep"); then read -r m p <<<"$l"; echo "tcp,client_lat_alone_median_us,$rep,$m" >>"$csv"; echo "tcp,client_lat_alone_p99_us,$rep,$p" >>"$csv"; fi
  for side in ndk ndkshared tcp; do
    say "repetition $rep of $reps: $side holds $n"
    hold "$side" "$rep"
  done
  for side in ndk tcp; do
    say "repetition $rep of $reps: $side churns $churn cycles"
    f=$raw/scale-$side-churn-$rep.txt
    if [ "$side" = ndk ]; then "$iw_scale" churn "$churn" >"$f" 2>"$f.err" || say "ndk churn failed ($f.err)"
    else "$tcp_scale" churn "$churn" >"$f" 2>"$f.err" || say "tcp churn failed ($f.err)"; fi
    awk -v s="$side" -v r="$rep" -v c="$churn" '/^churn [0-9]+: [0-9.]+ s/ { printf "%s,churn_per_s,%s,%.0f\n", s, r, c / $3 }' "$f" >>"$csv"
  done
done

# The table: medians over the repetitions, ours against TCP.
awk -F, -v n="$n" -v churn="$churn" -v reps="$reps" '
  NR > 1 { k = $1 SUBSEP $2; v[k, ++c[k]] = $4 }
  function med(side, m,   k, i, j, t, a, cnt) {
    k = side SUBSEP m; cnt = c[k]; if (!cnt) return ""
    for (i = 1; i <= cnt; i++) a[i] = v[k, i] + 0
    for (i = 1; i <= cnt; i++) for (j = i + 1; j <= cnt; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return cnt % 2 ? a[(cnt + 1) / 2] : (a[cnt / 2] + a[cnt / 2 + 1]) / 2
  }
  function row(label, m, unit,   a, b) {
    a = med("ndk", m); b = med("tcp", m)
    printf "| %s | %s | %s | %s |\n", label, a == "" ? "-" : a, b == "" ? "-" : b, unit
  }
  function pair(side, m1, m2,   a, b) {
    a = med(side, m1); b = med(side, m2)
    return (a == "" ? "-" : a) " / " (b == "" ? "-" : b)
  }
  END {
    printf "## Scale (%d connections, churn %d cycles, median of %d)\n\n", n, churn, reps
    print "| measurement | ours (NDK iwarp) | plain TCP | unit |"
    print "|---|---|---|---|"
    row("connects/s after 1,000 open", "client_rate_at_1000", "1/s")
    row("connects/s after 5,000 open", "client_rate_at_5000", "1/s")
    row("connects/s after 19,000 open", "client_rate_at_19000", "1/s")
    row("client CPU per connect after 1,000", "client_cpu_us_per_connect_at_1000", "µs")
    row("client CPU per connect after 19,000", "client_cpu_us_per_connect_at_19000", "µs")
    row("RSS per connection, client", "client_conn_rss_bytes", "B")
    row("RSS per connection, server", "server_conn_rss_bytes", "B")
    row("heap per connection, client", "client_conn_heap_bytes", "B")
    row("RSS per idle QP (objects, unconnected)", "client_qp_rss_bytes", "B")
    row("heap per idle QP (objects, unconnected)", "client_qp_heap_bytes", "B")
    row("descriptors per connection", "client_conn_fds", "")
    row("idle CPU, client process", "client_idle_cpu_pct", "%")
    row("idle CPU, server process", "server_idle_cpu_pct", "%")
    row("churn (sequential connect/disconnect)", "churn_per_s", "1/s")
    printf "| 8 B busy-poll latency alone / beside %d idle, median | %s | %s | µs |\n", n, pair("ndk", "client_lat_alone_median_us", "client_lat_beside_median_us"), pair("tcp", "client_lat_alone_median_us", "client_lat_beside_median_us")
    printf "| 8 B busy-poll latency alone / beside %d idle, p99 | %s | %s | µs |\n", n, pair("ndk", "client_lat_alone_p99_us", "client_lat_beside_p99_us"), pair("tcp", "client_lat_alone_p99_us", "client_lat_beside_p99_us")
    printf "| 8 B busy-poll latency beside %d idle QPs on the same CQ, median / p99 | %s | - | µs |\n", n, pair("ndkshared", "client_lat_shared_median_us", "client_lat_shared_p99_us")
    printf "| 8 B busy-poll latency alone / beside %d idle, best median of 1,000-sample blocks | %s | - | µs |\n", n, pair("ndk", "client_lat_alone_best_block_median_us", "client_lat_beside_best_block_median_us")
    printf "| 8 B busy-poll latency beside %d idle QPs on the same CQ, best median of 1,000-sample blocks | %s | - | µs |\n", n, med("ndkshared", "client_lat_shared_best_block_median_us") == "" ? "-" : med("ndkshared", "client_lat_shared_best_block_median_us")
    printf "| thread CPU of one empty busy poll: alone / beside %d idle, own CQs | %s | - | ns |\n", n, pair("ndk", "client_lat_alone_empty_poll_ns", "client_lat_beside_empty_poll_ns")
    printf "| thread CPU of one empty busy poll beside %d idle QPs on the same CQ | %s | - | ns |\n", n, med("ndkshared", "client_lat_shared_empty_poll_ns") == "" ? "-" : med("ndkshared", "client_lat_shared_empty_poll_ns")
  }' "$csv" >"$out/scale.md"
cat "$out/scale.md"
say "wrote $out/scale.md and scale.csv"
