#!/usr/bin/env bash
# A stuck consumer found from another process: an ndkperf server whose client stops (SIGSTOP)
# in the middle of a Send test keeps its receives posted, and none completes. Two runs of
# `ndkinfo --resources --pid SERVER --json` show its QP with receives outstanding and the age of
# the oldest grown between them; the text report shows the same QP with "oldest". A pid that
# does not publish is an error that says so.
# Usage: sysview_stuck.sh BUILD_DIR
set -euo pipefail
. "$(dirname "$0")/sysview_lib.sh" "$@"

start_server
"$ndkperf" -c "127.0.0.1:$port" -t send -z 4096 -d 16 -D 600 >"$tmp/client.log" 2>&1 &
client=$!
pids+=("$client")

# The receive queue's oldest outstanding request of the server's one QP: "outstanding age_ms".
rq() {
  info --resources --pid "$srv_pid" --json || return 1
  python3 - "$tmp/out" <<'PY'
import json, sys
sv = json.load(open(sys.argv[1]))["sysview"]
qps = [r for p in sv.get("processes", []) for r in p.get("resources", []) if r["type"] == "qp"]
if len(qps) != 1 or qps[0].get("ops_in", 0) == 0:
    sys.exit(1)
print(qps[0]["rq_outstanding"], qps[0]["rq_oldest_ms"])
PY
}
# Traffic first (the client is really sending), then the client stops.
for _ in $(seq 150); do rq >/dev/null 2>&1 && break; kill -0 "$client" || fail "client exited: $(cat "$tmp/client.log")"; sleep 0.2; done
rq >/dev/null || fail "the server's QP never showed traffic: $(cat "$tmp/out" "$tmp/err")"
kill -STOP "$client"
sleep 0.5
read -r out1 age1 < <(rq) || fail "ndkinfo --resources --pid $srv_pid failed: $(cat "$tmp/out" "$tmp/err")"
sleep 1
read -r out2 age2 < <(rq) || fail "ndkinfo --resources --pid $srv_pid failed: $(cat "$tmp/out" "$tmp/err")"
echo "server's receive queue: $out1 outstanding, oldest ${age1} ms; then $out2 outstanding, oldest ${age2} ms"
[ "$out1" -gt 0 ] && [ "$out2" -gt 0 ] || fail "no receive outstanding on the stuck server's QP"
[ "$age2" -gt "$age1" ] || fail "the oldest receive's age did not grow ($age1 ms, then $age2 ms)"

info --resources --pid "$srv_pid" || fail "ndkinfo --resources --pid failed: $(cat "$tmp/err")"
grep -Eq "^ +qp#[0-9]+ +[A-Z]+ 127\.0\.0\.1:$port -> 127\.0\.0\.1:[0-9]+ .*rq [1-9][0-9]*/[0-9]+ oldest [0-9]+ms" "$tmp/out" ||
  fail "the text report has no QP line with an outstanding receive and its age: $(cat "$tmp/out")"
grep -q "pid $srv_pid ndkperf" "$tmp/out" || fail "the report does not name the process: $(cat "$tmp/out")"

# A pid that publishes nothing (this shell) is an error, not an empty list.
if info --resources --pid $$; then fail "--pid of a process without a registry succeeded: $(cat "$tmp/out")"; fi
grep -q "no OpenNDK process with pid $$" "$tmp/err" || fail "no clear error for --pid $$: $(cat "$tmp/err")"
echo "sysview: a stuck consumer's outstanding receives and their growing age, from another process"
