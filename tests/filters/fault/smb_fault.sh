#!/usr/bin/env bash
# ndksmb over SMB Direct (the in-tree bridge in front of Debian's Samba, on loopback in a private
# network namespace) under fault rules: a connection broken in the middle of a put, a failed
# memory registration, and credit grants (receive completions) held back. Each run must end
# with a clean result (a clear error, or success where the fault only slows it down), no hang,
# and every NDK object closed before the adapter (the verify filter stacked above the fault
# filter). Only ndksmb runs under the filters; the bridge and Samba do not.
# Usage: smb_fault.sh NDKSMB BRIDGE
set -u
NDKSMB=$1
BRIDGE=$2
skip() { echo "SKIP: $*"; exit 77; }

if [ "${SMB_FAULT_INNER:-}" != 1 ]; then
  command -v smbd >/dev/null || skip "Samba's smbd is not installed (scripts/deps.sh test installs samba)"
  [ "$(id -u)" -eq 0 ] || skip "needs root (smbd binds port 445 inside a private network namespace)"
  unshare -n true 2>/dev/null || skip "cannot create a network namespace (unshare -n)"
  SMB_FAULT_INNER=1 exec unshare -n "$0" "$@"
fi

ip link set lo up
T=$(mktemp -d /tmp/ndksmb-fault.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T"/{share,run,log}
chmod 0755 "$T"
chmod 0777 "$T/share"
# A guest-only share: the runs test the transport, not authentication.
cat >"$T/smb.conf" <<EOF
[global]
  server role = standalone server
  interfaces = lo
  bind interfaces only = yes
  smb ports = 445
  disable netbios = yes
  server min protocol = SMB3_00
  map to guest = Bad User
  guest account = nobody
  private dir = $T/run
  lock directory = $T/run
  state directory = $T/run
  cache directory = $T/run
  pid directory = $T/run
  log file = $T/log/log.%m
  load printers = no
  disable spoolss = yes
[pub]
  path = $T/share
  read only = no
  guest ok = yes
EOF
setsid smbd --foreground --no-process-group -s "$T/smb.conf" >"$T/log/smbd.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/445) 2>/dev/null && break; sleep 0.1; done
(exec 3<>/dev/tcp/127.0.0.1/445) 2>/dev/null || { cat "$T/log/smbd.out"; echo "FAIL: smbd did not start"; exit 1; }
env -u NDK_FILTERS "$BRIDGE" 127.0.0.1:445 >"$T/bridge.out" 2>"$T/bridge.err" &
PIDS+=($!)
for _ in $(seq 1 100); do grep -q '^port' "$T/bridge.out" 2>/dev/null && break; sleep 0.1; done
BP=$(sed -n 's/^port //p' "$T/bridge.out")
[ -n "$BP" ] || { cat "$T/bridge.err"; echo "FAIL: the bridge did not start"; exit 1; }
D=//127.0.0.1:$BP/pub
head -c 8388608 /dev/urandom >"$T/big"

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# smb NAME EXPECT RULES ARGS...: ndksmb ARGS under RULES; EXPECT is ok or error.
smb() {
  local name=$1 expect=$2 rules=$3
  shift 3
  local t0=$SECONDS
  NDK_FILTERS=verify,fault NDK_FAULT_RULES="$rules" NDK_FAULT_SEED=11 NDK_VERIFY_PATH="$T/$name.verify" \
    timeout 60 "$NDKSMB" --guest --timeout 10000 "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null
  local rc=$?
  echo "== $name ($rules): exit $rc after $((SECONDS - t0)) s"
  grep -v '^ndk-fault' "$T/$name.err" | head -n 3
  grep '^ndk-fault' "$T/$name.err" | head -n 2
  [ "$rc" -eq 124 ] && fail "$name: ndksmb hung"
  grep -q '^ndk-fault: seed 11 rule 1 ' "$T/$name.err" || fail "$name: no fault was injected"
  if [ "$expect" = ok ]; then
    [ "$rc" -eq 0 ] || fail "$name: ndksmb failed under a fault that only delays"
  else
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "$name: ndksmb did not report the failure (exit $rc)"
    grep -q '^ndksmb: ' "$T/$name.err" || fail "$name: no error message from ndksmb"
  fi
  grep -q '^ndk-verify: summary' "$T/$name.verify" 2>/dev/null || fail "$name: the adapter was never closed"
  if grep '^ndk-verify: \(error\|warning adapter-close-open-objects\) ' "$T/$name.verify" 2>/dev/null; then
    fail "$name: the API was misused or objects were left open on this path"
  fi
}

# The put's data goes by RDMA; its SMB2 requests by Send: the 12th Send is inside the put.
smb break-mid-put error 'NdkSend:nth=12:break=connection' --io-size 1m put "$T/big" "$D/broken.bin"
# The first memory registration fails (the receive buffers, at connect).
smb register-fails error 'NdkRegisterMr:nth=1:status=STATUS_INSUFFICIENT_RESOURCES' put "$T/big" "$D/noreg.bin"
# A registration of the put's RDMA buffers fails (fast registration, a work request).
smb fast-register-fails error 'NdkFastRegister:nth=2:status=STATUS_INSUFFICIENT_RESOURCES' --io-size 1m \
  put "$T/big" "$D/noreg2.bin"
# Credit grants come late: the peer's grants ride on receive completions, which are held 150 ms
# on a fifth of the polls, and every CQ notification comes 100 ms late; the put still completes,
# correctly.
smb credits-late ok 'NdkGetCqResultsEx:p=0.2:delay=150; CqNotification:delay=100' --io-size 1m \
  put "$T/big" "$D/late.bin"
cmp -s "$T/big" "$T/share/late.bin" || fail "credits-late: the file on the share differs"
[ "$fails" -eq 0 ] || { echo "bridge:"; tail -n 20 "$T/bridge.err"; echo "$fails failure(s)"; exit 1; }
echo "ndksmb under fault: clean errors, no hang, everything released"
