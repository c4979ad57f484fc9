#!/usr/bin/env bash
# Loss/reorder/delay test: ndkperf Write, Read and Send at 64 KiB and 1 MiB with --verify (every
# payload byte checked), MPA CRC off and on, between two network namespaces joined by a user-space
# relay (ndk_lossy_relay: TUN devices, 1% loss, 5% reorder, 1 ms delay; the kernel here has no
# netem). Skips with a reason where namespaces or TUN are unavailable.
# Usage: lossy.sh NDKPERF RELAY   (ctest passes both from the build tree)
set -uo pipefail
ndkperf=$1
relay=$2
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces and TUN devices"
for c in unshare nsenter ip timeout; do
  command -v $c >/dev/null || skip "$c not installed"
done
[ -c /dev/net/tun ] || skip "/dev/net/tun missing (no TUN support)"
[ -x "$ndkperf" ] && [ -x "$relay" ] || fail "missing $ndkperf or $relay"

drop=${NDK_LOSSY_DROP:-1} reorder=${NDK_LOSSY_REORDER:-5} delay_us=${NDK_LOSSY_DELAY_US:-1000}
seed=${NDK_LOSSY_SEED:-$(( $(date +%s) % 100000 + 1 ))}
tmp=$(mktemp -d /tmp/ndk-lossy.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap "exit 1" TERM INT

# Two holder processes, each alone in a fresh network namespace. The namespace dies with them;
# every process started below is bounded in time too, so nothing outlives a killed test long.
home=$(readlink /proc/self/ns/net)
unshare -n sleep 300 &
pa=$!
pids+=($pa)
unshare -n sleep 300 &
pb=$!
pids+=($pb)
for p in $pa $pb; do
  for _ in $(seq 50); do
    ns=$(readlink /proc/$p/ns/net 2>/dev/null) || break
    [ "$ns" != "$home" ] && break
    sleep 0.05
  done
  [ -n "${ns:-}" ] && [ "$ns" != "$home" ] || skip "unshare -n did not give a new network namespace"
done
ns_a=/proc/$pa/ns/net ns_b=/proc/$pb/ns/net
in_a() { nsenter --net=$ns_a "$@"; }
in_b() { nsenter --net=$ns_b "$@"; }

# The relay: bounded lifetime, and it also ends when this script does.
coproc RELAY { exec "$relay" $ns_a $ns_b ndkl0 --drop $drop --reorder $reorder --delay-us $delay_us \
                    --seed $seed --lifetime 180 --stats "$tmp/relay.stats" 2>&1; }
pids+=($RELAY_PID)
read -r -t 10 line <&"${RELAY[0]}" || true
[ "${line:-}" = ready ] || { cat <&"${RELAY[0]}" 2>/dev/null; skip "relay could not create its TUN devices: ${line:-no answer}"; }

in_a ip link set lo up && in_a ip addr add 10.77.0.1 peer 10.77.0.2 dev ndkl0 && in_a ip link set ndkl0 up \
  && in_b ip link set lo up && in_b ip addr add 10.77.0.2 peer 10.77.0.1 dev ndkl0 && in_b ip link set ndkl0 up \
  || fail "could not configure the namespaces' interfaces"
echo "relay: ${drop}% loss, ${reorder}% reorder, ${delay_us} us delay, seed $seed (NDK_LOSSY_SEED to repeat)"

failures=0
port=18600
t0=$(date +%s)
budget=150                      # seconds for all transfers: ctest's timeout is 240
for crc in 0 1; do
  port=$((port + 1))
  # nsenter itself in the background (not the in_b function, whose subshell would take the
  # kill below and leave the server running): nsenter, env and timeout exec one another, so
  # $! is timeout, which passes the kill on to ndkperf.
  nsenter --net=$ns_b env NDK_IWARP_CRC=$crc timeout 200 "$ndkperf" -s 10.77.0.2:$port >"$tmp/server-$crc.log" 2>&1 &
  srv=$!
  pids+=($srv)
  # Start only once it listens: a loaded machine may take seconds to get there.
  for _ in $(seq 200); do
    grep -q "listening on" "$tmp/server-$crc.log" 2>/dev/null && break
    kill -0 $srv 2>/dev/null || break
    sleep 0.05
  done
  grep -q "listening on" "$tmp/server-$crc.log" || { cat "$tmp/server-$crc.log"; fail "ndkperf -s did not start listening (CRC $crc)"; }
  for op in write read send; do
    for size in 65536 1048576; do
      # 10 MiB per test at 64 KiB and 16 MiB at 1 MiB: thousands of FPDUs meet losses and
      # reordering, and the whole test stays well under two minutes even under sanitizers.
      if [ $size -eq 65536 ]; then n=160 d=16; else n=16 d=4; fi
      log=$tmp/client-$op-$size-$crc.log
      if [ $(( $(date +%s) - t0 )) -gt $budget ]; then
        echo "FAIL $op $size B, CRC $crc: not run, the test is over its ${budget} s budget"
        failures=$((failures + 1))
        continue
      fi
      start=$(date +%s%N)
      crcopt=
      [ $crc -eq 1 ] && crcopt=--crc
      in_a env NDK_IWARP_CRC=$crc timeout 30 "$ndkperf" -c 10.77.0.2:$port -t $op -z $size -n $n -d $d --verify \
        $crcopt >"$log" 2>&1
      rc=$?
      ms=$(( ($(date +%s%N) - start) / 1000000 ))
      took=$((ms / 1000)).$(( ms % 1000 / 100 ))
      # The client's banner says whether CRC was asked for; a mismatch means the knob was lost.
      want=$([ $crc -eq 1 ] && echo requested || echo "not requested")
      if [ $rc -eq 0 ] && ! grep -q "MPA CRC: $want" "$log"; then
        echo "FAIL $op $size B, CRC $crc: the client did not report 'MPA CRC: $want'"
        rc=1
      fi
      if [ $rc -eq 0 ]; then
        echo "ok   $op $size B x $n, CRC $crc (${took} s)"
      else
        echo "FAIL $op $size B x $n, CRC $crc: exit $rc (${took} s)"
        tail -15 "$log" | sed 's/^/    client: /'
        tail -5 "$tmp/server-$crc.log" | sed 's/^/    server: /'
        failures=$((failures + 1))
      fi
    done
  done
  kill $srv 2>/dev/null
  wait $srv 2>/dev/null
done

kill "$RELAY_PID" 2>/dev/null
wait "$RELAY_PID" 2>/dev/null
stats=$(cat "$tmp/relay.stats" 2>/dev/null)
echo "${stats:-relay: no statistics}"
# A run the relay never impaired proves nothing.
dropped=$(sed -nE 's/.*dropped ([0-9]+).*/\1/p' <<<"$stats")
reordered=$(sed -nE 's/.*reordered ([0-9]+).*/\1/p' <<<"$stats")
[ "${dropped:-0}" -gt 0 ] && [ "${reordered:-0}" -gt 0 ] || fail "the relay dropped or reordered nothing"
[ $failures -eq 0 ] || fail "$failures of 12 transfers failed"
echo "all 12 transfers verified"
