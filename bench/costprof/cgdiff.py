#!/usr/bin/env python3
# cgdiff.py A.cg B.cg N [TOP]: (B - A) / N per function of two callgrind runs of n and 2n operations
# (start-up cancels): self and inclusive instructions and calls per operation, then per object.
# A function's pieces ("???" and file splits, recursion levels 'N) are merged by name; calls of
# a function to itself are left out of its inclusive cost.
import sys, re, collections
def load(path):
    self_ = collections.Counter(); incl_calls = collections.Counter(); ncalls = collections.Counter()
    objself = collections.Counter(); fobj = {}
    names = {'fn': {}, 'ob': {}}
    npos = 1; fn = None; ob = None; pending = None
    def nm(kind, s):
        m = re.match(r'\((\d+)\)(?: (.*))?$', s)
        if not m: return s
        if m.group(2) is not None: names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), s)
    cfn = None
    for line in open(path):
        line = line.rstrip('\n')
        if line.startswith('positions:'): npos = len(line.split()) - 1; continue
        if line.startswith('ob='): ob = nm('ob', line[3:]); continue
        if line.startswith('cob='): nm('ob', line[4:]); continue
        if line.startswith('fn='):
            fn = re.sub(r"'\d+$", '', nm('fn', line[3:])); fobj.setdefault(fn, ob); continue
        if line.startswith('cfn='): cfn = re.sub(r"'\d+$", '', nm('fn', line[4:])); continue
        if line.startswith('calls='):
            pending = (cfn, int(line[6:].split()[0])); continue
        if line and (line[0].isdigit() or line[0] in '+-*'):
            parts = line.split()
            if len(parts) <= npos: continue
            v = int(parts[npos])
            if pending:
                c, k = pending; pending = None
                if c != fn:
                    incl_calls[(fn, c)] += v
                    ncalls[(fn, c)] += k
            else:
                self_[fn] += v; objself[ob] += v
    return self_, incl_calls, ncalls, objself, fobj
def main():
  A = load(sys.argv[1]); B = load(sys.argv[2]); n = float(sys.argv[3]); top = int(sys.argv[4]) if len(sys.argv) > 4 else 20
  def d(i, k): return (B[i][k] - A[i][k]) / n
  fns = set(A[0]) | set(B[0]) | {f for f, c in list(A[1]) + list(B[1])}
  incl = {}
  for f in fns:
      incl[f] = d(0, f) + sum(d(1, k) for k in set(A[1]) | set(B[1]) if k[0] == f)
  callsto = collections.Counter()
  for k in set(A[2]) | set(B[2]): callsto[k[1]] += d(2, k)
  fobj = dict(A[4]); fobj.update(B[4])
  tot = sum(d(0, f) for f in fns)
  print(f"total per op: {tot:.1f}")
  print("--- by self (exclusive)")
  for f in sorted(fns, key=lambda f: -d(0, f))[:top]:
      print(f"{d(0,f):8.1f} self {incl[f]:8.1f} incl {callsto[f]:6.2f} calls/op  {f}  [{(fobj.get(f) or '').split('/')[-1]}]")
  print("--- by inclusive")
  for f in sorted(fns, key=lambda f: -incl[f])[:top]:
      print(f"{incl[f]:8.1f} incl {d(0,f):8.1f} self {callsto[f]:6.2f} calls/op  {f}")
  print("--- by object (self)")
  for o in sorted(set(A[3]) | set(B[3]), key=lambda o: -d(3, o)):
      if abs(d(3, o)) > 0.5: print(f"{d(3,o):8.1f}  {o}")

if __name__ == '__main__':
  main()
