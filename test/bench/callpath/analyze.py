#!/usr/bin/env python3
"""analyze.py BINDIR TRACE: files on the path of the last Produce request and
of its acks=all completion in TRACE (see README.md)."""
import subprocess, sys, re, collections
bindir, tracefile = sys.argv[1], sys.argv[2]
binary = bindir + '/skiff'
base = next(int(l.split()[0], 16) for l in subprocess.run(['nm', binary], capture_output=True, text=True).stdout.splitlines()
            if l.split()[-1] == '__cyg_profile_func_enter')
def sx(x):
    v = int(x, 16)
    return v - (1 << 64) if v >= 1 << 63 else v
lines = []
for l in open(tracefile):
    p = l.split()
    lines.append([tuple(sx(y) for y in x.split(':')) for x in p[1:]])
addrs = sorted({a for l in lines for pr in l for a in pr})
out = subprocess.run(['addr2line', '-f', '-e', binary] + [hex(base + a) for a in addrs], capture_output=True, text=True).stdout.splitlines()
sym = {}
for i, a in enumerate(addrs):
    # the generated codec lives in $(B)/gen: build-trace/gen/ is reported as build/gen/
    f = re.sub(r'^.*?/(broker|storage|protocol|raft|clients|build[^/]*/gen)/', r'\1/', out[2 * i + 1].split(':')[0])
    f = re.sub(r'^build[^/]*/gen/', 'build/gen/', f)
    sym[a] = (out[2 * i], f)
def pick(name):
    found = [l for l in lines if any(sym[fn][0] == name for fn, _ in l)]
    return found[-1] if found else []
def files_of(inv): return {sym[fn][1] for fn, _ in inv}
def cfiles(s): return sorted(x for x in s if x.endswith('.c'))
prod, comp = pick('bk_api_h_produce'), pick('ack_done')
P, C = files_of(prod), files_of(comp)
U = cfiles(P | C)
print(f'produce invocation: {len(cfiles(P))} .c files; completion invocation: {len(cfiles(C))} .c files; union {len(U)} .c files')
for pre in ('broker/', 'storage/', 'protocol/', 'raft/', 'build/gen/'):
    v = [x[len(pre):] for x in U if x.startswith(pre)]
    print(f'  {pre} ({len(v)}): {" ".join(v)}')
# direct callees of the Produce handler file
fan = collections.defaultdict(set)
for fn, site in prod + comp:
    if sym[site][1] == 'broker/api/h_produce.c' and sym[fn][1] != 'broker/api/h_produce.c':
        fan[sym[fn][1]].add(sym[fn][0])
print(f'files h_produce.c calls directly: {len([f for f in fan if f.endswith(".c")])} .c (+{len([f for f in fan if not f.endswith(".c")])} headers)')
for f in sorted(fan): print(f'  {f}: {", ".join(sorted(fan[f]))}')
