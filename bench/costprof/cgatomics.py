#!/usr/bin/env python3
# cgatomics.py A.cg B.cg N (runs with --dump-instr=yes): atomic RMWs (lock-prefixed, xchg with memory) per op by object:function, (B - A)/N
import sys, re, subprocess, collections
def counts(path):
    n = collections.Counter(); obn = {}; ob = None; addr = 0; skip = False
    for line in open(path):
        if line.startswith('ob=') or line.startswith('cob='):
            s = line.split('=', 1)[1].strip(); m = re.match(r'\((\d+)\)(?: (.*))?$', s)
            if m and m.group(2): obn[m.group(1)] = m.group(2)
            if line.startswith('ob='): ob = obn.get(m.group(1)) if m else s
            continue
        if line.startswith('calls='): skip = True; continue
        if line[:1] in '0123456789+-*' or line.startswith('0x'):
            p = line.split(); a = p[0]
            if a.startswith('0x'): addr = int(a, 16)
            elif a[0] == '+': addr += int(a[1:])
            elif a[0] == '-': addr -= int(a[1:])
            if skip: skip = False; continue
            n[(ob, addr)] += int(p[-1])
    return n
locked = {}
def lk(obj):
    if obj in locked: return locked[obj]
    d = {}; fn = '?'
    try: out = subprocess.run(['objdump', '-d', '--no-show-raw-insn', obj], capture_output=True, text=True).stdout
    except Exception: out = ''
    for l in out.splitlines():
        m = re.match(r'^[0-9a-f]+ <(.*)>:$', l)
        if m: fn = m.group(1); continue
        f = l.split('\t')
        if len(f) >= 2 and re.match(r'^ *[0-9a-f]+:$', f[0]) and (f[1].startswith('lock ') or (f[1].startswith('xchg') and '(' in f[1])):
            d[int(f[0].strip(' :'), 16)] = (fn, f[1].split()[1] if f[1].startswith('lock') else 'xchg')
    locked[obj] = d; return d
def main():
  A = counts(sys.argv[1]); B = counts(sys.argv[2]); n = float(sys.argv[3])
  res = collections.Counter()
  for k in set(A) | set(B):
      ob, a = k
      if not ob: continue
      L = lk(ob)
      if a in L:
          res[(ob.split('/')[-1], L[a][0])] += (B[k] - A[k]) / n
  tot = sum(res.values()); print(f"total atomic RMWs per op: {tot:.1f}")
  for k, v in sorted(res.items(), key=lambda x: -x[1]):
      if abs(v) >= 0.05: print(f"{v:6.2f}  {k[0]}:{k[1]}")

if __name__ == '__main__':
  main()
