#!/usr/bin/env python3
"""Renames every public identifier of a broker/ folder that lacks the
folder's prefix (broker/README.md "Names"; the table and the extraction are
check_prefixes.py's). Repeatable: run it on any tree, a second run renames
nothing.

Mapping of an identifier of folder F lacking F's prefix: strip a leading
bk_/BK_ and prepend F's prefix (lower case for names with a lower-case
letter, upper case otherwise), after these shortenings of the rest:
  config  config_X -> X, topic_config_X -> topic_X  (CONFIG_X, TOPIC_CONFIG_X)
  http    admin_X -> X                              (ADMIN_X)
  metrics metrics_X -> X, unless bk_mx_X / BK_MX_X is taken: then metrics_X
  quorum  qhold_ -> hold_, qrpc_ -> rpc_, qstate_ -> state_, qsnap_ -> snap_
  broker  (the root files) node_X -> X                  (NODE_X)
Names of another library (kp_ KP_ st_ ST_ raft_ RAFT_) are reported, not
renamed.

Renaming is by exact identifier (never a prefix of a longer name) over every
tracked text file (git ls-files): C code, comments and string literals,
Markdown, scripts. Besides exact names it rewrites:
  - a token pasted in a macro, `BK_CT_##TYPE`, when every public name that
    starts with the fragment is renamed the same way (BK_CT_ -> BK_CFG_CT_);
  - a macro argument pasted with a suffix, `RANGES_DISJOINT_(KP, BK)` with
    `a##_STATUS_MAX`, when the pasted name is renamed (BK -> BK_NET);
  - a wildcard in prose (comments, Markdown), `BK_ERR_*` or `bk_x_{a,b}`,
    when every public name starting with the fragment is renamed the same way.
It refuses (exit 1, nothing written) on a collision: two names mapped to one,
or a new name that is already an identifier somewhere in the tree. It
reports string literals holding a renamed name, wildcards and pastes it
could not map, and files outside broker/ and test/ it changed.

  rename_prefixes.py [--repo DIR] [--dry-run] [--map] [--no-ctags]
    --dry-run  compute and report, write nothing
    --map      print "folder old new" for every rename
    --no-ctags skip the cross-check of the extraction against ctags
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_prefixes as cp  # noqa: E402

SELF_FILES = {'test/layers/rename_prefixes.py', 'test/layers/check_prefixes.py',
              'test/layers/test_check_prefixes.py'}
OTHER_LIBS = ('kp_', 'KP_', 'st_', 'ST_', 'raft_', 'RAFT_')
# (folder) -> [(word, replacement)] applied to the name after bk_/BK_ (lower case
# words; the upper-case form is used for upper-case names)
SHORTEN = {
    'config': [('topic_config', 'topic'), ('config', '')],
    'http': [('admin', '')],
    'metrics': [('metrics', '')],
    'quorum': [('qhold', 'hold'), ('qrpc', 'rpc'), ('qstate', 'state'), ('qsnap', 'snap')],
    'broker': [('node', '')],
}
# Names the rules above cannot give (each a collision the script refuses
# otherwise): old name -> new name.
OVERRIDES = {
    # the tag of bk_conn_t; bk_net_conn is net's lookup function bk_net_conn()
    'bk_conn': 'bk_net_conn_s',
}
IDENT = re.compile(r'[A-Za-z_]\w*')
C_LEX = re.compile(r'''//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|[A-Za-z_]\w*|\#\#|\s+|.''',
                   re.S)
WILDCARD = re.compile(r'(?<![\w])([A-Za-z_]\w*_)(?=[*{])')


def shorten(folder, rest, upper, use_shortening=True):
    if not use_shortening:
        return rest
    for word, repl in SHORTEN.get(folder, []):
        w, r = (word.upper(), repl.upper()) if upper else (word, repl)
        if rest == w or rest.startswith(w + '_'):
            rest = r + rest[len(w):]
            return rest.lstrip('_') if not r else rest
    return rest


def map_name(folder, name, use_shortening=True):
    """New name, or None when the name is another library's."""
    if cp.has_prefix(folder, name):
        return name
    lo, up = cp.PREFIXES[folder]
    if name.startswith('bk_'):
        upper, rest = False, name[3:]
    elif name.startswith('BK_'):
        upper, rest = True, name[3:]
    elif name.startswith(OTHER_LIBS):
        return None
    else:
        upper, rest = not any(c.islower() for c in name), name
    rest = shorten(folder, rest, upper, use_shortening)
    pre = up if upper else lo
    return pre + rest if rest else pre[:-1]


