#!/usr/bin/env bash
# tool_perf_cost_quick: bench/cost.sh in its quick mode (BENCH_COST_QUICK=1: small n, one row each
# of instructions, system calls and mutex pairs) against the build under test, in a copy of the
# build's layout in a temporary directory so that the build's own bench/ results stay untouched.
# Checks that cost.json parses, has those rows (and the atomics row of the same callgrind runs),
# and that their counts are positive. Never checks a target or a timing: the counts are what
# issue 39 is to lower.
#   cost_quick.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2

skip() { echo "SKIP: $*"; exit 77; }
command -v valgrind >/dev/null 2>&1 || skip "valgrind is not installed"
command -v strace >/dev/null 2>&1 || skip "strace is not installed"
command -v python3 >/dev/null 2>&1 || skip "python3 is not installed (it parses the JSON)"
command -v objdump >/dev/null 2>&1 || skip "objdump is not installed (binutils: it finds the atomic instructions)"
strace -f -c -o /dev/null true >/dev/null 2>&1 || skip "strace cannot trace here (ptrace not permitted)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The layout cost.sh looks for: tools/ndkperf/ndkperf and providers/ndk-iwarp.so.
mkdir -p "$tmp/b/tools/ndkperf"
ln -s "$build/tools/ndkperf/ndkperf" "$tmp/b/tools/ndkperf/ndkperf"
prov=${NDK_PROVIDER_PATH:-$build/providers}
[ -e "$prov/ndk-iwarp.so" ] || { echo "FAIL: no ndk-iwarp.so in $prov"; exit 1; }
ln -s "$prov" "$tmp/b/providers"

# Pinning is the bench's choice for comparable figures; counts do not need it, and a test
# machine may have one CPU.
if ! BENCH_COST_QUICK=1 BENCH_CPUS='' "$src/bench/cost.sh" "$tmp/b" >"$tmp/out" 2>&1; then
  cat "$tmp/out"
  echo "FAIL: bench/cost.sh exited non-zero"
  exit 1
fi
cat "$tmp/out"
python3 - "$tmp/b/bench/cost.json" <<'EOF'
import json, sys
with open(sys.argv[1]) as f:
    doc = json.load(f)
rows = doc["rows"]
want = {
    "user-space instructions per 8 B Send round trip": False,
    "system calls per 8 B round trip": False,
    "mutex lock/unlock pairs per 8 B round trip": False,
    "atomic read-modify-writes per 8 B Send round trip": False,
}
bad = []
for r in rows:
    for k in r:
        if k not in ("what", "side", "unit", "ours", "peer", "peer_name", "target", "met", "method"):
            bad.append("unknown key %s" % k)
    if r["side"] not in ("client", "server"):
        bad.append("%s: side %r" % (r["what"], r["side"]))
    if r["met"] not in (None, "yes", "no"):
        bad.append("%s: met %r" % (r["what"], r["met"]))
    if r["target"] is not None and r["ours"] is not None and r["met"] is None:
        bad.append("%s: a target and a count but no verdict" % r["what"])
    for prefix in want:
        if r["what"].startswith(prefix):
            if r["ours"] is None or not r["ours"] > 0:
                bad.append("%s (%s): count %r is not positive" % (r["what"], r["side"], r["ours"]))
            else:
                want[prefix] = True
for prefix, seen in want.items():
    if not seen:
        bad.append("no row with a count: %s" % prefix)
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
print("cost.json: %d rows, instructions, system calls, mutex pairs and atomics counted" % len(rows))
EOF
