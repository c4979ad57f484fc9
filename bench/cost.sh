#!/usr/bin/env bash
# bench/cost.sh: what an operation costs ours in counts rather than times (issue 39's cost
# table), each count beside sockperf's or libfabric's (bench/fi_peer) where the peer has one, and
# against its target. Loopback (127.0.0.1) only.
#
#   bench/cost.sh [BUILD_DIR]          (BUILD_DIR: build/release by default)
#   BENCH_COST_ONLY=1 make bench       (make bench runs only this)
#
# Every count is taken per side (the client and the server process apart) over two runs, one of
# n operations and one of 2n, and divided as (count(2n) - count(n)) / n, so that start-up,
# connection set-up and tear-down cancel:
# - user-space instructions: valgrind --tool=callgrind on the measured side (all its threads),
#   the other side native. perf's instructions:u is used instead where the machine has it
#   (BENCH_COST_INSTR=perf); in a VM without counters it is callgrind. Valgrind cannot run
#   io_uring, so both sides run with NDK_IWARP_PROGRESS_RING=0 (the progress thread waits in
#   epoll_wait). 8 B Send round trip busy-polled (--poll) and with notifications; RDMA Write,
#   Read and Send at 64 KiB and 1 MiB with notifications (per KiB). A busy-polling side spins on
#   empty polls for as long as its peer takes, which depends on the machine's load, so the
#   busy-polled figure is fitted over four runs as instructions = start-up + a * round trips +
#   b * polls, and a (the round trip without its empty polls) is reported; b and the polls per
#   round trip are in the JSON. Where the polls did not vary enough between the runs, or the fit
#   gives an empty poll more than the mean poll's cost, the row is the mean difference with the
#   spinning in it, and says so.
# - system calls: strace -c -f on both sides at once, the provider as configured (io_uring on
#   where it works). Per 8 B round trip (busy-polled: the calls that moved bytes, and all of
#   them; notifications: all, and the waits), and per MiB for 1 MiB Write, Read and Send
#   busy-polled as bench/syscalls.sh runs them (all, and the receiver's reads).
# - mutex lock/unlock pairs per 8 B round trip: bench/lockcount.c, an LD_PRELOAD shim counting
#   pthread_mutex_lock/trylock/unlock per thread (pairs = unlocks), native speed; busy-polled,
#   the calls to pthread_mutex_unlock in the instruction runs, fitted as the instructions are.
#   Both add the iwarp provider's own lock (lock.h: qp->lock, the RX engine's owner), inlined
#   where no shim sees it: the executions of its give's exchange in the callgrind runs.
# - atomic read-modify-writes per 8 B round trip: from the same callgrind runs, each
#   instruction's executions (--dump-instr=yes) joined to objdump's disassembly: LOCK-prefixed
#   instructions and xchg with memory, the mutexes' own included.
# - msgcost: bench/msgcost.sh's ns per message above sockperf (skipped with BENCH_COST_QUICK=1;
#   BENCH_COST_MSGCOST=reuse takes the msgcost.csv bench/run.sh has just written).
# Results: BUILD_DIR/bench/cost.md (the table), cost.json (one object per row), raw/cost/.
#
# Environment: BENCH_COST_QUICK (0; 1: small n and one row each of instructions, system calls and
# mutex pairs, for the test), BENCH_COST_N (2000: round trips of the shorter 8 B run),
# BENCH_COST_N64K (400), BENCH_COST_N1M (40), BENCH_COST_MSGCOST (1; 0: no msgcost row; reuse),
# BENCH_COST_INSTR (auto, perf, callgrind), BENCH_CPUS ("0 1": server
# CPU, client CPU; "" to not pin).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

build=
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    -*) echo "cost: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) [ -z "$build" ] || { echo "cost: one build directory only" >&2; exit 2; }; build=$1 ;;
  esac
  shift
done
build=${build:-build/release}
[ -d "$build" ] || { echo "cost: build directory $build does not exist (run make build)" >&2; exit 1; }
build=$(cd "$build" && pwd)

quick=${BENCH_COST_QUICK:-0}
case "$quick" in 0 | 1) ;; *) echo "cost: BENCH_COST_QUICK must be 0 or 1" >&2; exit 2 ;; esac
if [ "$quick" = 1 ]; then dn=200; else dn=2000; fi
n_rt=${BENCH_COST_N:-$dn}
n_64k=${BENCH_COST_N64K:-400}
n_1m=${BENCH_COST_N1M:-40}
do_msgcost=${BENCH_COST_MSGCOST:-1}
[ "$quick" = 1 ] && do_msgcost=0
cpus=${BENCH_CPUS-"0 1"}
instr_tool=${BENCH_COST_INSTR:-auto}
for v in "$n_rt" "$n_64k" "$n_1m"; do
  case "$v" in '' | *[!0-9]* | 0) echo "cost: BENCH_COST_N* must be numbers >= 1" >&2; exit 2 ;; esac
done

