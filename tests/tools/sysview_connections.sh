#!/usr/bin/env bash
# Issue 38's "done when": an ndkperf server and three ndkperf clients in four processes over
# 127.0.0.1 (the third client with two connections: four connections in all), each publishing in the test's own NDK_RUNTIME_DIR; one
# `ndkinfo --connections --endpoints --stats --resources --json` from a fifth process lists every
# client's connection from both ends, each with its owner's and its peer's pid and non-zero
# traffic counters, the server's listener, and each process's QP and counters.
# Usage: sysview_connections.sh BUILD_DIR
set -euo pipefail
. "$(dirname "$0")/sysview_lib.sh" "$@"

start_server
clients=()
for i in 1 2 3; do
  # Long enough for ndkinfo to see all three at once on a loaded machine; killed at the end.
  q=1; [ "$i" = 3 ] && q=2
  "$ndkperf" -c "127.0.0.1:$port" -t send -z 4096 -d 16 -D 600 -q "$q" >"$tmp/client$i.log" 2>&1 &
  clients+=("$!")
  pids+=("$!")
done

# Wait (bounded) until the server holds three connections with traffic, then check one snapshot.
check() {
  info --connections --endpoints --stats --resources --json || return 2
  python3 - "$tmp/out" "$srv_pid" "${clients[@]}" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
server, clients = int(sys.argv[2]), [int(p) for p in sys.argv[3:]]
sv = doc.get("sysview")
if sv is None:
    sys.exit("no sysview object in the JSON document")
if "error" in sv:
    sys.exit("sysview error: " + sv["error"])
conns = sv.get("connections", [])
procs = {p["pid"]: p for p in sv.get("processes", [])}
problems = []
def traffic(c):
    return c.get("bytes_out", 0) + c.get("bytes_in", 0) > 0 and c.get("ops_out", 0) + c.get("ops_in", 0) > 0
want = dict(zip(clients, [1, 1, 2]))
for cl in clients:
    mine = [c for c in conns if c["pid"] == cl and c.get("peer_pid") == server]
    theirs = [c for c in conns if c["pid"] == server and c.get("peer_pid") == cl]
    if len(mine) != want[cl]:
        problems.append("client %d: %d connections to the server (want %d)" % (cl, len(mine), want[cl]))
    if len(theirs) != want[cl]:
        problems.append("server: %d connections with client %d as peer (want %d)" % (len(theirs), cl, want[cl]))
    for c in mine + theirs:
        if not traffic(c):
            problems.append("connection %s of pid %d has no traffic counted: %s" % (c.get("object"), c["pid"], c))
        if c.get("comm") != "ndkperf" or not c.get("local") or not c.get("remote") or not c.get("state"):
            problems.append("connection lacks owner or addresses: %s" % c)
    for m in mine:
        if not any(m["local"] == t["remote"] and m["remote"] == t["local"] for t in theirs):
            problems.append("client %d's connection %s has no crossing end at the server: %s" % (cl, m, theirs))
if not any(e["pid"] == server and e["kind"] == "listener" for e in sv.get("endpoints", [])):
    problems.append("the server's listener is not in endpoints: %s" % sv.get("endpoints"))
for pid in [server] + clients:
    p = procs.get(pid)
    if not p:
        problems.append("pid %d is not in processes" % pid)
        continue
    qps = [r for r in p.get("resources", []) if r["type"] == "qp"]
    if len(qps) != (4 if pid == server else want[pid]):
        problems.append("pid %d lists %d QPs" % (pid, len(qps)))
    cnt = p.get("counters", {})
    if cnt.get("bytes_out", 0) + cnt.get("bytes_in", 0) == 0 or cnt.get("sq_posted", 0) + cnt.get("rq_posted", 0) == 0:
        problems.append("pid %d: per-process counters are zero: %s" % (pid, cnt))
    if p.get("objects", {}).get("qp") != len(qps):
        problems.append("pid %d: objects.qp %s but %d QPs listed" % (pid, p.get("objects"), len(qps)))
stats = [a.get("statistics", {}) for a in doc.get("adapters", []) if a.get("interface") == "lo"]
if not stats or "error" in stats[0]:
    problems.append("no OID_NDK_STATISTICS for lo: %s" % stats)
if problems:
    print("\n".join(problems))
    sys.exit(1)
print("4 processes, 4 connections: %d connection ends with both pids and traffic, listener, QPs and counters" % len(conns))
PY
}
rc=1
for _ in $(seq 150); do
  for c in "${clients[@]}"; do
    kill -0 "$c" 2>/dev/null || fail "client $c exited: $(cat "$tmp"/client*.log)"
  done
  if check >"$tmp/check" 2>&1; then rc=0; break; fi
  sleep 0.2
done
cat "$tmp/check"
if [ $rc -ne 0 ]; then
  echo "ndkinfo's JSON:"; cat "$tmp/out"; cat "$tmp/err"
  fail "the system view does not show the four processes' connections"
fi
# The text report names the same owners and peers.
info --connections || fail "ndkinfo --connections failed: $(cat "$tmp/err")"
for c in "${clients[@]}"; do
  grep -Eq "ESTABLISHED|RTS|CONNECTED|connected" "$tmp/out" || fail "no connected state in: $(cat "$tmp/out")"
  grep -Eq " $c ndkperf +$srv_pid " "$tmp/out" || fail "no line owned by $c with peer $srv_pid: $(cat "$tmp/out")"
  grep -Eq " $srv_pid ndkperf +$c " "$tmp/out" || fail "no line owned by $srv_pid with peer $c: $(cat "$tmp/out")"
done
echo "sysview: ndkinfo lists the four connections of an ndkperf server and three clients with both ends' pids"