def tracked_files(repo):
    p = subprocess.run(['git', '-C', repo, 'ls-files', '-z'], stdout=subprocess.PIPE, check=True)
    out = []
    for rel in p.stdout.decode().split('\0'):
        if not rel or rel in SELF_FILES:
            continue
        path = os.path.join(repo, rel)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, 'rb') as f:
            data = f.read()
        if b'\0' in data:
            continue
        try:
            text = data.decode('utf-8')
        except UnicodeDecodeError:
            continue
        out.append((rel, text))
    return out


def is_c(rel):
    return rel.endswith(('.c', '.h'))


def build_mapping(ids, tree_tokens):
    """({old: new}, {old: folder}, [problems], [notes])."""
    problems, notes = [], []
    mapping, owner = {}, {}
    for name, (folder, kind, rel) in sorted(ids.items()):
        new = OVERRIDES.get(name) or map_name(folder, name)
        if new is None:
            notes.append('%s: %s %s belongs to another library by its name; not renamed'
                         % (rel, kind, name))
            continue
        if name in OVERRIDES:
            notes.append('%s -> %s by OVERRIDES' % (name, new))
        if new != name:
            mapping[name], owner[name] = new, folder

    def collisions():
        news = {}
        for old, new in mapping.items():
            news.setdefault(new, []).append(old)
        bad = {}
        for new, olds in news.items():
            if len(olds) > 1:
                bad[new] = 'collision: %s would all become %s' % (', '.join(sorted(olds)), new)
            elif new in tree_tokens and new not in mapping:
                bad[new] = ('collision: %s -> %s, but %s is already an identifier in the tree'
                            % (olds[0], new, new))
        return news, bad

    # a shortened name that is taken falls back to the plain rule (bk_mx_metrics_X)
    for _ in range(3):
        news, bad = collisions()
        moved = False
        for new in sorted(bad):
            for old in news[new]:
                plain = map_name(owner[old], old, use_shortening=False)
                if plain != new and old not in OVERRIDES:
                    notes.append('%s -> %s, not %s (%s)' % (old, plain, new, bad[new]))
                    mapping[old] = plain
                    moved = True
        if not moved:
            break
    news, bad = collisions()
    problems += [bad[n] + ' (add an entry to OVERRIDES in test/layers/rename_prefixes.py)'
                 for n in sorted(bad)]
    return mapping, owner, problems, notes


def fragment_map(frag, ids, mapping, covering=False, folder=None):
    """Y when every public identifier starting with frag is renamed to Y + the
    same rest; None when none is; 'mixed' otherwise. covering (a wildcard in
    prose): Y may be any of the candidates that every new name starts with
    (bk_config_* -> bk_cfg_* although bk_config_val became bk_cfg_config_val)."""
    ys, news, unrenamed = set(), [], 0
    names = [n for n in ids if n.startswith(frag) and n != frag]
    if folder and any(ids[n][0] == folder for n in names):
        names = [n for n in names if ids[n][0] == folder]
    for name in names:
        rest = name[len(frag):]
        new = mapping.get(name)
        if new is None:
            unrenamed += 1
            continue
        news.append(new)
        if rest and new.endswith(rest):
            ys.add(new[:-len(rest)])
        else:
            ys.add(None)
    if not ys:
        return None
    if unrenamed:
        return 'mixed'
    if len(ys) == 1 and None not in ys:
        return ys.pop()
    if covering:
        for y in sorted((y for y in ys if y), key=len):
            if all(n.startswith(y) for n in news):
                return y
    return 'mixed'