say() { printf 'cost: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

out=$build/bench
raw=$out/raw/cost
rm -rf "$raw"
mkdir -p "$raw"
rows=$raw/rows.tsv # what side unit ours peer peer_name target met note
: >"$rows"

ndkperf=$build/tools/ndkperf/ndkperf
provider_dir=
for d in "$build/providers" "$build/src/providers/iwarp" "$build/src/providers"; do
  if [ -e "$d/ndk-iwarp.so" ]; then provider_dir=$d; break; fi
done
{ [ -x "$ndkperf" ] && [ -n "$provider_dir" ]; } || die "ndkperf or ndk-iwarp.so is not built in $build"
export NDK_PROVIDER_PATH=$provider_dir
# The system view's registry goes to a directory of our own, not the user's.
export NDK_RUNTIME_DIR=$raw/runtime
mkdir -p "$NDK_RUNTIME_DIR"

have_sockperf=1
command -v sockperf >/dev/null 2>&1 || have_sockperf=0
fi_peer=$out/fi_peer
have_fi=0
if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libfabric; then
  if [ ! -x "$fi_peer" ] || [ "$here/fi_peer/fi_peer.c" -nt "$fi_peer" ]; then
    # shellcheck disable=SC2046
    cc -std=c11 -O2 -g -Wall -Wextra -Werror -o "$fi_peer" "$here/fi_peer/fi_peer.c" \
      $(pkg-config --cflags --libs libfabric) && have_fi=1 || say "note: fi_peer did not build; no libfabric column"
  else
    have_fi=1
  fi
fi
sock_missing="sockperf not installed"
fi_missing="fi_peer not built (libfabric-dev not installed)"

srv_pin=()
cli_pin=()
read -r srv_cpu cli_cpu _ <<<"$cpus" || true
if [ -n "${srv_cpu:-}" ] && [ -n "${cli_cpu:-}" ] && taskset -c "$srv_cpu" true 2>/dev/null &&
  taskset -c "$cli_cpu" true 2>/dev/null; then
  srv_pin=(taskset -c "$srv_cpu")
  cli_pin=(taskset -c "$cli_cpu")
fi

lo=127.0.0.1
port=18580 # a port of its own, so that this can run beside bench/run.sh's servers

# row WHAT SIDE UNIT OURS PEER PEER_NAME TARGET NOTE: TARGET is "<= X" or "" (none); met is
# computed here from OURS (empty OURS: not measured).
row() {
  local met=''
  set -- "$1" "$2" "$3" "$(zero "$4")" "$(zero "$5")" "$6" "$7" "$8"
  if [ -n "$7" ] && [ -n "$4" ]; then
    met=$(awk -v v="$4" -v t="${7#<= }" 'BEGIN { print (v + 0 <= t + 0) ? "yes" : "no" }')
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$met" "$8" >>"$rows"
}

# zero V: V, with a negative zero ("-0", "-0.0") written as 0.
zero() { case "$1" in -0 | -0.0 | -0.00) echo 0 ;; *) echo "$1" ;; esac; }

listening() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v p=":$hex" 'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

srv_pid=
# stop_srv: ends the server (SIGINT to the program itself, a tracer's child first), waits.
stop_srv() {
  [ -n "$srv_pid" ] || return 0
  local kids c
  kids=$(cat "/proc/$srv_pid/task/"*/children 2>/dev/null || true)
  if [ -n "$kids" ]; then
    for c in $kids; do kill -INT "$c" 2>/dev/null || true; done
  else
    kill -INT "$srv_pid" 2>/dev/null || true
  fi
  for _ in $(seq 1 300); do kill -0 "$srv_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$srv_pid" 2>/dev/null || true
  wait "$srv_pid" 2>/dev/null || true
  srv_pid=
}
trap stop_srv EXIT

# pair TAG "SERVER WRAP" "SERVER CMD" "CLIENT WRAP" "CLIENT CMD" ONESHOT: runs the server (under
# its wrapper, a word list, possibly empty), waits for it to listen, runs the client, then waits
# for a one-shot server to exit by itself (so that its counts are complete) or stops it.
# Output: raw/TAG.srv.log, raw/TAG.out (client stdout), raw/TAG.cli.log.
pair() {
  local tag=$1 sw=$2 srv=$3 cw=$4 cli=$5 oneshot=$6 rc=0 f=$raw/$1
  listening "$port" && { say "$tag: port $port is in use by another program"; return 1; }
  set -f # the word lists may hold a callgrind pattern with a *
  # shellcheck disable=SC2086 # word lists
  "${srv_pin[@]}" $sw $srv >"$f.srv.log" 2>&1 &
  srv_pid=$!
  set +f
  for _ in $(seq 1 1200); do # valgrind takes seconds to start
    listening "$port" && break
    kill -0 "$srv_pid" 2>/dev/null || break
    sleep 0.05
  done
  listening "$port" || { say "$tag: the server did not come up: $(tail -n 1 "$f.srv.log")"; stop_srv; return 1; }
  set -f
  # shellcheck disable=SC2086
  timeout -k 5 600 "${cli_pin[@]}" $cw $cli >"$f.out" 2>"$f.cli.log" || rc=$?
  set +f
  if [ "$oneshot" = 1 ]; then
    for _ in $(seq 1 600); do kill -0 "$srv_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  stop_srv
  [ "$rc" = 0 ] || { say "$tag: the client failed (exit $rc): $(grep -v '^[[:space:]]*$' "$f.cli.log" | tail -n 1)"; return 1; }
}

# Commands of one run. ndk_cmds MODE SIZE OP N: sets srv/cli for ndkperf (MODE lat-poll,
# lat-notify, bw-poll, bw-notify). sock_cmds MODE SECS: sockperf ping-pong (poll or block).
# fi_cmds OP SIZE N: fi_peer bandwidth with notifications (fi_cq_sread).
srv='' cli='' oneshot=''
ndk_cmds() {
  local mode=$1 z=$2 op=$3 n=$4 p=
  case "$mode" in *poll) p=--poll ;; esac
  srv="$ndkperf -s $lo:$port --once $p"
  case "$mode" in
    lat-*) cli="$ndkperf -c $lo:$port -t $op -z $z --lat -n $n $p --json" ;;
    bw-*) cli="$ndkperf -c $lo:$port -t $op -z $z -n $n -d 8 $p --json" ;;
  esac
  oneshot=1
}
sock_cmds() {
  if [ "$1" = poll ]; then
    srv="sockperf sr --tcp -i $lo -p $port -m 1048575 --nonblocked --timeout 0"
    cli="sockperf pp --tcp -i $lo -p $port -m 14 -t $2 --nonblocked"
  else
    srv="sockperf sr --tcp -i $lo -p $port -m 1048575"
    cli="sockperf pp --tcp -i $lo -p $port -m 14 -t $2"
  fi
  oneshot=0
}
# FI_PROVIDER=tcp is exported, not given through env(1): valgrind would measure env, not fi_peer.
export FI_PROVIDER=tcp
fi_cmds() {
  srv="$fi_peer -s -a $lo -p $port -1"
  cli="$fi_peer -c $lo -p $port -t $1 -z $2 -n $3 -d 8 -w 0"
  oneshot=1
}
# sock_msgs FILE: round trips sockperf's client completed ([Total Run] ReceivedMessages).
sock_msgs() { sed -n 's/.*\[Total Run\].*ReceivedMessages=\([0-9]*\).*/\1/p' "$1" | head -n 1; }

# ---------- user-space instructions ----------
if [ "$instr_tool" = auto ]; then
  if perf stat -x, -e instructions:u -o "$raw/perf-probe" -- true >/dev/null 2>&1 &&
    ! grep -q 'not supported\|not counted' "$raw/perf-probe"; then
    instr_tool=perf
  else
    instr_tool=callgrind
  fi
