#!/usr/bin/env bash
# bench/syscalls.sh: system calls per MiB of payload, each side, ours against the peers, on
# loopback (127.0.0.1 only).
#
#   bench/syscalls.sh [BUILD_DIR]       (BUILD_DIR: build/release by default)
#
# For every size, RDMA Write, RDMA Read and Send run through ndkperf over the iwarp provider with
# MPA CRC off and on, libfabric's tcp provider runs the same three through bench/fi_peer, and
# iperf3 runs one TCP stream (the bandwidth peer; it has no Write/Read/Send, so its column is the
# same in every table). Each server and each client counts its own system calls, all threads,
# the whole process (connection set-up included), and the counts are divided by the MiB of
# payload the run moved. Counted by `perf stat` on the kernel's syscall tracepoints where they
# are readable (raw_syscalls:sys_enter for the total, syscalls:sys_enter_NAME for the data, wait
# and memory calls one by one; in-kernel counters, so the tools run at nearly full speed), else
# by `strace -c -f` (every call stops the process, so the runs are much slower and a
# busy-polling loop's share changes; the successful data calls per message much less so).
# In brackets: the calls of the data and wait syscalls that failed (EAGAIN from a drained or a
# full socket, EINTR): a busy-polling side makes them while it waits, so they scale with time,
# not bytes.
# Results: BUILD_DIR/bench/syscalls.md (the tables), syscalls.csv (every count), raw/syscalls/.
#
# Environment: BENCH_SYSCALLS_SIZES ("65536 1048576"), BENCH_SYSCALLS_SECONDS (2, whole seconds),
# BENCH_SYSCALLS_TOOL (auto: perf if it can, else strace; or perf, strace), BENCH_SYSCALLS_MIN
# (0.05: rows under this many calls per MiB in every column are left out), BENCH_BW_POLL (1:
# ndkperf and fi_peer busy-poll, as bench/run.sh's bandwidth runs; 0: they block), BENCH_DEPTH
# (32), BENCH_CPUS ("0 1": server CPU, client CPU, as bench/run.sh pins them; "" to not pin).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

build=
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    -*) echo "syscalls: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) [ -z "$build" ] || { echo "syscalls: one build directory only" >&2; exit 2; }; build=$1 ;;
  esac
  shift
done
build=${build:-build/release}
[ -d "$build" ] || { echo "syscalls: build directory $build does not exist (run make build)" >&2; exit 1; }
build=$(cd "$build" && pwd)

sizes=${BENCH_SYSCALLS_SIZES:-"65536 1048576"}
secs=${BENCH_SYSCALLS_SECONDS:-2}
tool=${BENCH_SYSCALLS_TOOL:-auto}
min=${BENCH_SYSCALLS_MIN:-0.05}
poll=${BENCH_BW_POLL:-1}
depth=${BENCH_DEPTH:-32}
cpus=${BENCH_CPUS-"0 1"}
case "$secs" in '' | *[!0-9]* | 0) echo "syscalls: BENCH_SYSCALLS_SECONDS must be a whole number >= 1" >&2; exit 2 ;; esac
case "$depth" in '' | *[!0-9]* | 0) echo "syscalls: BENCH_DEPTH must be a number >= 1" >&2; exit 2 ;; esac
case "$poll" in 0 | 1) ;; *) echo "syscalls: BENCH_BW_POLL must be 0 or 1" >&2; exit 2 ;; esac
for z in $sizes; do
  case "$z" in '' | *[!0-9]* | 0) echo "syscalls: BENCH_SYSCALLS_SIZES: $z is not a size in bytes" >&2; exit 2 ;; esac
done

