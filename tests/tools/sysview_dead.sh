#!/usr/bin/env bash
# A dead process's registry: an ndkperf server killed with SIGKILL leaves <pid>.ndk behind (it
# cannot remove it); the next ndkinfo ignores it (the process is not listed) and removes it,
# while a live server's registry stays and is listed. A registry directory others may write is
# refused with an error.
# Usage: sysview_dead.sh BUILD_DIR
set -euo pipefail
. "$(dirname "$0")/sysview_lib.sh" "$@"

start_server
live=$srv_pid
start_server
dead=$srv_pid
[ -f "$NDK_RUNTIME_DIR/$dead.ndk" ] || fail "the server $dead has no registry file: $(ls -la "$NDK_RUNTIME_DIR")"
[ -f "$NDK_RUNTIME_DIR/$live.ndk" ] || fail "the server $live has no registry file: $(ls -la "$NDK_RUNTIME_DIR")"
kill -KILL "$dead"
wait "$dead" 2>/dev/null || true
[ -f "$NDK_RUNTIME_DIR/$dead.ndk" ] || skip "the killed process's file is already gone (nothing left to clean)"

info --endpoints --resources --json || fail "ndkinfo failed: $(cat "$tmp/err")"
python3 - "$tmp/out" "$live" "$dead" <<'PY' || { cat "$tmp/out"; fail "the system view is wrong after a SIGKILL"; }
import json, sys
sv = json.load(open(sys.argv[1]))["sysview"]
live, dead = int(sys.argv[2]), int(sys.argv[3])
pids = [p["pid"] for p in sv.get("processes", [])]
eps = [e["pid"] for e in sv.get("endpoints", [])]
if dead in pids or dead in eps:
    sys.exit("the dead process %d is listed: %s %s" % (dead, pids, eps))
if live not in pids or live not in eps:
    sys.exit("the live server %d is missing: %s %s" % (live, pids, eps))
PY
[ ! -e "$NDK_RUNTIME_DIR/$dead.ndk" ] || fail "the dead process's registry was not removed: $(ls -la "$NDK_RUNTIME_DIR")"
[ -f "$NDK_RUNTIME_DIR/$live.ndk" ] || fail "the live server's registry was removed"

# With the last process gone too, ndkinfo says there is nobody instead of an empty list.
kill -KILL "$live"
wait "$live" 2>/dev/null || true
info --resources || fail "ndkinfo --resources failed with only a dead registry: $(cat "$tmp/err")"
grep -q "no other OpenNDK process publishes here" "$tmp/out" || fail "no clear line for an empty registry: $(cat "$tmp/out")"
[ ! -e "$NDK_RUNTIME_DIR/$live.ndk" ] || fail "the second dead registry was not removed"
# A directory others may write is not read: an error that says so, not an empty machine.
mkdir -m 0777 "$tmp/unsafe"
chmod 0777 "$tmp/unsafe"
if NDK_RUNTIME_DIR=$tmp/unsafe info --resources; then fail "a world-writable registry directory was accepted"; fi
grep -q "cannot read the system view in $tmp/unsafe" "$tmp/err" || fail "no clear error for an unsafe directory: $(cat "$tmp/err")"
echo "sysview: a SIGKILLed process's registry is ignored and removed; a live one stays"
