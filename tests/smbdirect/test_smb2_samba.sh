#!/usr/bin/env bash
# The SMB2/3 client (ndksmb --tcp) against Debian's Samba smbd, run by this test in a private
# network namespace on loopback with a temporary share, a user with a password (NTLMv2) and a
# guest share. Files go up and down and are compared by SHA-256 with what smbd holds on disk.
# With BRIDGE (tests/smbdirect/smbd_bridge), the same client also runs over SMB Direct on the
# iwarp provider: the bridge takes SMB Direct, forwards SMB2 to smbd over TCP and serves the
# RDMA channel (RDMA Write/Read of the client's registered buffers, Send-with-Invalidate).
# Usage: test_smb2_samba.sh NDKSMB [BRIDGE]
set -euo pipefail
NDKSMB=$1
BRIDGE=${2:-}
skip() { echo "SKIP: $*"; exit 77; }

if [ "${SMB2_SAMBA_INNER:-}" != 1 ]; then
  command -v smbd >/dev/null || skip "Samba's smbd is not installed (scripts/deps.sh test installs samba)"
  command -v smbpasswd >/dev/null || skip "smbpasswd is not installed"
  [ "$(id -u)" -eq 0 ] || skip "needs root (smbd binds port 445 inside a private network namespace)"
  unshare -n true 2>/dev/null || skip "cannot create a network namespace (unshare -n)"
  SMB2_SAMBA_INNER=1 exec unshare -n "$0" "$@"
fi