say() { printf 'syscalls: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

lo=127.0.0.1
# Ports of their own, so that this can run beside bench/run.sh's servers.
p_ndk=18550
p_fi=18551
p_iperf=18552

out=$build/bench
raw=$out/raw/syscalls
rm -rf "$raw"
mkdir -p "$raw"

# ---------- the counter ----------
# Failed calls are counted for these (the calls a busy-polling or waiting side repeats).
# Counted one by one with perf (strace counts every syscall): the data, wait and memory calls.
count_names="futex epoll_ctl nanosleep clock_nanosleep sched_yield clock_gettime gettimeofday getrusage times ioctl fcntl getsockopt setsockopt mmap munmap mprotect madvise brk rt_sigprocmask rt_sigaction"
fail_names="read readv recvfrom recvmsg recvmmsg write writev sendto sendmsg sendmmsg poll ppoll select pselect6 epoll_wait epoll_pwait epoll_pwait2"
tp_dir=
for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
  [ -d "$d/events/syscalls" ] && { tp_dir=$d/events/syscalls; break; }
done
perf_ok() {
  command -v perf >/dev/null 2>&1 &&
    perf stat -x, -e syscalls:sys_enter_getpid -o /dev/null -- true >/dev/null 2>&1 &&
    { [ -n "$tp_dir" ] || perf list 2>/dev/null | grep 'syscalls:sys_exit_readv' >/dev/null; }
}
case "$tool" in
  auto) if perf_ok; then tool=perf; elif command -v strace >/dev/null 2>&1; then tool=strace; else
    die "neither perf with syscall tracepoints nor strace is available (scripts/deps.sh bench installs strace)"; fi ;;
  perf) perf_ok || die "perf cannot count the syscalls:sys_enter_* tracepoints here (no tracefs, or perf_event_paranoid)" ;;
  strace) command -v strace >/dev/null 2>&1 || die "strace is not installed" ;;
  *) die "BENCH_SYSCALLS_TOOL must be auto, perf or strace" ;;
esac
cv=()
if [ "$tool" = perf ]; then
  exits=()
  for n in $fail_names; do
    if { [ -n "$tp_dir" ] && [ -d "$tp_dir/sys_exit_$n" ]; } ||
      { [ -z "$tp_dir" ] && perf list 2>/dev/null | grep "syscalls:sys_exit_$n " >/dev/null; }; then
      exits+=(-e "syscalls:sys_exit_$n" --filter 'ret < 0')
    fi
  done
  # Enabling a tracepoint takes the kernel tens of milliseconds, so perf counts the calls a data
  # path makes one by one and everything together (raw_syscalls:sys_enter), not all ~360
  # syscalls:sys_enter_* (13 s to start on the development machine); the rest is one row.
  enters=(-e raw_syscalls:sys_enter)
  for n in $fail_names $count_names; do
    if { [ -n "$tp_dir" ] && [ -d "$tp_dir/sys_enter_$n" ]; } ||
      { [ -z "$tp_dir" ] && perf list 2>/dev/null | grep "syscalls:sys_enter_$n " >/dev/null; }; then
      enters+=(-e "syscalls:sys_enter_$n")
    fi
  done
  # counter OUT: sets cv to the counter's command line, to be followed by the counted command;
  # perf stat counts every thread of it (inherit is the default).
  counter() { cv=(perf stat -x ',' -o "$1.perf" "${enters[@]}" "${exits[@]}" --); }
  method="perf stat (in-kernel tracepoint counters: raw_syscalls:sys_enter for all calls, syscalls:sys_enter_NAME for the calls named, the rest as (others); failed calls from syscalls:sys_exit_NAME with ret < 0)"
else
  counter() { cv=(strace -f -c -o "$1.strace" --); }
  method="strace -c -f (each call stops the traced process: the runs are slower than untraced ones)"
fi
# normalize OUT: writes OUT (lines "syscall calls failed") from the tool's file.
normalize() {
  local o=$1
  if [ "$tool" = perf ]; then
    awk -F, -v names=" $fail_names " '
      /^#/ || NF < 3 { next }
      $3 == "raw_syscalls:sys_enter" { all = $1 + 0; next }
      $3 ~ /^syscalls:sys_enter_/ { n = substr($3, 20); if ($1 + 0 > 0) { calls[n] = $1 + 0; sum += $1 } }
      $3 ~ /^syscalls:sys_exit_/ { n = substr($3, 19); fail[n] = $1 + 0 }
      END {
        for (n in calls) print n, calls[n], (n in fail) ? fail[n] : 0
        if (all > sum) print "(others)", all - sum, 0
      }' "$o.perf" >"$o"
  else
    # strace -c: "% time seconds usecs/call calls [errors] syscall", between two dashed lines.
    awk -v names=" $fail_names " '
      /^-----/ { d++; next }
      d == 1 && NF >= 5 { n = $NF; e = (NF >= 6) ? $5 : 0; if (index(names, " " n " ") == 0) e = 0; print n, $4, e }' \
      "$o.strace" >"$o"
  fi
}

# ---------- tools and builds ----------
ndkperf=$build/tools/ndkperf/ndkperf
provider_dir=
for d in "$build/providers" "$build/src/providers/iwarp" "$build/src/providers"; do
  if [ -e "$d/ndk-iwarp.so" ]; then provider_dir=$d; break; fi
