#!/usr/bin/env python3
"""Derives broker/'s folder graph from its #include lines and checks it.

Each broker subsystem folder (broker/NAME/) is a node; the files directly in
broker/ are the node "broker" (the wiring). An edge A -> B exists when a file
in A includes "broker/B/...". broker/README.md lists the allowed arrows in a
block between the lines `<!-- layers:begin -->` and `<!-- layers:end -->`,
one `A -> B C D` line per folder (a folder that includes no other one is
its name alone). Fails (exit 1) on an arrow not in the list, on a cycle, or
on a folder the list does not name.

  folder_graph.py [--repo DIR] [--dot]   # --dot prints the graph instead
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"broker/([^"]+)"', re.M)


def folder_of(rel):
    """'broker/api/h_fetch.c' -> 'api'; 'broker/node.c' -> 'broker'."""
    parts = rel.split('/')
    return parts[1] if len(parts) > 2 else 'broker'


def derive(repo):
    edges = {}          # (a, b) -> first "file: include" seen, for the message
    folders = set()
    top = os.path.join(repo, 'broker')
    for dirpath, _, names in os.walk(top):
        for name in names:
            if not name.endswith(('.c', '.h')):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, repo)
            a = folder_of(rel)
            folders.add(a)
            with open(path, encoding='utf-8', errors='replace') as f:
                text = f.read()
            for inc in INCLUDE.findall(text):
                b = folder_of('broker/' + inc)
                if a != b:
                    edges.setdefault((a, b), '%s includes broker/%s' % (rel, inc))
    return folders, edges


def allowed_arrows(readme):
    with open(readme, encoding='utf-8') as f:
        text = f.read()
    m = re.search(r'<!-- layers:begin -->(.*?)<!-- layers:end -->', text, re.S)
    if not m:
        raise SystemExit('%s: no <!-- layers:begin --> ... <!-- layers:end --> block' % readme)
    allowed, listed = set(), set()
    for lineno, line in enumerate(m.group(1).splitlines(), 1):
        line = line.strip().strip('`')
        if not line or line.startswith('```'):
            continue
        if '->' not in line:
            # a folder that may include no other folder: its name alone
            names = line.split()
            if len(names) != 1:
                raise SystemExit('%s: layers line %d is neither "A -> B ..." nor one folder: %r'
                                 % (readme, lineno, line))
            listed.add(names[0])
            continue
        a, rest = line.split('->', 1)
        a = a.strip()
        listed.add(a)
        for b in rest.split():
            allowed.add((a, b))
            listed.add(b)
    return allowed, listed


def find_cycle(nodes, edges):
    succ = {n: sorted(b for (a, b) in edges if a == n) for n in nodes}
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in succ.get(n, ()):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if not state.get(m):
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(nodes):
        if not state.get(n):
            c = visit(n)
            if c:
                return c
    return None


def main(argv):
    repo = '.'
    if '--repo' in argv:
        repo = argv[argv.index('--repo') + 1]
    folders, edges = derive(repo)
    if '--dot' in argv:
        print('digraph broker {')
        for (a, b) in sorted(edges):
            print('  "%s" -> "%s";' % (a, b))
        print('}')
        return 0
    bad = 0
    cycle = find_cycle(folders, edges)
    if cycle:
        print('folder_graph: cycle: %s' % ' -> '.join(cycle))
        for a, b in zip(cycle, cycle[1:]):
            print('  %s -> %s: %s' % (a, b, edges[(a, b)]))
        bad += 1
    allowed, listed = allowed_arrows(os.path.join(repo, 'broker', 'README.md'))
    for (a, b), why in sorted(edges.items()):
        if (a, b) not in allowed:
            print('folder_graph: arrow %s -> %s is not in broker/README.md (%s)' % (a, b, why))
            bad += 1
    for f in sorted(folders - listed):
        print('folder_graph: folder %s is not named in broker/README.md' % f)
        bad += 1
    acyclic_list = find_cycle(listed, allowed)
    if acyclic_list:
        print('folder_graph: the allowed arrows themselves cycle: %s' % ' -> '.join(acyclic_list))
        bad += 1
    print('folder_graph: %d folders, %d arrows used, %d allowed; %s'
          % (len(folders), len(edges), len(allowed), 'FAIL' if bad else 'ok'))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