fi
case "$instr_tool" in
  perf) instr_method="perf stat -e instructions:u (hardware counter), all threads of the side" ;;
  callgrind) instr_method="valgrind --tool=callgrind, all threads of the side (perf's instructions:u is not supported on this machine)" ;;
  *) die "BENCH_COST_INSTR must be auto, perf or callgrind" ;;
esac
atomic_method="callgrind --dump-instr=yes: executions of each instruction, joined to objdump's disassembly of its object; LOCK-prefixed instructions and xchg with memory (mutexes' own included), all threads of the side, progress_ring=0"
have_instr=1
if [ "$instr_tool" = callgrind ] && ! command -v valgrind >/dev/null 2>&1; then
  have_instr=0
  say "note: valgrind is not installed: no instruction counts"
fi

# iwrap TAG [FUNCTION]: the measured side's wrapper for instruction counts (file raw/TAG.ins);
# with FUNCTION (a callgrind pattern), only what runs inside it is counted.
iwrap() {
  if [ "$instr_tool" = perf ]; then echo "perf stat -x , -e instructions:u -o $raw/$1.ins --"
  else echo "valgrind -q --tool=callgrind --dump-instr=yes --dump-line=no ${2:+--toggle-collect=$2} --callgrind-out-file=$raw/$1.ins"; fi
}
# sockperf sizes a buffer of packet times by the run's length, fills its messages with rand()
# and sorts the samples after the loop: work that grows with the run, not the messages. So its
# instructions are counted inside its message loop only (client: doSendThenReceiveLoop, server:
# doLoop), which holds every message's work; ours are counted over the whole process.
sock_loop() { if [ "$1" = server ]; then echo '*::doLoop()'; else echo '*::doSendThenReceiveLoop()'; fi; }
# ins_total TAG: instructions counted in raw/TAG.ins.
ins_total() {
  if [ "$instr_tool" = perf ]; then awk -F, '$3 ~ /instructions/ { print $1 + 0 }' "$raw/$1.ins"
  else awk '/^summary:/ { print $2 }' "$raw/$1.ins"; fi
}
# ins_calls TAG REGEX: calls the side made to the functions whose names match REGEX, and their
# inclusive instructions (callgrind only: its call arcs "cfn=(id) name", "calls=N ...", cost).
ins_calls() {
  awk -v re="$2" '
    # fn= and cfn= share one table of compressed names: "(id) name" the first time, "(id)" after.
    /^c?fn=/ { s = $0; sub(/^c?fn=/, "", s); id = s; sub(/ .*/, "", id); nm = s; sub(/^\([0-9]+\) ?/, "", nm)
               if (nm != "") name[id] = nm; cur = ($0 ~ /^cfn=/) ? id : ""; next }
    /^calls=/ { hit = (cur != "" && name[cur] ~ re); if (hit) { c = $1; sub(/^calls=/, "", c); t += c } cur = ""; next }
    # The line after calls= is the inclusive cost of those calls.
    hit { incl += $2; hit = 0 }
    END { printf "%d %d\n", t, incl }' "$raw/$1.ins"
}

# ins_atomics TAG: executions of atomic read-modify-writes in raw/TAG.ins (callgrind only): the
# per-instruction counts (--dump-instr=yes: addresses as in the object file) joined to objdump's
# disassembly of each object, counting LOCK-prefixed instructions and xchg with a memory operand
# (locked without the prefix).
ins_atomics() {
  local f=$raw/$1.ins counts=$raw/$1.addr p c
  awk '
    function hex(s,    i, c, v) { v = 0; s = tolower(s); for (i = 3; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c }; return v }
    # ob= and cob= share one table of compressed names.
    /^c?ob=/ { s = $0; sub(/^c?ob=/, "", s); id = s; sub(/ .*/, "", id); nm = s; sub(/^\([0-9]+\) ?/, "", nm)
               if (nm != "") ob[id] = nm; if ($0 ~ /^ob=/) cur = ob[id]; next }
    # The cost line after calls= is the call'"'"'s inclusive cost, not executions of the call.
    /^calls=/ { skip = 1; next }
    /^(0x|\+|-|\*)/ {
      a = $1
      if (a ~ /^0x/) addr = hex(a); else if (a ~ /^\+/) addr += substr(a, 2) + 0; else if (a ~ /^-/) addr -= substr(a, 2) + 0
      if (skip) { skip = 0; next }
      n[cur SUBSEP addr] += $2; next }
    END { for (k in n) { split(k, p, SUBSEP); printf "%s %d %d\n", p[1], p[2], n[k] } }' "$f" >"$counts"
  mkdir -p "$raw/locked"
  awk '{ print $1 }' "$counts" | sort -u | while read -r p; do
    [ -f "$p" ] || continue
    c=$raw/locked/$(printf '%s' "$p" | tr '/' '_')
    [ -e "$c" ] && continue
    objdump -d --no-show-raw-insn "$p" 2>/dev/null | awk -v p="$p" -F'\t' '
      function hex(s,    i, c, v) { v = 0; for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; if (c < 0) break; v = v * 16 + c }; return v }
      NF >= 2 && $1 ~ /^ *[0-9a-f]+:$/ && ($2 ~ /^lock / || ($2 ~ /^xchg/ && $2 ~ /\(/)) {
        a = $1; gsub(/[ :]/, "", a); printf "%s %d\n", p, hex(a) }' >"$c"
  done
  cat "$raw/locked/"* 2>/dev/null | awk 'NR == FNR { L[$1 SUBSEP $2] = 1; next } (($1 SUBSEP $2) in L) { t += $3 }
    END { printf "%d\n", t }' - "$counts"
}