ip link set lo up
T=$(mktemp -d /tmp/ndksmb-samba.XXXXXX)
SMBD_PID=
cleanup() {
  [ -n "$SMBD_PID" ] && kill "$SMBD_PID" 2>/dev/null && wait "$SMBD_PID" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T"/{share,guest,private,lock,state,cache,pid,log,local}
chmod 0755 "$T"
chmod 0777 "$T/share" "$T/guest"
PW='Secr3t-pa55'
cat >"$T/smb.conf" <<EOF
[global]
  workgroup = WORKGROUP
  netbios name = NDKTEST
  server role = standalone server
  interfaces = lo
  bind interfaces only = yes
  smb ports = 445
  disable netbios = yes
  server min protocol = SMB3_00
  server signing = auto
  smb encrypt = off
  map to guest = Bad User
  guest account = nobody
  passdb backend = tdbsam:$T/private/passdb.tdb
  private dir = $T/private
  lock directory = $T/lock
  state directory = $T/state
  cache directory = $T/cache
  pid directory = $T/pid
  log file = $T/log/log.%m
  log level = 1
  load printers = no
  printing = bsd
  printcap name = /dev/null
  disable spoolss = yes
[share]
  path = $T/share
  read only = no
  valid users = root
[guest]
  path = $T/guest
  read only = no
  guest ok = yes
EOF
printf '%s\n%s\n' "$PW" "$PW" | smbpasswd -c "$T/smb.conf" -a -s root >/dev/null
# Its own session: smbd signals its whole process group on some exits.
setsid smbd --foreground --no-process-group -s "$T/smb.conf" >"$T/log/smbd.out" 2>&1 &
SMBD_PID=$!
for i in $(seq 1 100); do
  (exec 3<>/dev/tcp/127.0.0.1/445) 2>/dev/null && break
  sleep 0.1
done
(exec 3<>/dev/tcp/127.0.0.1/445) 2>/dev/null || { cat "$T/log/smbd.out"; echo "FAIL: smbd did not start"; exit 1; }

set +e
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
sha() { sha256sum "$1" | cut -d' ' -f1; }
export NDKSMB_USER=root NDKSMB_PASSWORD="$PW"
S=//127.0.0.1/share

# Files of the sizes the issue names, both dialects, compared three ways.
for dialect in 3.1.1 3.0.2; do
  for size in 0 1 1364 65536 1048576 8388609; do
    f="$T/local/f$size"
    head -c "$size" /dev/urandom >"$f"
    name="d${dialect//./}_$size.bin"
    out=$("$NDKSMB" --tcp --dialect "$dialect" --quiet put "$f" "$S/$name" 2>&1) || { fail "put $name: $out"; continue; }
    [ "$(sha "$f")" = "$(sha "$T/share/$name")" ] || fail "put $name: share content differs"
    out=$("$NDKSMB" --tcp --dialect "$dialect" --quiet get "$S/$name" "$T/local/back" 2>&1) || { fail "get $name: $out"; continue; }
    [ "$(sha "$f")" = "$(sha "$T/local/back")" ] || fail "get $name: content differs"
  done
done
echo "sizes 0 B .. 8 MiB + 1 B, 3.1.1 and 3.0.2: done"

# Queue depth 16 with 64 KiB I/Os; signing required by the client; a subdirectory listing.
f="$T/local/f8388609"
"$NDKSMB" --tcp --depth 16 --io-size 64k --quiet put "$f" "$S/qd16.bin" || fail "put qd16"
"$NDKSMB" --tcp --depth 16 --io-size 64k --quiet get "$S/qd16.bin" "$T/local/back" || fail "get qd16"
[ "$(sha "$f")" = "$(sha "$T/share/qd16.bin")" ] && [ "$(sha "$f")" = "$(sha "$T/local/back")" ] || fail "qd16 content"
j=$("$NDKSMB" --tcp --sign --json put "$T/local/f1048576" "$S/signed.bin") || fail "signed put"
grep -q '"signed": *true' <<<"$j" || fail "signed put did not sign: $j"
[ "$(sha "$T/local/f1048576")" = "$(sha "$T/share/signed.bin")" ] || fail "signed content"
"$NDKSMB" --tcp --sign --dialect 3.0.2 --quiet get "$S/signed.bin" "$T/local/back" || fail "signed 3.0.2 get"
[ "$(sha "$T/local/f1048576")" = "$(sha "$T/local/back")" ] || fail "signed 3.0.2 content"
mkdir -p "$T/share/sub" && echo hi >"$T/share/sub/inner.txt"
ls_out=$("$NDKSMB" --tcp ls "$S") || fail "ls"
for n in d311_0.bin d302_8388609.bin qd16.bin signed.bin sub; do
  grep -q " $n\$" <<<"$ls_out" || fail "ls does not show $n"
done
grep -q '^d .* sub$' <<<"$ls_out" || fail "ls does not mark sub as a directory"
"$NDKSMB" --tcp ls --json "$S/sub" | grep '"name": *"inner.txt"' >/dev/null || fail "ls --json sub"
"$NDKSMB" --tcp --quiet get "$S/missing.bin" "$T/local/x" 2>"$T/err" && fail "get of a missing file succeeded"
grep -q OBJECT_NAME_NOT_FOUND "$T/err" || fail "missing file: $(cat "$T/err")"

# Credentials from a file and from the auth file; a bad password; guest.
unset NDKSMB_PASSWORD
printf '%s\n' "$PW" >"$T/pw" && chmod 600 "$T/pw"
"$NDKSMB" --tcp --password-file "$T/pw" --quiet get "$S/d311_1364.bin" "$T/local/back" </dev/null || fail "password file"
printf 'username = root\npassword = %s\n' "$PW" >"$T/auth"
env -u NDKSMB_USER "$NDKSMB" --tcp --auth-file "$T/auth" --quiet ls "$S" >/dev/null </dev/null || fail "auth file"
out=$(NDKSMB_PASSWORD=wrong-password "$NDKSMB" --tcp ls "$S" 2>&1 </dev/null) && fail "bad password accepted"
grep -q LOGON_FAILURE <<<"$out" || fail "bad password: $out"
grep -q wrong-password <<<"$out" && fail "the password was echoed"
all=$("$NDKSMB" --tcp --password-file "$T/pw" --json bench --size 4m --io-size 256k --depth 4 "$S/bench.bin" 2>&1 </dev/null) \
  || fail "bench: $all"
grep -q '"read"' <<<"$all" && grep -q '"write"' <<<"$all" || fail "bench json: $all"
grep -q "$PW" <<<"$all" && fail "the password appears in the output"
echo "bench (TCP, loopback): $all"
echo guest-data >"$T/guest/g.txt"
"$NDKSMB" --tcp --guest --quiet get //127.0.0.1/guest/g.txt "$T/local/g" </dev/null || fail "guest get"
[ "$(cat "$T/local/g" 2>/dev/null)" = guest-data ] || fail "guest content"
"$NDKSMB" --tcp --guest --json put "$T/local/f65536" //127.0.0.1/guest/up.bin </dev/null | grep '"guest": *true' >/dev/null \
  || fail "guest put"
[ "$(sha "$T/local/f65536")" = "$(sha "$T/guest/up.bin")" ] || fail "guest put content"

# Over SMB Direct through the bridge: RDMA channel READ/WRITE with remote invalidation (3.1.1,
# 3.0.2), local invalidation only (--no-invalidate), queue depth 16, inline over SMB Direct.
if [ -n "$BRIDGE" ]; then
  export NDKSMB_PASSWORD="$PW"
  "$BRIDGE" 127.0.0.1:445 >"$T/bridge.out" 2>"$T/bridge.err" &
  BRIDGE_PID=$!
  for i in $(seq 1 100); do grep -q '^port' "$T/bridge.out" 2>/dev/null && break; sleep 0.1; done
  BP=$(sed -n 's/^port //p' "$T/bridge.out")
  [ -n "$BP" ] || fail "bridge did not start: $(cat "$T/bridge.err")"
  D=//127.0.0.1:$BP/share
  for args in "" "--dialect 3.0.2" "--no-invalidate" "--depth 16 --io-size 256k" "--no-rdma"; do
    for size in 0 1 1364 65536 1048576 8388609; do
      f="$T/local/f$size"; name="rdma_$size.bin"
      j=$("$NDKSMB" $args --timeout 20000 --json put "$f" "$D/$name" 2>&1) || { fail "smbd put $name ($args): $j"; continue; }
      [ "$(sha "$f")" = "$(sha "$T/share/$name")" ] || fail "smbd put $name ($args): share content differs"
      case "$args,$size" in
        --no-rdma*|*,0|*,1|*,1364) ;;
        *) grep -q '"rdma_writes": *[1-9]' <<<"$j" || fail "smbd put $name ($args) used no RDMA: $j" ;;
      esac
      j=$("$NDKSMB" $args --timeout 20000 --json get "$D/$name" "$T/local/back" 2>&1) || { fail "smbd get $name ($args): $j"; continue; }
      [ "$(sha "$f")" = "$(sha "$T/local/back")" ] || fail "smbd get $name ($args): content differs"
    done
    echo "over SMB Direct ($args): done"
  done
  "$NDKSMB" --timeout 20000 ls "$D" | grep ' rdma_8388609.bin$' >/dev/null || fail "ls over SMB Direct"
  echo "bench over SMB Direct: $("$NDKSMB" --json bench --size 8m --io-size 1m --depth 4 "$D/bench.bin" 2>&1)"
  kill "$BRIDGE_PID" 2>/dev/null; wait "$BRIDGE_PID" 2>/dev/null
fi

kill "$SMBD_PID" 2>/dev/null; wait "$SMBD_PID" 2>/dev/null; SMBD_PID=
# A server that is gone: a clean failure, not a hang.
out=$(timeout 20 "$NDKSMB" --tcp --timeout 3000 --password-file "$T/pw" ls "$S" 2>&1 </dev/null) && fail "ls without a server"
echo "no server: $out"
if [ "$fails" -ne 0 ]; then
  echo "smbd log:"; tail -n 40 "$T"/log/log.* 2>/dev/null || true
  [ -s "$T/bridge.err" ] && { echo "bridge:"; tail -n 40 "$T/bridge.err"; }
  echo "$fails failure(s)"; exit 1
fi
echo "samba: all passed"