def suffix_paste_macros(files):
    """{macro: {param index: [suffix]}} of macros pasting a parameter with a
    suffix fragment (`a##_STATUS_MAX`)."""
    out = {}
    define = re.compile(r'(?m)^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)')
    for rel, text in files:
        if not is_c(rel):
            continue
        for m in define.finditer(text):
            params = [p.strip() for p in m.group(2).split(',')]
            body = m.group(3)
            for pm in re.finditer(r'\b(\w+)\s*##\s*(\w+)', body):
                if pm.group(1) in params and pm.group(2) not in params:
                    out.setdefault(m.group(1), {}).setdefault(
                        params.index(pm.group(1)), []).append(pm.group(2))
    return out


def rename_text(text, mapping, counts, hits, rel):
    """Exact identifiers in plain text."""
    def sub(m):
        new = mapping.get(m.group())
        if new is None:
            return m.group()
        counts[m.group()] = counts.get(m.group(), 0) + 1
        if hits is not None:
            hits.append((rel, m.group()))
        return new
    return IDENT.sub(sub, text)


def rename_wildcards(text, ids, mapping, report, rel):
    def sub(m):
        frag = m.group(1)
        if frag in mapping:
            return frag
        # in broker/F/ a wildcard names F's identifiers first
        folder = cp.folder_of(rel) if rel.startswith('broker/') else None
        y = fragment_map(frag, ids, mapping, covering=True, folder=folder)
        if y is None:
            return frag
        if y == 'mixed':
            report.add('%s: wildcard %s%s names identifiers renamed in different ways; left as is'
                       % (rel, frag, text[m.end()]))
            return frag
        report.add('%s: wildcard %s%s -> %s%s' % (rel, frag, text[m.end()], y, text[m.end()]))
        return y
    return WILDCARD.sub(sub, text)


def rename_c(rel, text, ctx):
    mapping, ids, counts = ctx['mapping'], ctx['ids'], ctx['counts']
    toks = [m.group() for m in C_LEX.finditer(text)]
    # macro arguments pasted with a suffix
    for i, t in enumerate(toks):
        if t not in ctx['suffix_macros'] or i + 1 >= len(toks):
            continue
        j = i + 1
        while j < len(toks) and toks[j].isspace():
            j += 1
        if j >= len(toks) or toks[j] != '(':
            continue
        args, cur, depth = [], [], 0
        k = j
        while k < len(toks):
            x = toks[k]
            if x in '([{':
                depth += 1
                if depth == 1:
                    k += 1
                    continue
            elif x in ')]}':
                depth -= 1
                if depth == 0:
                    args.append(cur)
                    break
            elif x == ',' and depth == 1:
                args.append(cur)
                cur = []
                k += 1
                continue
            cur.append(k)
            k += 1
        for idx, suffixes in ctx['suffix_macros'][t].items():
            if idx >= len(args):
                continue
            real = [a for a in args[idx] if not toks[a].isspace()]
            if len(real) != 1 or not IDENT.fullmatch(toks[real[0]]):
                continue
            a = toks[real[0]]
            news = set()
            for suf in suffixes:
                new = mapping.get(a + suf)
                if new is None:
                    news.add(a)
                elif new.endswith(suf):
                    news.add(new[:-len(suf)])
                else:
                    news.add(None)
            if news == {a}:
                continue
            if len(news) == 1 and None not in news:
                new_a = news.pop()
                toks[real[0]] = new_a
                ctx['pastes'].append('%s: %s(... %s ...) -> %s (pasted: %s)' % (
                    rel, t, a, new_a, ', '.join(a + s for s in suffixes)))
            else:
                ctx['problems'].append('%s: %s(... %s ...): pasted names %s are not renamed alike'
                                       % (rel, t, a, ', '.join(a + s for s in suffixes)))
    out = []
    for i, t in enumerate(toks):
        c = t[:1]
        if c == '/' and t[:2] in ('//', '/*'):
            t = rename_text(t, mapping, counts, None, rel)
            t = rename_wildcards(t, ids, mapping, ctx['report'], rel)
        elif c in '"\'':
            hits = []
            t = rename_text(t, mapping, counts, hits, rel)
            for _, name in hits:
                ctx['strings'].append((rel, name, toks[i]))
        elif IDENT.fullmatch(t):
            new = mapping.get(t)
            if new is not None:
                counts[t] = counts.get(t, 0) + 1
                t = new
            else:
                j = i + 1
                while j < len(toks) and toks[j].isspace():
                    j += 1
                if j < len(toks) and toks[j] == '##' and t.endswith('_'):
                    y = fragment_map(t, ids, mapping)
                    if y == 'mixed':
                        ctx['problems'].append('%s: pasted fragment %s## names identifiers renamed '
                                               'in different ways' % (rel, t))
                    elif y is not None:
                        ctx['pastes'].append('%s: %s## -> %s##' % (rel, t, y))
                        t = y
        out.append(t)
    return ''.join(out)