# ins_lock_gives TAG: executions of iw_lock_give in raw/TAG.ins (callgrind only): the iwarp
# provider's own sleeping lock (qp->lock and the RX engine's owner, lock.h) is inlined, so no
# call shows it and no LD_PRELOAD sees it. Of the atomic instructions ins_atomics found
# (raw/locked), the ones whose innermost inlined function is iw_lock_give (its exchange;
# addr2line -f -i over the object's debug information) are counted from its per-address counts.
ins_lock_gives() {
  local counts=$raw/$1.addr f c obj
  [ -s "$counts" ] || ins_atomics "$1" >/dev/null || return 1
  mkdir -p "$raw/lockgive"
  for f in "$raw/locked/"*; do
    [ -s "$f" ] || continue
    c=$raw/lockgive/${f##*/}
    [ -e "$c" ] && continue
    obj=$(awk '{ print $1; exit }' "$f")
    awk '{ printf "0x%x\n", $2 }' "$f" | addr2line -f -i -a -e "$obj" 2>/dev/null | awk -v p="$obj" '
      function hex(s,    i, c, v) { v = 0; s = tolower(s); for (i = 3; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c }; return v }
      # -a prints the address, then function and place pairs from the innermost inlined one out.
      /^0x/ { a = $1; first = 1; next }
      first { first = 0; if ($1 == "iw_lock_give") printf "%s %d\n", p, hex(a) }' >"$c"
  done
  cat "$raw/lockgive/"* 2>/dev/null | awk 'NR == FNR { L[$1 SUBSEP $2] = 1; next } (($1 SUBSEP $2) in L) { t += $3 }
    END { printf "%d\n", t }' - "$counts"
}

# instr_run TAG SIDE: one run of the commands in srv/cli with SIDE measured; prints the count.
instr_run() {
  local tag=$1 side=$2 sw='' cw='' only=''
  export NDK_IWARP_PROGRESS_RING=0
  case "$srv" in sockperf*) [ "$instr_tool" = callgrind ] && only=$(sock_loop "$side") ;; esac
  if [ "$side" = server ]; then sw=$(iwrap "$tag" "$only"); else cw=$(iwrap "$tag" "$only"); fi
  pair "$tag" "$sw" "$srv" "$cw" "$cli" "$oneshot" || return 1
  [ -s "$raw/$tag.ins" ] || { say "$tag: no instruction count"; return 1; }
  ins_total "$tag"
}

# instr_ours WHAT SIDE MODE SIZE OP N UNIT TARGET: ours, (count(2n) - count(n)) / n, per UNIT
# (rt: per operation; kib: per KiB of payload).
instr_ours() {
  local side=$2 mode=$3 z=$4 op=$5 n=$6 unit=$7 t1 t2 tag=ins.$3.$5.$4.$2
  ndk_cmds "$mode" "$z" "$op" "$n"; t1=$(instr_run "$tag.n" "$side") || return 1
  ndk_cmds "$mode" "$z" "$op" $((n * 2)); t2=$(instr_run "$tag.2n" "$side") || return 1
  awk -v a="$t1" -v b="$t2" -v n="$n" -v z="$z" -v u="$unit" \
    'BEGIN { d = (b - a) / n; if (u == "kib") d /= z / 1024; printf "%.0f\n", d }'
}

# fit FILE [DECIMALS]: lines "ops polls count"; least squares of count = s + a*ops + b*polls.
# Prints "a b polls_per_op" or fails when the polls do not vary enough apart from the
# operations to tell a from b.
fit() {
  awk -v d="${2:-0}" '{ n++; x[n] = $1; y[n] = $2; z[n] = $3; if (NF >= 4) { ci += $4; cp += $2 } }
    END {
      if (n < 3) exit 1
      bound = cp > 0 ? ci / cp : 0
      for (i = 1; i <= n; i++) {
        S += 1; Sx += x[i]; Sy += y[i]; Sxx += x[i] * x[i]; Syy += y[i] * y[i]; Sxy += x[i] * y[i]
        Sz += z[i]; Sxz += x[i] * z[i]; Syz += y[i] * z[i]; r[i] = y[i] / x[i]; rs += r[i]
      }
      # The ratio polls/ops must move by 10 % or more between runs.
      lo = hi = r[1]; for (i = 2; i <= n; i++) { if (r[i] < lo) lo = r[i]; if (r[i] > hi) hi = r[i] }
      if (hi - lo < 0.10 * rs / n) exit 1
      # Cramer on the normal equations [S Sx Sy; Sx Sxx Sxy; Sy Sxy Syy] [s a b] = [Sz Sxz Syz].
      D = S * (Sxx * Syy - Sxy * Sxy) - Sx * (Sx * Syy - Sxy * Sy) + Sy * (Sx * Sxy - Sxx * Sy)
      if (D == 0) exit 1
      Da = S * (Sxz * Syy - Syz * Sxy) - Sz * (Sx * Syy - Sxy * Sy) + Sy * (Sx * Syz - Sxz * Sy)
      Db = S * (Sxx * Syz - Sxy * Sxz) - Sx * (Sx * Syz - Sxz * Sy) + Sz * (Sx * Sxy - Sxx * Sy)
      a = Da / D; b = Db / D
      # An empty poll cannot cost more than the mean poll (4th column: the inclusive cost of the
      # polls, where given); a fit that says so has not separated them.
      if (b < 0 || (bound > 0 && b > bound)) exit 1
      printf "%." d "f %.1f %.2f\n", a, b, rs / n
    }' "$1"
}

# instr_poll WHO SIDE N: busy-polled 8 B round trip, four runs (n, 2n, n, 2n), fitted. WHO is
# ours or sockperf (time-based: 1 and 2 s). Prints "a b polls_per_rt" or, when the fit
# cannot separate the polls, "raw" and the plain difference with the empty polls in it.
instr_poll() {
  local who=$1 side=$2 n=$3 k m t p tag re data
  data=$raw/ins.poll.$who.$side.fit
  : >"$data"
  if [ "$who" = ours ]; then re='^iw_get_cq_results$'; else re='^(recv|recvfrom|recvmsg|read)$'; fi
  for k in 1 2 3 4; do
    tag=ins.poll.$who.$side.$k
    if [ "$who" = ours ]; then
      m=$((k % 2 ? n : n * 2)); ndk_cmds lat-poll 8 send "$m"
    else
      sock_cmds poll $((k % 2 ? 1 : 2))
    fi
    t=$(instr_run "$tag" "$side") || return 1
    [ "$who" = ours ] || { m=$(sock_msgs "$raw/$tag.out"); [ -n "$m" ] || return 1; }
    read -r p c <<<"$(ins_calls "$tag" "$re")"
    echo "$m $p $t $c" >>"$data"
  done
  if fit "$data" >"$data.result"; then
    echo 1 >"$data.ok"
    cat "$data.result"
    return 0
  fi
  echo 0 >"$data.ok"
  plain "$data" 0
}
# plain FILE DECIMALS: the fit's fallback, the mean of the two pairs' differences (runs 1-2 and
# 3-4), empty polls included, then the polls per operation: "raw VALUE POLLS".
plain() {
  awk -v d="$2" '{ x[NR] = $1; y[NR] = $2; z[NR] = $3 }
    END { v = ((z[2] - z[1]) / (x[2] - x[1]) + (z[4] - z[3]) / (x[4] - x[3])) / 2
          printf "raw %." d "f %.2f\n", v, (y[1] / x[1] + y[2] / x[2] + y[3] / x[3] + y[4] / x[4]) / 4 }' "$1"
}
# fitted FILE DATA DECIMALS: FILE fitted if DATA's instruction fit held, else the plain mean.
fitted() {
  if [ "$(cat "$2.ok" 2>/dev/null)" = 1 ] && fit "$1" "$3"; then return 0; fi
  plain "$1" "$3"
}

