#!/usr/bin/env python3
# cgfiles.py A.cg B.cg N [TOP]: self instructions per op by source file (a function's file: its fl= line; inlined code counts where it is inlined)
import sys, re, collections
def load(path):
    names = {'fl': {}, 'fn': {}}; cost = collections.Counter(); fl = None; npos = 2; pending = False
    def nm(kind, s):
        m = re.match(r'\((\d+)\)(?: (.*))?$', s)
        if not m: return s
        if m.group(2) is not None: names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), s)
    for line in open(path):
        if line.startswith('positions:'): npos = len(line.split()) - 1
        elif line.startswith('fl='): fl = nm('fl', line[3:].strip())
        elif line.startswith(('fi=', 'fe=')): cur = nm('fl', line[3:].strip()); fl_eff = cur
        elif line.startswith('fn='): fn = nm('fn', line[3:].strip())
        elif line.startswith(('cfl=', 'cfi=')): nm('fl', line[4:].strip())
        elif line.startswith('cfn='): nm('fn', line[4:].strip())
        elif line.startswith('calls='): pending = True
        elif line[:1] in '0123456789+-*':
            p = line.split()
            if len(p) <= npos: continue
            if pending: pending = False; continue
            cost[(fl or '?')] += int(p[npos])
    return cost
A = load(sys.argv[1]); B = load(sys.argv[2]); n = float(sys.argv[3])
rows = sorted(((B[k] - A[k]) / n, k) for k in set(A) | set(B))[::-1]
for v, k in rows[:int(sys.argv[4]) if len(sys.argv) > 4 else 15]:
    print(f"{v:8.1f}  {k}")