def ctags_crosscheck(repo, ids, mapping):
    """Notes: public names ctags sees that the parser missed, and renamed
    names that something else in the tree defines too (a member, a local, a
    macro or enum constant outside the declaring header)."""
    notes = []
    if not shutil.which('ctags'):
        return ['ctags not found: extraction not cross-checked']
    heads = cp.public_headers(repo)
    # 1. parser vs ctags on the preprocessed public headers
    seen = set()
    for rel in heads:
        with open(os.path.join(repo, rel), encoding='utf-8', errors='replace') as f:
            pp = cp.preprocess(f.read())
        p = subprocess.run(['ctags', '--output-format=json', '--c-kinds=+px-l', '--language-force=C',
                            '-o', '-', '-'], input=pp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if p.returncode != 0 or not p.stdout.strip():
            # older ctags cannot read stdin: use a file
            tmp = os.path.join(repo, '.rename_prefixes_tmp.h')
            with open(tmp, 'w') as f:
                f.write(pp)
            p = subprocess.run(['ctags', '--output-format=json', '--c-kinds=+px-l', '--language-force=C',
                                '-o', '-', tmp], stdout=subprocess.PIPE, universal_newlines=True)
            os.unlink(tmp)
        for line in p.stdout.splitlines():
            try:
                t = json.loads(line)
            except ValueError:
                continue
            n = t.get('name', '')
            if (t.get('kind') == 'member' or n.startswith('__anon') or n in cp.builtin_macros()
                    or cp.GUARD.match(n)):
                continue
            seen.add(n)
            if n not in ids:
                notes.append('ctags sees %s %s in %s; the parser did not' % (t.get('kind'), n, rel))
    # 2. other definitions of a renamed name
    srcs = []
    for top in ('broker', 'test', 'clients', 'protocol', 'storage', 'raft'):
        for dirpath, _, names in os.walk(os.path.join(repo, top)):
            srcs += [os.path.join(dirpath, n) for n in names if n.endswith(('.c', '.h'))]
    p = subprocess.run(['ctags', '--output-format=json', '--c-kinds=+pxlz', '--language-force=C',
                        '--fields=+K', '-o', '-', '-L', '-'], input='\n'.join(srcs),
                       stdout=subprocess.PIPE, universal_newlines=True)
    for line in p.stdout.splitlines():
        try:
            t = json.loads(line)
        except ValueError:
            continue
        n = t.get('name')
        if n not in mapping:
            continue
        rel = os.path.relpath(t['path'], repo)
        kind = t.get('kind')
        home = ids[n][2]
        if kind == 'typedef' and re.search(r'typedef\s+(struct|union|enum)\s+\w+\s+%s\s*;' % n,
                                           t.get('pattern', '')):
            continue    # the same opaque typedef repeated (C11)
        if kind in ('member', 'local', 'parameter') or (
                kind in ('macro', 'enumerator', 'typedef', 'externvar', 'variable') and rel != home):
            notes.append('%s is also a %s in %s (renamed there too)' % (n, kind, rel))
        elif kind == 'function' and 'static' in t.get('pattern', ''):
            notes.append('%s is also a static function in %s (renamed there too)' % (n, rel))
    return notes


def main(argv):
    t0 = time.time()
    repo = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
    dry = show_map = False
    use_ctags = True
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == '--repo' and args:
            repo = os.path.abspath(args.pop(0))
        elif a == '--dry-run':
            dry = True
        elif a == '--map':
            show_map = True
        elif a == '--no-ctags':
            use_ctags = False
        else:
            print(__doc__.strip(), file=sys.stderr)
            return 2
    ids, problems = cp.extract(repo)
    files = tracked_files(repo)
    tree_tokens = set()
    for rel, text in files:
        tree_tokens.update(IDENT.findall(text))
    tree_tokens.update(ids)     # with the names X-macros make (BK_CFG_##ID)
    mapping, owner, mproblems, notes = build_mapping(ids, tree_tokens)
    problems += mproblems
    if use_ctags and mapping:
        notes += ctags_crosscheck(repo, ids, mapping)
    if show_map:
        for old in sorted(mapping, key=lambda o: (owner[o], o)):
            print('map %s %s %s' % (owner[old], old, mapping[old]))
    ctx = {'mapping': mapping, 'ids': ids, 'counts': {}, 'report': set(), 'strings': [],
           'pastes': [], 'problems': problems, 'suffix_macros': suffix_paste_macros(files)}
    changed = {}
    if mapping:
        for rel, text in files:
            if is_c(rel):
                new = rename_c(rel, text, ctx)
            else:
                new = rename_text(text, mapping, ctx['counts'], None, rel)
                new = rename_wildcards(new, ids, mapping, ctx['report'], rel)
            if new != text:
                changed[rel] = new
    for line in notes:
        print('note: ' + line)
    for line in sorted(ctx['report']):
        print('note: ' + line)
    seen = {}
    for line in ctx['pastes']:
        seen[line] = seen.get(line, 0) + 1
    for line, n in seen.items():
        print('paste: ' + line + (' (%d times)' % n if n > 1 else ''))
    for rel, name, lit in ctx['strings']:
        print('string: %s: %s in %s' % (rel, name, lit if len(lit) < 100 else lit[:97] + '..."'))
    outside = sorted(r for r in changed if not r.startswith(('broker/', 'test/')))
    for rel in outside:
        print('outside broker/ and test/: %s' % rel)
    if problems:
        for line in problems:
            print('rename_prefixes: REFUSED: ' + line)
        print('rename_prefixes: nothing written')
        return 1
    if not dry:
        for rel, new in changed.items():
            with open(os.path.join(repo, rel), 'w', encoding='utf-8') as f:
                f.write(new)
    # summary
    per_folder = {}
    for old in mapping:
        per_folder.setdefault(owner[old], []).append(old)
    total_occ = sum(ctx['counts'].values())
    print('rename_prefixes: %s %d identifiers (%d occurrences) in %d files%s' % (
        'would rename' if dry else 'renamed', len(mapping), total_occ, len(changed),
        ' (dry run)' if dry else ''))
    for folder in sorted(cp.PREFIXES):
        n = len(per_folder.get(folder, []))
        kept = sum(1 for name, v in ids.items() if v[0] == folder) - n
        print('  %-12s %4d renamed, %4d already prefixed' % (folder, n, kept))
    if not dry and mapping:
        ids2, _ = cp.extract(repo)
        left = [n for n, (f, k, r) in ids2.items() if not cp.has_prefix(f, n)]
        print('rename_prefixes: after the rename %d public identifiers lack their prefix%s' % (
            len(left), (': ' + ' '.join(sorted(left))) if left else ''))
    print('rename_prefixes: %.1f s' % (time.time() - t0))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
