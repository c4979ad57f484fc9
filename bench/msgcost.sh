#!/usr/bin/env bash
# bench/msgcost.sh: what a message costs in user space, ours against raw TCP, measured so that
# the host's speed matters little (loopback, 127.0.0.1 only).
#
#   bench/msgcost.sh [BUILD_DIR]       (BUILD_DIR: build/release by default)
#
# An 8-byte ping-pong, busy-polled on both ends (no wait in it): ndkperf -t send --lat --poll
# over the iwarp provider, and sockperf pp --nonblocked. perf records the client's system-call
# tracepoints: the exit of every read that returned bytes (recvfrom, recvmsg) and the entry of
# every send (sendto, sendmsg). The gap from a message's last read to the send that answers it
# is the receiving side's work (for ours: the deframer, placement, the completion, the CQ poll,
# ndkperf's handler and posting the answer) plus one system call's exit and one's entry, which
# sockperf's gap holds too. So the difference of the two medians is what the provider and
# ndkperf add per message at one end. Unlike the latency itself it barely moves with the host's
# phase (its p10-p90 stays within a few percent), which is why it is here (issue 15 item 4).
# Rounds alternate which of the two goes first (ABBA).
# Results: BUILD_DIR/bench/msgcost.md and msgcost.csv; the raw gaps in raw/msgcost/.
#
# Environment: BENCH_MSGCOST_ROUNDS (2: pairs of rounds, each "ours, sockperf" then
# "sockperf, ours"), BENCH_MSGCOST_SECONDS (1, whole seconds per run), BENCH_CPUS ("0 1":
# server CPU, client CPU; "" to not pin).
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

build=
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    -*) echo "msgcost: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) [ -z "$build" ] || { echo "msgcost: one build directory only" >&2; exit 2; }; build=$1 ;;
  esac
  shift
done
build=${build:-build/release}
[ -d "$build" ] || { echo "msgcost: build directory $build does not exist (run make build)" >&2; exit 1; }
build=$(cd "$build" && pwd)

rounds=${BENCH_MSGCOST_ROUNDS:-2}
secs=${BENCH_MSGCOST_SECONDS:-1}
cpus=${BENCH_CPUS-"0 1"}
case "$rounds" in '' | *[!0-9]* | 0) echo "msgcost: BENCH_MSGCOST_ROUNDS must be a number >= 1" >&2; exit 2 ;; esac
case "$secs" in '' | *[!0-9]* | 0) echo "msgcost: BENCH_MSGCOST_SECONDS must be a whole number >= 1" >&2; exit 2 ;; esac