done
{ [ -x "$ndkperf" ] && [ -n "$provider_dir" ]; } || die "ndkperf or ndk-iwarp.so is not built in $build"
ndk_env=(env "NDK_PROVIDER_PATH=$provider_dir")

peers=1
command -v iperf3 >/dev/null 2>&1 || { say "note: iperf3 is not installed; no iperf3 column"; peers=0; }
fi_peer=$out/fi_peer
have_fi=0
if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libfabric; then
  if [ ! -x "$fi_peer" ] || [ "$here/fi_peer/fi_peer.c" -nt "$fi_peer" ]; then
    # shellcheck disable=SC2046
    cc -std=c11 -O2 -g -Wall -Wextra -Werror -o "$fi_peer" "$here/fi_peer/fi_peer.c" \
      $(pkg-config --cflags --libs libfabric) || die "fi_peer did not build"
  fi
  have_fi=1
else
  say "note: libfabric-dev is not installed; no libfabric column"
fi

srv_pin=()
cli_pin=()
pin_note="not pinned"
read -r srv_cpu cli_cpu _ <<<"$cpus" || true
if [ -n "${srv_cpu:-}" ] && [ -n "${cli_cpu:-}" ] && taskset -c "$srv_cpu" true 2>/dev/null &&
  taskset -c "$cli_cpu" true 2>/dev/null; then
  srv_pin=(taskset -c "$srv_cpu")
  cli_pin=(taskset -c "$cli_cpu")
  pin_note="servers on CPU $srv_cpu, clients on CPU $cli_cpu"
fi

# ---------- one run ----------
listening() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v p=":$hex" 'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

srv_pid=
stop_srv() {
  [ -n "$srv_pid" ] || return 0
  # The server is the counter's child; stopping the counter first would lose its counts.
  local c
  for c in $(cat "/proc/$srv_pid/task/"*/children 2>/dev/null); do kill "$c" 2>/dev/null || true; done # pids
  wait "$srv_pid" 2>/dev/null || true
  srv_pid=
}
trap stop_srv EXIT

limit=$((secs * 4 + 30))

# run TAG PORT BYTES_FN "SERVER CMD" "CLIENT CMD": each side under the counter. The servers are
# one-shot (ndkperf --once, fi_peer -1, iperf3 -1), so each exits after its client and the
# counter reports. BYTES_FN FILE prints the payload bytes from the client's output.
run() {
  local tag=$1 port=$2 bytes_fn=$3 srv=$4 cli=$5 f=$raw/$1 rc=0
  if listening "$port"; then say "$tag: port $port is in use by another program; skipped"; return 1; fi
  counter "$f.srv"
  # shellcheck disable=SC2086 # the commands are word lists built below
  "${cv[@]}" "${srv_pin[@]}" $srv >"$f.srv.log" 2>&1 &
  srv_pid=$!
  for _ in $(seq 1 1500); do # up to 30 s: perf takes a while to enable its tracepoints
    listening "$port" && break
    kill -0 "$srv_pid" 2>/dev/null || break
    sleep 0.02
  done
  if ! listening "$port"; then say "$tag: the server did not come up: $(tail -n 1 "$f.srv.log")"; stop_srv; return 1; fi
  counter "$f.cli"
  # shellcheck disable=SC2086
  timeout -k 2 "$limit" "${cv[@]}" "${cli_pin[@]}" $cli >"$f.out" 2>"$f.cli.log" || rc=$?
  for _ in $(seq 1 250); do kill -0 "$srv_pid" 2>/dev/null || break; sleep 0.02; done
  stop_srv
  if [ "$rc" != 0 ]; then say "$tag: the client failed (exit $rc): $(grep -v '^[[:space:]]*$' "$f.cli.log" | tail -n 1)"; return 1; fi
  local b
  b=$("$bytes_fn" "$f.out") || { say "$tag: no byte count in the client's output"; return 1; }
  normalize "$f.srv"
  normalize "$f.cli"
  echo "$b" >"$f.bytes"
}

