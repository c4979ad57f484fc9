#!/bin/bash
# bench/costprof/run.sh: one ndkperf pair on loopback for the cost breakdown in docs/performance.md
# ("Where a message's cost goes"). Server pinned to CPU 0, client to CPU 1, port 18590.
#
#   run.sh cg TAG SIDE MODE N OP SIZE [lat|bw]   callgrind on SIDE (client|server): OUT/TAG.cg
#   run.sh lc TAG MODE N                         bench/lockcount.so with LC_SITES=1, 8 B Send
#                                                ping-pong, both sides: OUT/TAG.{client,server}.lc.PID
# MODE: notify or poll (--poll on both sides). bw runs keep DEPTH (8) in flight. Env: BUILD
# (build/prof), OUT (/tmp/costprof), LC_SO (OUT/lockcount.so, built here from bench/lockcount.c).
# The callgrind runs wait in epoll (NDK_IWARP_PROGRESS_RING=0: valgrind cannot run io_uring);
# the lockcount runs use the provider's default unless the caller sets it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
B=${BUILD:-$here/../../build/prof}
out=${OUT:-/tmp/costprof}
mkdir -p "$out/rt"
export NDK_PROVIDER_PATH=$B/providers NDK_RUNTIME_DIR=$out/rt
port=18590
what=$1 tag=$2
rm -f "$out/$tag".*
shift 2
wait_listen() { for _ in $(seq 1 600); do ss -ltn | grep -q ":$port " && return 0; sleep 0.05; done; return 1; }
case "$what" in
  cg)
    side=$1 mode=$2 n=$3 op=$4 z=$5 kind=${6:-lat} p='' sw='' cw=''
    [ "$mode" = poll ] && p=--poll
    export NDK_IWARP_PROGRESS_RING=0
    vg="valgrind -q --tool=callgrind --dump-instr=yes --callgrind-out-file=$out/$tag.cg"
    if [ "$side" = server ]; then sw=$vg; else cw=$vg; fi
    if [ "$kind" = lat ]; then args="--lat -n $n"; else args="-n $n -d ${DEPTH:-8}"; fi
    # shellcheck disable=SC2086
    taskset -c 0 $sw "$B/tools/ndkperf/ndkperf" -s 127.0.0.1:$port --once $p >"$out/$tag.srv.log" 2>&1 &
    ;;
  lc)
    mode=$1 n=$2 p=''
    [ "$mode" = poll ] && p=--poll
    lc=${LC_SO:-$out/lockcount.so}
    cc -std=c11 -O2 -g -Wall -Wextra -Werror -shared -fPIC -o "$lc" "$here/../lockcount.c" -ldl || exit 1
    # shellcheck disable=SC2086
    taskset -c 0 env LD_PRELOAD="$lc" LC_SITES=1 LC_OUT="$out/$tag.server.lc" "$B/tools/ndkperf/ndkperf" \
      -s 127.0.0.1:$port --once $p >"$out/$tag.srv.log" 2>&1 &
    ;;
  *) echo "usage: run.sh cg|lc TAG ..." >&2; exit 2 ;;
esac
sp=$!
wait_listen || { echo "$tag: the server did not come up" >&2; kill "$sp" 2>/dev/null; exit 1; }
rc=0
if [ "$what" = cg ]; then
  # shellcheck disable=SC2086
  timeout 600 taskset -c 1 $cw "$B/tools/ndkperf/ndkperf" -c 127.0.0.1:$port -t "$op" -z "$z" $args $p --json \
    >"$out/$tag.out" 2>"$out/$tag.cli.log" || rc=$?
else
  # shellcheck disable=SC2086
  timeout 600 taskset -c 1 env LD_PRELOAD="$lc" LC_SITES=1 LC_OUT="$out/$tag.client.lc" "$B/tools/ndkperf/ndkperf" \
    -c 127.0.0.1:$port -t send -z 8 --lat -n "$n" $p --json >"$out/$tag.out" 2>"$out/$tag.cli.log" || rc=$?
fi
for _ in $(seq 1 600); do kill -0 "$sp" 2>/dev/null || break; sleep 0.1; done
kill "$sp" 2>/dev/null
[ "$rc" = 0 ] || echo "$tag: the client failed (exit $rc)" >&2
exit "$rc"