say() { printf 'msgcost: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

ndkperf=$build/tools/ndkperf/ndkperf
[ -x "$ndkperf" ] || die "$ndkperf is not built"
command -v sockperf >/dev/null 2>&1 || die "sockperf is not installed (scripts/deps.sh bench installs it)"
command -v perf >/dev/null 2>&1 || die "perf is not installed (scripts/deps.sh bench installs linux-perf)"
events=(-e syscalls:sys_exit_recvfrom --filter 'ret > 0' -e syscalls:sys_exit_recvmsg --filter 'ret > 0'
  -e syscalls:sys_enter_sendto -e syscalls:sys_enter_sendmsg)
perf record -q -o /dev/null "${events[@]}" -- true >/dev/null 2>&1 ||
  die "perf cannot record the syscall tracepoints here (no tracefs, or perf_event_paranoid)"

srv_pin=() cli_pin=()
if [ -n "$cpus" ]; then
  read -r srv_cpu cli_cpu <<<"$cpus"
  srv_pin=(taskset -c "$srv_cpu")
  cli_pin=(taskset -c "$cli_cpu")
fi

lo=127.0.0.1
p_ndk=18560 # ports of their own, so that this can run beside bench/run.sh's servers
p_sock=18561
out=$build/bench
raw=$out/raw/msgcost
rm -rf "$raw"
mkdir -p "$raw"

server_pid=
stop_server() {
  [ -n "$server_pid" ] || return 0
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}
trap stop_server EXIT

# gaps DATA OUT: one gap (ns) per answered message, from the last read that returned bytes to
# the next send, sorted.
gaps() {
  perf script -i "$1" --ns -F time,event 2>/dev/null | awk '
    { t = $1; sub(/:$/, "", t); split(t, p, "."); ns = p[1] * 1e9 + p[2] }
    /sys_exit_recv/ { last = ns; have = 1; next }
    /sys_enter_send/ { if (have) printf "%d\n", ns - last; have = 0 }' | sort -n >"$2"
}

# run WHO ROUND: one traced run; appends "who,round,messages,p10,median,p90" to the CSV.
run() {
  local who=$1 r=$2 data=$raw/$1.$2.data srv cli
  if [ "$who" = ours ]; then
    srv=("$ndkperf" -s "$lo:$p_ndk" --poll)
    cli=("$ndkperf" -c "$lo:$p_ndk" -t send -z 8 -D "$secs" --lat --poll)
  else
    srv=(sockperf sr --tcp -i "$lo" -p "$p_sock" -m 1048575 --nonblocked --timeout 0)
    cli=(sockperf pp --tcp -i "$lo" -p "$p_sock" -m 14 -t "$secs" --nonblocked)
  fi
  "${srv_pin[@]}" "${srv[@]}" >"$raw/$who.$r.server" 2>&1 &
  server_pid=$!
  sleep 0.5
  "${cli_pin[@]}" perf record -q -o "$data" "${events[@]}" -- "${cli[@]}" >"$raw/$who.$r.out" 2>&1 ||
    { stop_server; say "$who, round $r: the client failed ($(tail -n 1 "$raw/$who.$r.out"))"; return 1; }
  stop_server
  gaps "$data" "$raw/$who.$r.gaps"
  rm -f "$data"
  awk -v who="$who" -v r="$r" '{ g[NR] = $1 }
    END { if (NR < 100) exit 1
          printf "%s,%d,%d,%d,%d,%d\n", who, r, NR, g[int(NR * 0.1) + 1], g[int(NR * 0.5) + 1], g[int(NR * 0.9) + 1] }' \
    "$raw/$who.$r.gaps" >>"$out/msgcost.csv" || { say "$who, round $r: fewer than 100 messages traced"; return 1; }
}

echo "who,round,messages,p10_ns,median_ns,p90_ns" >"$out/msgcost.csv"
say "8 B ping-pong, busy-polled, ${secs} s per run, $((rounds * 2)) rounds each (ABBA); servers on CPU ${srv_cpu:-any}, clients on CPU ${cli_cpu:-any}"
fails=0
for ((i = 1; i <= rounds * 2; i++)); do
  if [ $((i % 2)) = 1 ]; then order="ours sockperf"; else order="sockperf ours"; fi
  for who in $order; do run "$who" "$i" || fails=$((fails + 1)); done
done

awk -F, -v fails="$fails" '
  NR == 1 { next }
  { row[$1] = row[$1] sprintf(" %d [%d–%d]", $5, $4, $6); r[$1, $2] = $5; if ($2 > last) last = $2
    if (!($1 in lowest) || $5 < lowest[$1]) lowest[$1] = $5 }
  END {
    print "What a message costs in user space (bench/msgcost.sh): 8 B ping-pong, both ends busy-polling; at the client, the time from the exit of the read that brings a message to the entry of the send that answers it (perf, syscall tracepoints), ns: median [p10–p90] per run."
    print ""
    print "| | runs |"
    print "|---|---|"
    printf "| ndkperf (iwarp) |%s |\n", row["ours"]
    printf "| sockperf |%s |\n", row["sockperf"]
    # The difference per round (each round ran both), and its spread.
    k = 0
    for (i = 1; i <= last; i++) if ((("ours", i) in r) && (("sockperf", i) in r)) d[++k] = r["ours", i] - r["sockperf", i]
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (d[j] < d[i]) { t = d[i]; d[i] = d[j]; d[j] = t }
    print ""
    if (k) m = k % 2 ? d[(k + 1) / 2] : (d[k / 2] + d[k / 2 + 1]) / 2
    if (k) printf "Ours adds %d ns per message at one end (median of %d rounds, [%d–%d]); the rest of the gap is a system call'\''s exit and entry, and what the tracing costs, in both.\n", m, k, d[1], d[k]
    # Noise only ever lengthens a gap, so the lowest medians are the least disturbed pair.
    if (("ours" in lowest) && ("sockperf" in lowest))
      printf "Between the lowest medians of each (what noise only lengthens): %d ns.\n", lowest["ours"] - lowest["sockperf"]
    if (fails) printf "%d run(s) failed; raw/msgcost has their output.\n", fails
  }' "$out/msgcost.csv" >"$out/msgcost.md"
cat "$out/msgcost.md"
say "wrote $out/msgcost.md and msgcost.csv (the gaps in $raw)"