# instr_sock MODE SIDE: sockperf blocking round trip, (count(2 s) - count(1 s)) / round trips.
instr_sock_block() {
  local side=$1 t1 t2 m1 m2
  sock_cmds block 1; t1=$(instr_run ins.block.sock.$side.1 "$side") || return 1
  m1=$(sock_msgs "$raw/ins.block.sock.$side.1.out")
  sock_cmds block 2; t2=$(instr_run ins.block.sock.$side.2 "$side") || return 1
  m2=$(sock_msgs "$raw/ins.block.sock.$side.2.out")
  [ -n "$m1" ] && [ -n "$m2" ] && [ "$m2" -gt "$m1" ] || return 1
  awk -v a="$t1" -v b="$t2" -v m="$m1" -v M="$m2" 'BEGIN { printf "%.0f\n", (b - a) / (M - m) }'
}

instr_fi() {
  local side=$1 op=$2 z=$3 n=$4 t1 t2
  fi_cmds "$op" "$z" "$n"; t1=$(instr_run "ins.fi.$op.$z.$side.n" "$side") || return 1
  fi_cmds "$op" "$z" $((n * 2)); t2=$(instr_run "ins.fi.$op.$z.$side.2n" "$side") || return 1
  awk -v a="$t1" -v b="$t2" -v n="$n" -v z="$z" 'BEGIN { printf "%.0f\n", (b - a) / n / (z / 1024) }'
}