ndk_bytes() { # ndkperf --json: results[0].bytes (message size) * iterations
  awk '{ t = t $0 } END {
    if (!match(t, /"bytes":[0-9]+/)) exit 1; z = substr(t, RSTART + 8, RLENGTH - 8)
    if (!match(t, /"iterations":[0-9]+/)) exit 1; n = substr(t, RSTART + 13, RLENGTH - 13)
    printf "%.0f\n", z * n }' "$1"
}
fi_bytes() { # fi_peer: ops * size
  awk '{ t = t $0 } END {
    if (!match(t, /"size":[0-9]+/)) exit 1; z = substr(t, RSTART + 7, RLENGTH - 7)
    if (!match(t, /"ops":[0-9]+/)) exit 1; n = substr(t, RSTART + 6, RLENGTH - 6)
    printf "%.0f\n", z * n }' "$1"
}
iperf_bytes() { # iperf3 -J: end.sum_received.bytes
  awk '/"sum_received"/ { r = 1 } r && /"bytes"/ { s = $0; sub(/.*:/, "", s); gsub(/[ \t,]/, "", s); print s + 0; exit }
    END { if (!r) exit 1 }' "$1"
}

# ---------- the runs ----------
ndk_poll=()
fi_poll=()
[ "$poll" = 1 ] && { ndk_poll=(--poll); fi_poll=(--poll); }
ops="write read send"
say "counting with $tool; $pin_note; sizes $sizes, ${secs} s per run (results in $out/syscalls.md)"
for z in $sizes; do
  for op in $ops; do
    for crc in off on; do
      c=()
      [ "$crc" = on ] && c=(--crc)
      run "ndk.$op.crc$crc.$z" "$p_ndk" ndk_bytes \
        "${ndk_env[*]} $ndkperf -s $lo:$p_ndk ${ndk_poll[*]} --once" \
        "${ndk_env[*]} $ndkperf -c $lo:$p_ndk -t $op -z $z -D $secs -d $depth ${ndk_poll[*]} ${c[*]} --json" || true
    done
    if [ "$have_fi" = 1 ]; then
      run "fi.$op.$z" "$p_fi" fi_bytes "env FI_PROVIDER=tcp $fi_peer -s -a $lo -p $p_fi -1" \
        "env FI_PROVIDER=tcp $fi_peer -c $lo -p $p_fi -t $op -z $z -D $secs -d $depth -w 0 ${fi_poll[*]}" || true
    fi
  done
  if [ "$peers" = 1 ]; then
    run "tcp.stream.$z" "$p_iperf" iperf_bytes "iperf3 -s -B $lo -p $p_iperf -1" \
      "iperf3 -c $lo -p $p_iperf -B $lo -l $z -t $secs -J" || true
  fi
done

