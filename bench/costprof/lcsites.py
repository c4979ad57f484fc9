#!/usr/bin/env python3
# lcsites.py A.lc B.lc N: per call site (B - A) / N locks, trylocks that took the lock, unlocks, from
# bench/lockcount.c's LC_SITES=1 rows; sites named by addr2line; M1, M2... name the mutexes by
# their address in the 2n run. An unlock by a tail call shows at the caller's caller.
import sys, subprocess, collections
def load(p):
    d = collections.defaultdict(lambda: [0, 0, 0]); mx = collections.defaultdict(set)
    for l in open(p):
        f = l.split()
        if f[0] != 'site': continue
        tid, obj, off, m = f[1], f[2], f[3], f[4]
        k = (obj, off)
        for i in range(3): d[k][i] += int(f[5 + i])
        mx[k].add(m)
    return d, mx
A, _ = load(sys.argv[1]); B, mB = load(sys.argv[2]); n = float(sys.argv[3])
cache = {}
def where(obj, off):
    if (obj, off) in cache: return cache[(obj, off)]
    a = hex(int(off, 16) - 1)
    r = subprocess.run(['addr2line', '-f', '-i', '-C', '-e', obj, a], capture_output=True, text=True).stdout.split('\n')
    pairs = [(r[i], r[i + 1].split('/')[-1]) for i in range(0, len(r) - 1, 2)]
    s = ' <- '.join(f"{fn} ({fl})" for fn, fl in pairs)
    cache[(obj, off)] = s
    return s
rows = []
for k in B:
    v = [(B[k][i] - A.get(k, [0, 0, 0])[i]) / n for i in range(3)]
    if max(abs(x) for x in v) >= 0.01: rows.append((k, v))
allm = sorted({m for k, _ in rows for m in mB[k]})
mname = {m: f"M{i+1}" for i, m in enumerate(allm)}
tot = [0, 0, 0]
for k, v in sorted(rows, key=lambda r: (sorted(mB[r[0]]), -r[1][0] - r[1][1])):
    for i in range(3): tot[i] += v[i]
    print(f"lock {v[0]:5.2f} try {v[1]:5.2f} unlock {v[2]:5.2f}  {','.join(mname[m] for m in sorted(mB[k]))}  {k[0].split('/')[-1]}  {where(*k)}")
print(f"total lock {tot[0]:.2f} try_ok {tot[1]:.2f} unlock {tot[2]:.2f}")
