#!/usr/bin/env python3
# cgfit.py N:RUN.cg ...: busy-polled runs (n, 2n, n, 2n): each function's self instructions fitted as
# start-up + a * round trips + b * polls (polls: calls to iw_get_cq_results, the consumer's NdkGetCqResults), least squares; a is the round
# trip without its empty polls, b one empty poll. Atomic RMWs the same way (cgatomics.py).
import os, sys, collections
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgdiff as cg
import cgatomics as at
runs = []
for a in sys.argv[1:]:
    n, p = a.split(':'); s, ic, nc, ob, fo = cg.load(p)
    polls = sum(v for (f, c), v in nc.items() if c == 'iw_get_cq_results')
    lk = sum(v for (f, c), v in nc.items() if c.startswith('pthread_mutex_unlock'))
    c = at.counts(p); atom = collections.Counter()
    for (ob, ad), v in c.items():
        if ob and ad in at.lk(ob): atom[ob.split('/')[-1] + ':' + at.lk(ob)[ad][0]] += v
    runs.append((int(n), polls, s, lk, p, atom))
X = [[1.0, float(r[0]), float(r[1])] for r in runs]
def solve3(M, v):
    # normal equations, Gauss-Jordan
    A = [[sum(M[k][i] * M[k][j] for k in range(len(M))) for j in range(3)] + [sum(M[k][i] * v[k] for k in range(len(M)))] for i in range(3)]
    for i in range(3):
        p = max(range(i, 3), key=lambda r: abs(A[r][i])); A[i], A[p] = A[p], A[i]
        for r in range(3):
            if r != i:
                f = A[r][i] / A[i][i]; A[r] = [A[r][c] - f * A[i][c] for c in range(4)]
    return [A[i][3] / A[i][i] for i in range(3)]
print("runs (rt, polls, total):", [(r[0], r[1], sum(r[2].values())) for r in runs])
def fit(y):
    return solve3(X, [float(t) for t in y])
tot = fit([sum(r[2].values()) for r in runs]); print(f"total: a={tot[1]:.1f}/rt  b={tot[2]:.1f}/poll  polls/rt={[round((runs[i+1][1]-runs[i][1])/(runs[i+1][0]-runs[i][0]),2) for i in range(0,len(runs),2)]}")
lk = fit([r[3] for r in runs]); print(f"unlock calls: a={lk[1]:.2f}/rt b={lk[2]:.2f}/poll")
fns = set().union(*[r[2].keys() for r in runs])
res = {f: fit([r[2][f] for r in runs]) for f in fns}
print("--- top by a (per round trip without empty polls), then b per empty poll")
for f in sorted(fns, key=lambda f: -res[f][1])[:22]:
    print(f"{res[f][1]:8.1f} a  {res[f][2]:7.1f} b  {f}")
print("--- top by b")
for f in sorted(fns, key=lambda f: -res[f][2])[:12]:
    print(f"{res[f][2]:7.1f} b  {res[f][1]:8.1f} a  {f}")
print("--- atomic RMWs: a per round trip, b per empty poll")
ta = fit([sum(r[5].values()) for r in runs]); print(f"total: a={ta[1]:.1f}/rt  b={ta[2]:.2f}/poll")
ak = set().union(*[r[5].keys() for r in runs])
for k in sorted(ak, key=lambda k: -fit([r[5][k] for r in runs])[1]):
    c = fit([r[5][k] for r in runs])
    if abs(c[1]) > 0.05 or abs(c[2]) > 0.05: print(f"{c[1]:6.2f} a {c[2]:5.2f} b  {k}")