sides="client server"
[ "$quick" = 1 ] && sides=client
if [ "$have_instr" = 1 ]; then
  say "instructions with $instr_tool; 8 B round trips n=$n_rt and $((n_rt * 2))"
  for side in $sides; do
    target=
    [ "$side" = client ] && target="<= 2500"
    v=$(instr_ours x "$side" lat-notify 8 send "$n_rt" rt) || v=
    peer=
    pnote="sockperf ping-pong --tcp (blocking recv), its message loop only (callgrind --toggle-collect)"
    if [ "$quick" = 0 ]; then
      if [ "$have_sockperf" = 1 ]; then peer=$(instr_sock_block "$side") || peer=; else pnote=$sock_missing; fi
    else
      pnote="(not run in quick mode)"
    fi
    row "user-space instructions per 8 B Send round trip, notifications" "$side" "instructions" "$v" "$peer" "sockperf" "$target" "$instr_method; progress_ring=0 (epoll); peer: $pnote"
    if [ "$instr_tool" = callgrind ] && [ -n "$v" ]; then
      a1=$(ins_atomics "ins.lat-notify.send.8.$side.n") && a2=$(ins_atomics "ins.lat-notify.send.8.$side.2n") &&
        v=$(awk -v a="$a1" -v b="$a2" -v n="$n_rt" 'BEGIN { printf "%.1f\n", (b - a) / n }') || v=''
      # The provider's own lock's pairs per round trip, for the mutex row below.
      if g1=$(ins_lock_gives "ins.lat-notify.send.8.$side.n") && g2=$(ins_lock_gives "ins.lat-notify.send.8.$side.2n"); then
        awk -v a="$g1" -v b="$g2" -v n="$n_rt" 'BEGIN { printf "%.2f\n", (b - a) / n }' >"$raw/iwlock.notify.$side"
      fi
      peer=''
      if [ -e "$raw/ins.block.sock.$side.2.ins" ] && m1=$(sock_msgs "$raw/ins.block.sock.$side.1.out") &&
        m2=$(sock_msgs "$raw/ins.block.sock.$side.2.out") && [ -n "$m1" ] && [ -n "$m2" ] && [ "$m2" -gt "$m1" ]; then
        a1=$(ins_atomics "ins.block.sock.$side.1") && a2=$(ins_atomics "ins.block.sock.$side.2") &&
          peer=$(awk -v a="$a1" -v b="$a2" -v m="$m1" -v M="$m2" 'BEGIN { printf "%.1f\n", (b - a) / (M - m) }') || peer=''
      fi
      row "atomic read-modify-writes per 8 B Send round trip, notifications" "$side" "operations" "$v" "$peer" "sockperf" "" "$atomic_method; the same runs as the instruction row; peer: $pnote"
    fi
    [ "$quick" = 1 ] && continue

    target=
    [ "$side" = client ] && target="<= 2000"
    f=$(instr_poll ours "$side" "$n_rt") || f=
    v='' note="$instr_method; progress_ring=0; fitted over 4 runs (n, 2n, n, 2n) as start-up + a*round trips + b*CQ polls, a shown"
    case "$f" in
      raw*) read -r _ v e <<<"$f"; note="$instr_method; progress_ring=0; the empty polls could not be told apart over 4 runs (n, 2n, n, 2n): the mean difference, spinning included, $e CQ polls per round trip" ;;
      ?*) read -r v b e <<<"$f"; note="$note; an empty poll costs $b instructions; $e CQ polls per round trip (mean of the runs)" ;;
    esac
    peer=
    if [ "$have_sockperf" = 1 ]; then
      f=$(instr_poll sockperf "$side" 0) || f=
      case "$f" in
        raw*) read -r _ peer e <<<"$f"; note="$note; sockperf (--nonblocked, 1, 2, 1, 2 s): the mean difference, spinning included, $e recv calls per round trip" ;;
        ?*) read -r peer b e <<<"$f"; note="$note; sockperf --nonblocked fitted the same way over recv calls (1, 2, 1, 2 s): $b per empty recv, $e recv calls per round trip" ;;
      esac
    else
      note="$note; peer: $sock_missing"
    fi
    row "user-space instructions per 8 B Send round trip, busy-polled" "$side" "instructions" "$v" "$peer" "sockperf" "$target" "$note"
    if [ "$instr_tool" = callgrind ]; then
      v='' peer=''
      # The same four runs, fitted the same way with the atomics in place of the instructions.
      for who in ours sockperf; do
        fd=$raw/ins.poll.$who.$side.fit
        [ -s "$fd" ] && [ "$(wc -l <"$fd")" = 4 ] || continue
        k=0
        while read -r m p _; do
          k=$((k + 1)); x=$(ins_atomics "ins.poll.$who.$side.$k") || continue
          echo "$m $p $x"
        done <"$fd" >"$fd.atomics"
        f=$(fitted "$fd.atomics" "$fd" 1)
        f=${f#raw }
        read -r x _ <<<"$f"
        if [ "$who" = ours ]; then v=$x; else peer=$x; fi
      done
      row "atomic read-modify-writes per 8 B Send round trip, busy-polled" "$side" "operations" "$v" "$peer" "sockperf" "" "$atomic_method; the instruction row's four runs, fitted over the polls where its fit held, else the mean difference"
      # Mutex pairs of the same runs: calls to pthread_mutex_unlock and the provider's own
      # lock's gives, fitted the same way; the LD_PRELOAD count below runs at full speed, where
      # the empty polls' pairs come on top.
      v=''
      fd=$raw/ins.poll.ours.$side.fit
      if [ -s "$fd" ] && [ "$(wc -l <"$fd")" = 4 ]; then
        k=0
        while read -r m p _; do
          k=$((k + 1)); read -r u _ <<<"$(ins_calls "ins.poll.ours.$side.$k" '^pthread_mutex_unlock')"
          g=$(ins_lock_gives "ins.poll.ours.$side.$k") || break    # no count without the lock's
          echo "$m $p $((u + g))"
        done <"$fd" >"$fd.mutex"
        if [ "$(wc -l <"$fd.mutex")" = 4 ]; then
          f=$(fitted "$fd.mutex" "$fd" 2)
          case "$f" in raw*) echo "empty polls included" >"$raw/mutex.poll.$side.how" ;; esac
          f=${f#raw }
          read -r v b _ <<<"$f"
        fi
      fi
      echo "$v" >"$raw/mutex.poll.$side.fitted"
    fi

    for z in 65536 1048576; do
      if [ "$z" = 65536 ]; then n=$n_64k; zl="64 KiB"; else n=$n_1m; zl="1 MiB"; fi
      for op in write read send; do
        v=$(instr_ours x "$side" bw-notify "$z" "$op" "$n" kib) || v=
        peer='' pnote=''
        if [ "$have_fi" = 1 ]; then peer=$(instr_fi "$side" "$op" "$z" "$n") || peer=; else pnote="; peer: $fi_missing"; fi
        row "user-space instructions per KiB, $zl RDMA ${op^}" "$side" "instructions/KiB" "$v" "$peer" "fi_peer" "" \
          "$instr_method; progress_ring=0; notifications, depth 8, n=$n and $((n * 2)); fi_peer: libfabric tcp, fi_cq_sread$pnote"
      done
    done
  done
else
  row "user-space instructions per 8 B Send round trip, notifications" client "instructions" "" "" "sockperf" "<= 2500" "not measured: valgrind is not installed"
fi

# ---------- system calls ----------
# st_parse FILE: "syscall calls errors" lines of strace -c's table.
st_parse() {
  awk '/^-----/ { d++; next } d == 1 && NF >= 5 { e = (NF >= 6) ? $5 : 0; print $NF, $4, e }' "$1"
}
# st_delta TAG1 TAG2 SIDE N: per-operation difference of the two runs' counts: prints
# "all ok_data waits reads_ok" per operation, where ok_data is the successful data calls
# (receives and sends), waits the wait calls, reads_ok the successful receives.
st_delta() {
  local a=$raw/$1.$3.st b=$raw/$2.$3.st
  [ -s "$a" ] && [ -s "$b" ] || return 1
  { st_parse "$a" | sed 's/^/1 /'; st_parse "$b" | sed 's/^/2 /'; } | awk -v n="$4" '
    BEGIN { split("read readv recv recvfrom recvmsg recvmmsg", r, " "); for (i in r) rd[r[i]] = 1
            split("write writev send sendto sendmsg sendmmsg", w, " "); for (i in w) wr[w[i]] = 1
            split("epoll_wait epoll_pwait epoll_pwait2 io_uring_enter poll ppoll select pselect6 futex", x, " "); for (i in x) wt[x[i]] = 1 }
    $2 == "total" { next }
    { s = ($1 == 1) ? -1 : 1; all += s * $3
      if (($2 in rd) || ($2 in wr)) ok += s * ($3 - $4)
      if ($2 in rd) rok += s * ($3 - $4)
      if ($2 in wt) wait += s * $3 }
    END { printf "%.2f %.2f %.2f %.2f\n", all / n, ok / n, wait / n, rok / n }'
}
# st_pair TAG: the current srv/cli with both sides under strace -f -c.
st_pair() { pair "$1" "strace -f -c -o $raw/$1.server.st" "$srv" "strace -f -c -o $raw/$1.client.st" "$cli" "$oneshot"; }

if command -v strace >/dev/null 2>&1; then
  say "system calls with strace -c -f"
  st_method="strace -c -f, both sides traced, progress_ring as configured (io_uring where it works)"
  n=$n_rt
  modes="lat-notify lat-poll"
  [ "$quick" = 1 ] && modes=lat-notify
  for mode in $modes; do
    ok=1
    ndk_cmds "$mode" 8 send "$n"; st_pair "st.$mode.n" || ok=0
    ndk_cmds "$mode" 8 send $((n * 2)); st_pair "st.$mode.2n" || ok=0
    sok=0
    if [ "$quick" = 0 ] && [ "$have_sockperf" = 1 ]; then
      sm=${mode#lat-}; [ "$sm" = notify ] && sm=block
      sock_cmds "$sm" 1; st_pair "st.sock.$sm.1" && sock_cmds "$sm" 2 && st_pair "st.sock.$sm.2" && sok=1
      m1=$(sock_msgs "$raw/st.sock.$sm.1.out"); m2=$(sock_msgs "$raw/st.sock.$sm.2.out")
      [ -n "$m1" ] && [ -n "$m2" ] && [ "$m2" -gt "$m1" ] || sok=0
    fi
    for side in $sides; do
      o=
      [ "$ok" = 1 ] && o=$(st_delta "st.$mode.n" "st.$mode.2n" "$side" "$n") || o=
      s=
      [ "$sok" = 1 ] && s=$(st_delta "st.sock.$sm.1" "st.sock.$sm.2" "$side" $((m2 - m1))) || s=
      read -r o_all o_ok o_wait _ <<<"${o:-- - - -}"
      read -r s_all s_ok s_wait _ <<<"${s:-- - - -}"
      [ "$o_all" = - ] && o_all='' o_ok='' o_wait=''
      [ "$s_all" = - ] && s_all='' s_ok='' s_wait=''
      pn="sockperf"
      note="$st_method; n=$n and $((n * 2))"
      [ "$have_sockperf" = 0 ] && note="$note; peer: $sock_missing"
      [ "$quick" = 1 ] && note="$note; peer: not run in quick mode"
      if [ "$mode" = lat-poll ]; then
        row "system calls per 8 B round trip, busy-polled: receives and sends that moved bytes" "$side" "calls" "$o_ok" "$s_ok" "$pn" "<= ${s_ok:-2}" "$note; target: sockperf's (one receive and one send per message)"
        row "system calls per 8 B round trip, busy-polled: all (failed polls included)" "$side" "calls" "$o_all" "$s_all" "$pn" "" "$note; the failed receives of a spinning side scale with the wait, not the work"
      else
        row "system calls per 8 B round trip, notifications: all" "$side" "calls" "$o_all" "$s_all" "$pn" "" "$note; sockperf blocking"
        row "system calls per 8 B round trip, notifications: waits (epoll_wait, io_uring_enter, futex, poll)" "$side" "calls" "$o_wait" "$s_wait" "$pn" "<= 1" "$note; target: one wait per message"
      fi
    done
  done
  if [ "$quick" = 0 ]; then
    n=$((n_1m * 5))
    z=1048576
    for op in write read send; do
      ok=1
      ndk_cmds bw-poll "$z" "$op" "$n"; st_pair "st.$op.n" || ok=0
      ndk_cmds bw-poll "$z" "$op" $((n * 2)); st_pair "st.$op.2n" || ok=0
      fok=0
      if [ "$have_fi" = 1 ]; then
        fi_cmds "$op" "$z" "$n"; cli="$cli --poll"; st_pair "st.fi.$op.n" &&
          fi_cmds "$op" "$z" $((n * 2)) && cli="$cli --poll" && st_pair "st.fi.$op.2n" && fok=1
      fi
      # The receiver of the payload: the server for Write and Send, the client for Read.
      recv_side=server
      [ "$op" = read ] && recv_side=client
      for side in client server; do
        o=
        [ "$ok" = 1 ] && o=$(st_delta "st.$op.n" "st.$op.2n" "$side" "$n") || o=
        s=
        [ "$fok" = 1 ] && s=$(st_delta "st.fi.$op.n" "st.fi.$op.2n" "$side" "$n") || s=
        read -r o_all _ _ o_rd <<<"${o:-- - - -}"
        read -r s_all _ _ s_rd <<<"${s:-- - - -}"
        [ "$o_all" = - ] && o_all='' o_rd=''
        [ "$s_all" = - ] && s_all='' s_rd=''
        note="$st_method; busy-polled (--poll), depth 8, n=$n and $((n * 2))"
        [ "$have_fi" = 0 ] && note="$note; peer: $fi_missing"
        row "system calls per MiB, 1 MiB RDMA ${op^}, busy-polled: all" "$side" "calls/MiB" "$o_all" "$s_all" "fi_peer" "" "$note"
        if [ "$side" = "$recv_side" ]; then
          row "receives per MiB, 1 MiB RDMA ${op^}, receiver" "$side" "calls/MiB" "$o_rd" "$s_rd" "fi_peer" "<= 3.6" "$note; successful read/recv calls; target: no more than issue 39 found (3.6)"
        fi
      done
    done
  fi
else
  row "system calls per 8 B round trip, notifications: all" client "calls" "" "" "sockperf" "" "not measured: strace is not installed"
fi

# ---------- mutex pairs ----------
lc_so=$out/lockcount.so
if [ ! -e "$lc_so" ] || [ "$here/lockcount.c" -nt "$lc_so" ]; then
  cc -std=c11 -O2 -g -Wall -Wextra -Werror -shared -fPIC -o "$lc_so" "$here/lockcount.c" -ldl ||
    die "lockcount.so did not build"
fi
# lc_total TAG SIDE: unlocks (= lock/unlock pairs) of the side's process.
lc_total() { cat "$raw/$1.$2.lc".* 2>/dev/null | awk '$1 == "total" { u += $7 } END { if (NR == 0) exit 1; print u }'; }
lc_pair() {
  pair "$1" "env LD_PRELOAD=$lc_so LC_OUT=$raw/$1.server.lc" "$srv" "env LD_PRELOAD=$lc_so LC_OUT=$raw/$1.client.lc" "$cli" "$oneshot"
}
say "mutex pairs with bench/lockcount.c"
modes="lat-poll lat-notify"
[ "$quick" = 1 ] && modes=lat-notify
n=$n_rt
for mode in $modes; do
  ok=1
  ndk_cmds "$mode" 8 send "$n"; lc_pair "lc.$mode.n" || ok=0
  ndk_cmds "$mode" 8 send $((n * 2)); lc_pair "lc.$mode.2n" || ok=0
  for side in $sides; do
    v=
    if [ "$ok" = 1 ] && a=$(lc_total "lc.$mode.n" "$side") && b=$(lc_total "lc.$mode.2n" "$side"); then
      v=$(awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN { printf "%.2f\n", (b - a) / n }')
    fi
    target=''
    [ "$mode" = lat-poll ] && [ "$side" = client ] && target="<= 4"
    ml="busy-polled"; [ "$mode" = lat-notify ] && ml="notifications"
    note="bench/lockcount.c (LD_PRELOAD): pthread_mutex_unlock calls of all threads, n=$n and $((n * 2)); per-thread counts in raw/cost/lc.*; sockperf takes no mutex on its path"
    # The iwarp provider's own lock (lock.h) is inlined, where no LD_PRELOAD sees it: its pairs
    # come from the notification instruction runs (ins_lock_gives) and are added.
    g=''
    if [ "$mode" = lat-notify ]; then
      g=$(cat "$raw/iwlock.notify.$side" 2>/dev/null || true)
      if [ -n "$v" ] && [ -n "$g" ]; then
        note="$note; plus the provider's own lock (qp->lock and the RX engine's owner, lock.h): $g pairs, its gives in the notification instruction row's callgrind runs, progress_ring=0"
        v=$(awk -v a="$v" -v b="$g" 'BEGIN { printf "%.2f\n", a + b }')
      else
        note="$note; the provider's own lock (lock.h) not counted: no callgrind runs"
        v=''
      fi
    fi
    if [ "$mode" = lat-poll ]; then
      # Busy-polled, the count at full speed holds the pairs of the empty polls, as many as the
      # wait takes: the row shows the callgrind runs' pairs fitted over the polls when there.
      f=$(cat "$raw/mutex.poll.$side.fitted" 2>/dev/null || true)
      if [ -n "$f" ]; then
        how="fitted the same way over the CQ polls (the empty polls' pairs taken out)"
        [ -e "$raw/mutex.poll.$side.how" ] && how="the mean difference, empty polls included (the fit did not hold)"
        note="calls to pthread_mutex_unlock and gives of the provider's own lock (lock.h) in the busy-polled instruction row's four callgrind runs, $how; bench/lockcount.c at full speed, empty polls included: ${v:-not measured}; sockperf takes no mutex on its path"
        v=$f
      else
        note="$note; empty polls included (as many as the wait takes)"
      fi
    fi
    row "mutex lock/unlock pairs per 8 B round trip, $ml" "$side" "pairs" "$v" "" "" "$target" "$note"
  done
done
if [ "$instr_tool" != callgrind ] || [ "$have_instr" = 0 ]; then
  row "atomic read-modify-writes per 8 B Send round trip, notifications" client "operations" "" "" "" "" \
    "not measured: counted from callgrind's per-instruction counts, and the instructions were not counted with callgrind here"
fi

# ---------- msgcost ----------
if [ "$do_msgcost" = 1 ] || [ "$do_msgcost" = reuse ]; then
  v='' peer='' note="bench/msgcost.sh: client, from the read that brings a message to the send that answers it, busy-polled, median over rounds of ours minus sockperf"
  : >"$raw/msgcost.log"
  if { [ "$do_msgcost" = reuse ] || "$here/msgcost.sh" "$build" >"$raw/msgcost.log" 2>&1; } && [ -s "$out/msgcost.csv" ]; then
    read -r v peer <<<"$(awk -F, 'NR > 1 { r[$1, $2] = $5; if ($2 > last) last = $2; if ($1 == "sockperf") s[++ns] = $5 }
      END { k = 0
        for (i = 1; i <= last; i++) if ((("ours", i) in r) && (("sockperf", i) in r)) d[++k] = r["ours", i] - r["sockperf", i]
        if (!k) exit 1
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (d[j] < d[i]) { t = d[i]; d[i] = d[j]; d[j] = t }
        for (i = 1; i <= ns; i++) for (j = i + 1; j <= ns; j++) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
        printf "%d %d\n", k % 2 ? d[(k + 1) / 2] : (d[k / 2] + d[k / 2 + 1]) / 2, ns % 2 ? s[(ns + 1) / 2] : (s[ns / 2] + s[ns / 2 + 1]) / 2 }' \
      "$out/msgcost.csv")" || v=
    note="$note; sockperf column: its own gap (median)"
  else
    note="not measured: bench/msgcost.sh failed or left no msgcost.csv ($(tail -n 1 "$raw/msgcost.log"))"
  fi
  row "msgcost: user-space ns per message above sockperf" client "ns" "$v" "$peer" "sockperf" "<= 150" "$note"
fi

# ---------- table and JSON ----------
machine="$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) cores, Linux $(uname -r)"
{
  echo "What an operation costs ours, in counts (\`bench/cost.sh\`): each count is (count at 2n - count at n) / n, per side."
  echo "Instructions: $instr_method. Machine: $machine; load average $(cut -d' ' -f1-3 /proc/loadavg) at the end."
  echo
  echo "| what | side | ours | peer | target | met |"
  echo "|---|---|---:|---:|---|---|"
  awk -F'\t' '{ peer = ($5 == "") ? "—" : $5 " (" $6 ")"; if ($5 == "" && $9 ~ /not installed|not built/) peer = "not installed"
                ours = ($4 == "") ? "not measured" : $4
                printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, ours, peer, ($7 == "") ? "—" : $7, ($8 == "") ? "—" : $8 }' "$rows"
  echo
  echo "How each row was measured is in cost.json (\"method\")."
} >"$out/cost.md"
awk -F'\t' -v machine="$machine" -v im="$instr_method" -v quick="$quick" '
  function q(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); gsub(/\t/, " ", s); return "\"" s "\"" }
  function num(s) { return (s == "" || s == "-") ? "null" : s + 0 }
  BEGIN { printf "{\"tool\":\"bench/cost.sh\",\"machine\":%s,\"instructions_method\":%s,\"quick\":%s,\"rows\":[", q(machine), q(im), quick ? "true" : "false" }
  { printf "%s\n{\"what\":%s,\"side\":%s,\"unit\":%s,\"ours\":%s,\"peer\":%s,\"peer_name\":%s,\"target\":%s,\"met\":%s,\"method\":%s}",
      (NR > 1 ? "," : ""), q($1), q($2), q($3), num($4), num($5), ($6 == "" ? "null" : q($6)), ($7 == "" ? "null" : q($7)),
      ($8 == "" ? "null" : q($8)), q($9) }
  END { printf "\n]}\n" }' "$rows" >"$out/cost.json"
cat "$out/cost.md"
say "wrote $out/cost.md and cost.json (raw counts in $raw)"
