#!/bin/bash
# bench/costprof/readsab.sh: two builds side by side, interleaved (ABBA), for what a 1 MiB
# transfer's receiver does: successful receives per MiB (strace -c on both sides, as
# bench/cost.sh counts them) and, in a run of its own without strace, the bandwidth.
#
#   readsab.sh BUILD_A BUILD_B [REPS]     (each BUILD a build directory: tools/ndkperf, providers)
#
# Env: OP (write, send or read; default write), N (messages of the counted runs, default 500: the
# count is (2N run - N run) / N), PORT (18602). Server pinned to CPU 0, client to CPU 1, busy-
# polled, depth 8. Prints one line per run and, at the end, each build's median and quartiles
# and the paired ratios B/A (median, and the 2nd and 2nd-to-last of the sorted ratios).
set -u
[ $# -ge 2 ] || { echo "usage: readsab.sh BUILD_A BUILD_B [REPS]" >&2; exit 2; }
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd) reps=${3:-12}
op=${OP:-write} n=${N:-500} port=${PORT:-18602}
command -v strace >/dev/null || { echo "readsab.sh: strace is not installed" >&2; exit 2; }
tmp=$(mktemp -d /tmp/readsab.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export NDK_RUNTIME_DIR=$tmp/rt
mkdir -p "$NDK_RUNTIME_DIR"
# The receiver: the server for Write and Send, the client for Read.
rside=srv
[ "$op" = read ] && rside=cli

wait_listen() { for _ in $(seq 1 200); do ss -ltn | grep -q ":$port " && return 0; sleep 0.05; done; return 1; }
okreads() {
  awk '$NF ~ /^(read|readv|recv|recvfrom|recvmsg|recvmmsg)$/ { if (NF == 6) print $4 - $5; else print $4 }' "$1" |
    awk '{ s += $1 } END { print s + 0 }'
}
traced() { # BUILD N TAG
  export NDK_PROVIDER_PATH=$1/providers
  taskset -c 0 strace -f -c -o "$tmp/$3.srv" "$1/tools/ndkperf/ndkperf" -s 127.0.0.1:"$port" --once --poll >/dev/null 2>&1 &
  local sp=$!
  wait_listen || { kill $sp 2>/dev/null; return 1; }
  taskset -c 1 strace -f -c -o "$tmp/$3.cli" "$1/tools/ndkperf/ndkperf" -c 127.0.0.1:"$port" -t "$op" -z 1048576 -n "$2" \
    -d 8 --poll >/dev/null 2>&1
  wait $sp 2>/dev/null
}
bandwidth() { # BUILD
  export NDK_PROVIDER_PATH=$1/providers
  taskset -c 0 "$1/tools/ndkperf/ndkperf" -s 127.0.0.1:"$port" --once --poll >/dev/null 2>&1 &
  local sp=$!
  wait_listen || { kill $sp 2>/dev/null; return 1; }
  taskset -c 1 "$1/tools/ndkperf/ndkperf" -c 127.0.0.1:"$port" -t "$op" -z 1048576 -n 4000 -d 8 --poll --json 2>/dev/null |
    grep -o '"bw_avg_MBps":[0-9.]*' | cut -d: -f2
  wait $sp 2>/dev/null
}

: >"$tmp/runs"
for rep in $(seq 1 "$reps"); do
  order="A B"
  [ $((rep % 2)) = 0 ] && order="B A"
  for w in $order; do
    b=$A
    [ "$w" = B ] && b=$B
    if ! traced "$b" "$n" one || ! traced "$b" $((n * 2)) two; then echo "run $rep $w failed" >&2; continue; fi
    r=$(echo "scale=3; ($(okreads "$tmp/two.$rside") - $(okreads "$tmp/one.$rside")) / $n" | bc)
    bw=$(bandwidth "$b")
    echo "$rep $w reads/MiB $r MB/s ${bw:-?}" | tee -a "$tmp/runs"
  done
done
python3 - "$tmp/runs" <<'EOF'
import statistics as st, sys
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[5] == '?':
        continue
    runs.setdefault(f[1], {})[int(f[0])] = (float(f[3]), float(f[5]))
for w in ('A', 'B'):
    for i, name in ((0, 'reads/MiB'), (1, 'MB/s')):
        v = [r[i] for r in runs.get(w, {}).values()]
        if len(v) >= 2:
            q = st.quantiles(v, n=4)
            print(f"{w} {name}: median {st.median(v):.2f} [{q[0]:.2f}-{q[2]:.2f}] over {len(v)} runs")
both = sorted(set(runs.get('A', {})) & set(runs.get('B', {})))
for i, name in ((0, 'reads/MiB'), (1, 'MB/s')):
    r = sorted(runs['B'][k][i] / runs['A'][k][i] for k in both if runs['A'][k][i])
    if len(r) >= 4:
        print(f"B/A {name}: {st.median(r):.2f} [{r[1]:.2f}-{r[-2]:.2f}] over {len(r)} pairs")
EOF