# ---------- the tables ----------
csv=$out/syscalls.csv
echo "test,size,impl,side,syscall,calls,failed,payload_bytes,calls_per_mib,failed_per_mib" >"$csv"
for b in "$raw"/*.bytes; do
  [ -e "$b" ] || continue
  tag=$(basename "$b" .bytes)
  bytes=$(cat "$b")
  # tags: ndk.OP.crcX.SIZE, fi.OP.SIZE, tcp.stream.SIZE
  IFS=. read -r impl a b2 c2 <<<"$tag"
  case $impl in
    ndk) op=$a; size=$c2; impl="ndk-crc${b2#crc}" ;;
    fi) op=$a; size=$b2; impl=libfabric ;;
    tcp) op=stream; size=$b2; impl=iperf3 ;;
  esac
  for side in cli srv; do
    [ -s "$raw/$tag.$side" ] || continue
    awk -v t="$op" -v s="$size" -v i="$impl" -v sd="$([ $side = cli ] && echo client || echo server)" -v b="$bytes" '
      { mib = b / 1048576; printf "%s,%s,%s,%s,%s,%d,%d,%s,%.4f,%.4f\n", t, s, i, sd, $1, $2, $3, b, $2 / mib, $3 / mib }' \
      "$raw/$tag.$side" >>"$csv"
  done
done

{
  echo "System calls per MiB of payload, each side (\`bench/syscalls.sh\`): counted with $method."
  echo "$pin_note; $([ "$poll" = 1 ] && echo "ndkperf and fi_peer busy-poll (BENCH_BW_POLL=1)" || echo "ndkperf and fi_peer block (BENCH_BW_POLL=0)"); depth $depth; ${secs} s per run; whole processes, set-up included."
  echo "In brackets: how many of those calls failed (EAGAIN from a drained or full socket, EINTR), counted for the data and wait calls; a busy-polling side makes them while it waits, so they scale with time, not bytes."
  echo "In a Write and a Send the client sends the data; in a Read the server does. iperf3 (one TCP stream, client sending) is the same run in every table of a size."
  echo "Machine: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) cores, Linux $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg) at the end."
  echo
  awk -F, -v min="$min" -v sizes="$sizes" -v ops="$ops" '
    NR == 1 { next }
    {
      key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5
      v[key] = $9; f[key] = $10; have[$3 SUBSEP $4 SUBSEP $1 SUBSEP $2] = 1
      names[$1 SUBSEP $2 SUBSEP $5] = 1
      tot[$1 SUBSEP $2 SUBSEP $3 SUBSEP $4] += $9; totf[$1 SUBSEP $2 SUBSEP $3 SUBSEP $4] += $10
    }
    function cell(t, s, i, sd, n,    k, x) {
      if (!((i SUBSEP sd SUBSEP t SUBSEP s) in have)) return "—"
      k = t SUBSEP s SUBSEP i SUBSEP sd SUBSEP n
      if (!(k in v)) return "0"
      x = fmt(v[k]); if (f[k] + 0 > 0) x = x " (" fmt(f[k]) ")"
      return x
    }
    function fmt(x) { return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
    END {
      ni = split("ndk-crcoff ndk-crcon libfabric iperf3", impl, " ")
      split("ours, CRC off|ours, CRC on|libfabric tcp|iperf3", label, "|")
      nz = split(sizes, zs, " "); no = split(ops, os, " ")
      for (a = 1; a <= nz; a++) for (b = 1; b <= no; b++) {
        s = zs[a]; t = os[b]
        printf "### %s, %s\n\n| syscall |", (t == "write" ? "RDMA Write" : t == "read" ? "RDMA Read" : "Send"), \
          (s >= 1048576 && s % 1048576 == 0) ? s / 1048576 " MiB" : (s >= 1024 && s % 1024 == 0) ? s / 1024 " KiB" : s " B"
        for (i = 1; i <= ni; i++) printf " %s client | %s server |", label[i], label[i]
        printf "\n|---|"; for (i = 1; i <= ni * 2; i++) printf "---:|"; printf "\n"
        # rows: every syscall of this table at or above min in some column, largest first
        delete row; nr = 0
        for (k in names) {
          split(k, p, SUBSEP)
          tt = (p[1] == "stream") ? t : p[1]
          if (p[2] != s || (p[1] != t && p[1] != "stream")) continue
          n = p[3]; mx = 0
          for (i = 1; i <= ni; i++) for (sd = 0; sd < 2; sd++) {
            tk = (impl[i] == "iperf3") ? "stream" : t
            kk = tk SUBSEP s SUBSEP impl[i] SUBSEP (sd ? "server" : "client") SUBSEP n
            if ((kk in v) && v[kk] + 0 > mx) mx = v[kk] + 0
          }
          if (mx < min || (n in seen)) continue
          seen[n] = 1; nr++; row[nr] = n; rmax[nr] = mx
        }
        delete seen
        for (x = 2; x <= nr; x++) for (y = x; y > 1 && rmax[y] > rmax[y - 1]; y--) {
          tmp = row[y]; row[y] = row[y - 1]; row[y - 1] = tmp; tm = rmax[y]; rmax[y] = rmax[y - 1]; rmax[y - 1] = tm
        }
        for (r = 1; r <= nr; r++) {
          printf "| %s |", row[r]
          for (i = 1; i <= ni; i++) for (sd = 0; sd < 2; sd++)
            printf " %s |", cell(impl[i] == "iperf3" ? "stream" : t, s, impl[i], sd ? "server" : "client", row[r])
          printf "\n"
        }
        printf "| **all** |"
        for (i = 1; i <= ni; i++) for (sd = 0; sd < 2; sd++) {
          tk = (impl[i] == "iperf3") ? "stream" : t; kk = tk SUBSEP s SUBSEP impl[i] SUBSEP (sd ? "server" : "client")
          if (!((impl[i] SUBSEP (sd ? "server" : "client") SUBSEP tk SUBSEP s) in have)) { printf " — |"; continue }
          printf " **%s**%s |", fmt(tot[kk]), (totf[kk] > 0 ? " (" fmt(totf[kk]) ")" : "")
        }
        printf "\n\n"
      }
    }' "$csv"
} >"$out/syscalls.md"
cat "$out/syscalls.md"
say "wrote $out/syscalls.md and syscalls.csv (raw counts in $raw)"
