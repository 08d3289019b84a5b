#!/usr/bin/env python3
"""Checks that every public identifier of a broker/ folder carries the
folder's prefix (broker/README.md, "Names").

A folder's public headers are broker/<folder>/*.h except *_int.h and
*_internal.h (private to the folder); the root folder "broker" is
broker/*.h. Its public identifiers are every function, typedef name,
struct/union/enum tag, enum constant, variable and macro declared in those
headers, include guards (SKIFF_*_H) excepted. Each header is run through the
C preprocessor with its #include lines removed (so X-macro lists expand into
the enum constants they declare, macros are kept with -dD, comments are
gone) and the result is parsed here (no ctags needed).

A tag that a public header only names (`typedef struct bk_x bk_x_t;`,
`struct bk_x;`) belongs to the folder that defines it (`struct bk_x {`
anywhere under broker/); one defined nowhere under broker/ belongs to the
folder naming it if it starts with bk_, and is another library's otherwise
(`struct event_base`). A typedef or function declared in the public headers
of several folders belongs to the folder that defines it.

  check_prefixes.py [--repo DIR] [--list] [--nm LIB]
    --list   prints "folder kind name header" for every public identifier
    --nm LIB also checks that every global function of LIB (nm) named in a
             public header was found (coverage of this parser)

Exit 0 when every identifier carries its prefix, 1 otherwise (offenders
listed, one a line). rename_prefixes.py imports this file.
"""
import os
import re
import subprocess
import sys

# folder -> (lower prefix, upper prefix); "broker" is the root (broker/*.h)
PREFIXES = {
    'net': ('bk_net_', 'BK_NET_'),
    'config': ('bk_cfg_', 'BK_CFG_'),
    'http': ('bk_http_', 'BK_HTTP_'),
    'metrics': ('bk_mx_', 'BK_MX_'),
    'meta': ('bk_meta_', 'BK_META_'),
    'quorum': ('bk_quorum_', 'BK_QUORUM_'),
    'core': ('bk_node_', 'BK_NODE_'),
    'cluster': ('bk_cluster_', 'BK_CLUSTER_'),
    'replication': ('bk_repl_', 'BK_REPL_'),
    'group': ('bk_grp_', 'BK_GRP_'),
    'txn': ('bk_txn_', 'BK_TXN_'),
    'api': ('bk_api_', 'BK_API_'),
    'admin': ('bk_admin_', 'BK_ADMIN_'),
    'broker': ('bk_broker_', 'BK_BROKER_'),
}

GUARD = re.compile(r'^SKIFF_\w*_H$')
PRIVATE = re.compile(r'_(int|internal)\.h$')
TOKEN = re.compile(r'''
    (?P<id>[A-Za-z_]\w*)
  | (?P<num>\.?\d[\w.]*(?:[eEpP][+-][\w.]*)*)
  | (?P<str>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<ws>\s+)
  | (?P<punct>\.\.\.|->|\#\#|[-+*/%&|^!=<>]=?|[(){}\[\];,.?:~\#])
''', re.X)
KEYWORDS = set('''
auto break case char const continue default do double else enum extern float
for goto if inline int long register restrict return short signed sizeof static
struct switch typedef union unsigned void volatile while _Alignas _Alignof _Atomic
_Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local
__attribute__ __restrict __inline __extension__ __typeof__ typeof asm __asm__
'''.split())


def folder_of(rel):
    """'broker/net/net.h' -> 'net'; 'broker/node.h' -> 'broker'."""
    parts = rel.split('/')
    return parts[1] if len(parts) > 2 else 'broker'


def public_headers(repo):
    """Sorted repo-relative paths of every public header under broker/."""
    out = []
    top = os.path.join(repo, 'broker')
    for dirpath, dirs, names in os.walk(top):
        dirs.sort()
        depth = os.path.relpath(dirpath, top).count(os.sep) + (dirpath != top)
        if depth > 1:
            continue
        for name in sorted(names):
            if name.endswith('.h') and not PRIVATE.search(name):
                out.append(os.path.relpath(os.path.join(dirpath, name), repo))
    return sorted(out)


def has_prefix(folder, name):
    """True when name carries folder's prefix (or is the prefix word itself:
    the tag bk_net of bk_net_t)."""
    lo, up = PREFIXES[folder]
    return name.startswith((lo, up)) or name in (lo[:-1], up[:-1])


def preprocess(text, cpp=None):
    """The header with its #include lines removed, through cpp -dD: macros
    kept as #define lines, X-macros expanded, comments gone."""
    text = re.sub(r'(?m)^[ \t]*#[ \t]*include\b.*$', '', text)
    cmd = (cpp or ['cc', '-E']) + ['-dD', '-P', '-undef', '-x', 'c', '-']
    p = subprocess.run(cmd, input=text, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        raise RuntimeError('preprocessor failed: %s' % p.stderr.strip())
    return p.stdout


_BUILTIN = None


def builtin_macros():
    global _BUILTIN
    if _BUILTIN is None:
        _BUILTIN = set(re.findall(r'(?m)^#define (\w+)', preprocess('')))
    return _BUILTIN


def tokens(code):
    out = []
    for m in TOKEN.finditer(code):
        kind = m.lastgroup
        if kind == 'ws':
            continue
        out.append((kind, m.group()))
    return out


def split_top(toks):
    """Top-level declarations: token lists ended by a depth-0 ';', or by the
    '}' of a function body. Each item: (tokens, is_function_definition)."""
    decls, cur, depth = [], [], 0
    i = 0
    while i < len(toks):
        kind, t = toks[i]
        cur.append(toks[i])
        if t in '({[' and kind == 'punct':
            depth += 1
        elif t in ')}]' and kind == 'punct':
            depth -= 1
            if t == '}' and depth == 0 and _is_fn_body(cur):
                decls.append((cur, True))
                cur = []
        elif t == ';' and depth == 0:
            decls.append((cur, False))
            cur = []
        i += 1
    if cur:
        decls.append((cur, False))
    return decls


def _is_fn_body(cur):
    """cur ends with a '{...}' block: is it a function body (after ')')?"""
    depth = 0
    for j in range(len(cur) - 1, -1, -1):
        t = cur[j][1]
        if t == '}':
            depth += 1
        elif t == '{':
            depth -= 1
            if depth == 0:
                return j > 0 and cur[j - 1][1] == ')' and not any(
                    x[1] in ('struct', 'union', 'enum', '=') for x in cur[:j])
    return False


def skip_group(toks, i):
    """toks[i] opens a group; index after its matching close."""
    depth = 0
    while i < len(toks):
        t = toks[i][1]
        if toks[i][0] == 'punct' and t in '({[':
            depth += 1
        elif toks[i][0] == 'punct' and t in ')}]':
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def parse_decl(toks, is_def, found):
    """Adds (name, kind) of what one top-level declaration declares."""
    if not toks or toks[0][1] in ('_Static_assert', ';'):
        return
    # tags and enum constants anywhere inside (bodies included)
    for j, (kind, t) in enumerate(toks):
        if t in ('struct', 'union', 'enum') and j + 1 < len(toks) and toks[j + 1][0] == 'id':
            tag = toks[j + 1][1]
            defined = j + 2 < len(toks) and toks[j + 2][1] == '{'
            forward = (j == 0 and j + 2 < len(toks) and toks[j + 2][1] == ';')
            named = j == 1 and toks[0][1] == 'typedef'
            if defined:
                found.append((tag, t))
            elif forward or named:
                found.append((tag, t + '-ref'))
        if t == 'enum':
            k = j + 1
            if k < len(toks) and toks[k][0] == 'id':
                k += 1
            if k < len(toks) and toks[k][1] == '{':
                end = skip_group(toks, k)
                body = toks[k + 1:end - 1]
                expect = True
                depth = 0
                for bk, bt in body:
                    if bk == 'punct' and bt in '({[':
                        depth += 1
                    elif bk == 'punct' and bt in ')}]':
                        depth -= 1
                    elif bt == ',' and depth == 0:
                        expect = True
                        continue
                    if expect and bk == 'id' and depth == 0:
                        found.append((bt, 'enumerator'))
                    expect = False
    # the declarators at depth 0 (bodies and attributes removed)
    flat, i = [], 0
    while i < len(toks):
        kind, t = toks[i]
        if t in ('__attribute__', '__asm__', 'asm', '_Alignas'):
            i += 1
            if i < len(toks) and toks[i][1] == '(':
                i = skip_group(toks, i)
            continue
        if kind == 'punct' and t == '{':
            i = skip_group(toks, i)
            flat.append(('punct', '{}'))
            continue
        flat.append(toks[i])
        i += 1
    is_typedef = any(t == 'typedef' for _, t in flat)
    # split declarators on depth-0 commas
    parts, cur, depth = [], [], 0
    for kind, t in flat:
        if kind == 'punct' and t in '([':
            depth += 1
        elif kind == 'punct' and t in ')]':
            depth -= 1
        if t == ',' and depth == 0:
            parts.append(cur)
            cur = []
            continue
        if t != ';':
            cur.append((kind, t))
    parts.append(cur)
    for n, part in enumerate(parts):
        name, is_fn = declarator_name(part)
        if not name:
            continue
        if is_typedef:
            found.append((name, 'typedef'))
        elif is_fn:
            found.append((name, 'function' if is_def else 'prototype'))
        else:
            found.append((name, 'variable'))


def declarator_name(part):
    """(name, is_function) of a declaration's declarator."""
    # function pointer / parenthesised declarator: ( * name ) ( ... )
    depth = 0
    for j in range(len(part) - 2):
        if part[j][0] == 'punct' and part[j][1] in ')]':
            depth -= 1
        if part[j][0] != 'punct' or part[j][1] not in '([':
            continue
        depth += 1
        if depth == 1 and part[j][1] == '(' and part[j + 1][1] == '*':
            k = j + 1
            while k < len(part) and part[k][1] in ('*', 'const', 'volatile', 'restrict'):
                k += 1
            if k < len(part) and part[k][0] == 'id':
                is_fn = k + 1 < len(part) and part[k + 1][1] == '('
                return part[k][1], is_fn
            break
    # name ( ... ) : a function
    depth = 0
    for j in range(len(part) - 1):
        if part[j][0] == 'punct' and part[j][1] in '([':
            depth += 1
        elif part[j][0] == 'punct' and part[j][1] in ')]':
            depth -= 1
        elif (depth == 0 and part[j][0] == 'id' and part[j + 1][1] == '('
              and part[j][1] not in KEYWORDS):
            return part[j][1], True
    # otherwise the last identifier before any '[' or '='
    if part and part[0][1] in ('struct', 'union', 'enum') and len(part) <= 3 and all(
            k == 'id' or t == '{}' for k, t in part):
        return None, False      # a tag alone: struct x; enum {...}; struct x {...};
    if len(part) < 2:
        return None, False      # "x;": not a declaration (a macro's use)
    last = None
    for kind, t in part:
        if t in ('[', '='):
            break
        if kind == 'id' and t not in KEYWORDS:
            last = t
    return last, False


def header_decls(repo, rel, cpp=None):
    """[(name, kind)] declared by one header."""
    with open(os.path.join(repo, rel), encoding='utf-8', errors='replace') as f:
        text = f.read()
    pp = preprocess(text, cpp)
    found = []
    code_lines = []
    for line in pp.splitlines():
        m = re.match(r'\s*#\s*define\s+(\w+)', line)
        if m:
            if m.group(1) not in builtin_macros() and not GUARD.match(m.group(1)):
                found.append((m.group(1), 'macro'))
            code_lines.append('')
            continue
        if re.match(r'\s*#', line):
            code_lines.append('')
            continue
        code_lines.append(line)
    for decl, is_def in split_top(tokens('\n'.join(code_lines))):
        parse_decl(decl, is_def, found)
    return found


def tag_definitions(repo):
    """{tag: set of folders} where `struct|union|enum tag {` appears under broker/."""
    defs = {}
    pat = re.compile(r'\b(?:struct|union|enum)\s+(\w+)\s*\{')
    top = os.path.join(repo, 'broker')
    for dirpath, _, names in os.walk(top):
        for name in names:
            if not name.endswith(('.c', '.h')):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding='utf-8', errors='replace') as f:
                text = f.read()
            for tag in pat.findall(text):
                defs.setdefault(tag, set()).add(folder_of(os.path.relpath(path, repo)))
    return defs


def function_definitions(repo):
    """{name: set of folders} of functions defined (at column 0) under broker/."""
    defs = {}
    pat = re.compile(r'(?m)^(?!static\b)[A-Za-z_][\w \t*]*?\b(\w+)\([^;{]*\)\s*\{')
    top = os.path.join(repo, 'broker')
    for dirpath, _, names in os.walk(top):
        for name in names:
            if not name.endswith('.c'):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding='utf-8', errors='replace') as f:
                text = f.read()
            for fn in pat.findall(text):
                defs.setdefault(fn, set()).add(folder_of(os.path.relpath(path, repo)))
    return defs


def extract(repo, cpp=None):
    """Public identifiers: ({name: (folder, kind, header)}, [problem text]).
    Kinds: macro enumerator typedef function prototype variable struct union
    enum."""
    raw = {}        # name -> {folder: (kind, header)}
    tag_refs = {}   # tag -> {folder: (kind, header)} (named, not defined)
    for rel in public_headers(repo):
        folder = folder_of(rel)
        for name, kind in header_decls(repo, rel, cpp):
            if kind.endswith('-ref'):
                tag_refs.setdefault(name, {}).setdefault(folder, (kind[:-4], rel))
            else:
                raw.setdefault(name, {}).setdefault(folder, (kind, rel))
    problems = []
    tagdefs = None
    fndefs = None
    ids = {}
    for name, by_folder in sorted(raw.items()):
        if len(by_folder) == 1:
            folder, (kind, rel) = next(iter(by_folder.items()))
            ids[name] = (folder, kind, rel)
            continue
        # declared by several folders: the one that defines it owns it
        kinds = {k for k, _ in by_folder.values()}
        definers = set()
        complete = [f for f, (k, r) in by_folder.items() if k in ('struct', 'union', 'enum', 'macro',
                                                                   'enumerator', 'function')]
        if len(complete) == 1:
            definers = set(complete)
        elif kinds <= {'typedef'}:
            if tagdefs is None:
                tagdefs = tag_definitions(repo)
            tag = typedef_tag(repo, name, by_folder)
            definers = tagdefs.get(tag, set()) & set(by_folder) if tag else set()
        elif kinds <= {'prototype', 'function'}:
            if fndefs is None:
                fndefs = function_definitions(repo)
            definers = fndefs.get(name, set()) & set(by_folder)
        if len(definers) == 1:
            folder = definers.pop()
            kind, rel = by_folder[folder]
            ids[name] = (folder, kind, rel)
        else:
            problems.append('%s is declared in the public headers of %s and no single one of them '
                            'defines it' % (name, ', '.join(sorted(by_folder))))
    for tag, by_folder in sorted(tag_refs.items()):
        if tag in ids:
            continue
        if tagdefs is None:
            tagdefs = tag_definitions(repo)
        where = tagdefs.get(tag, set())
        if not where:
            if not tag.lower().startswith('bk_'):
                continue        # another library's (struct event_base)
            if len(by_folder) == 1:
                folder, (kind, rel) = next(iter(by_folder.items()))
                ids[tag] = (folder, kind, rel)
            else:
                problems.append('tag %s is named in the public headers of %s and defined nowhere'
                                % (tag, ', '.join(sorted(by_folder))))
            continue
        owners = where & set(by_folder)
        if len(where) == 1 and len(owners) == 1:
            folder = owners.pop()
            kind, rel = by_folder[folder]
            ids[tag] = (folder, kind, rel)
        elif len(where) == 1:
            pass    # defined in a folder whose public headers do not name it: that folder's own
        else:
            problems.append('tag %s is defined in several folders: %s' % (tag, ', '.join(sorted(where))))
    return ids, problems


def typedef_tag(repo, name, by_folder):
    """The tag a typedef repeated in several headers names (typedef struct T N)."""
    tags = set()
    for folder, (kind, rel) in by_folder.items():
        with open(os.path.join(repo, rel), encoding='utf-8', errors='replace') as f:
            text = f.read()
        tags.update(re.findall(r'\btypedef\s+(?:struct|union|enum)\s+(\w+)\s+%s\s*;' % re.escape(name),
                               text))
    return tags.pop() if len(tags) == 1 else None


def nm_coverage(repo, lib, ids):
    """Global functions of lib named (as a token) in a public header but not
    found by the parser."""
    p = subprocess.run(['nm', '--defined-only', '-g', lib], stdout=subprocess.PIPE,
                       universal_newlines=True, check=True)
    syms = {l.split()[-1] for l in p.stdout.splitlines() if re.match(r'\S+ [TDBR] ', l)}
    named = set()
    for rel in public_headers(repo):
        with open(os.path.join(repo, rel), encoding='utf-8', errors='replace') as f:
            text = f.read()
        text = re.sub(r'/\*.*?\*/|//[^\n]*', ' ', text, flags=re.S)
        named.update(re.findall(r'\b[A-Za-z_]\w*\b', text))
    return sorted((syms & named) - set(ids)), len(syms & named)


def main(argv):
    repo = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
    listing = False
    lib = None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == '--repo' and args:
            repo = os.path.abspath(args.pop(0))
        elif a == '--list':
            listing = True
        elif a == '--nm' and args:
            lib = args.pop(0)
        else:
            print(__doc__.strip(), file=sys.stderr)
            return 2
    ids, problems = extract(repo)
    if listing:
        for name, (folder, kind, rel) in sorted(ids.items(), key=lambda x: (x[1][0], x[0])):
            print('%s %s %s %s' % (folder, kind, name, rel))
        return 0
    bad = []
    for name, (folder, kind, rel) in sorted(ids.items(), key=lambda x: (x[1][2], x[0])):
        if folder not in PREFIXES:
            bad.append('%s: folder %s has no prefix in check_prefixes.py (broker/README.md "Names")'
                       % (rel, folder))
        elif not has_prefix(folder, name):
            bad.append('%s: %s %s lacks the prefix %s/%s of %s/' % (
                rel, kind, name, PREFIXES[folder][0], PREFIXES[folder][1], folder))
    if lib:
        missed, total = nm_coverage(repo, lib, ids)
        for sym in missed:
            bad.append('%s: global function %s is named in a public header but was not found '
                       'as a declaration' % (lib, sym))
    out = problems + bad
    for line in out:
        print('check_prefixes: ' + line)
    if out:
        print('check_prefixes: FAIL, %d offender(s); rename with test/layers/rename_prefixes.py'
              % len(out))
        return 1
    print('check_prefixes: ok, %d public identifiers in %d headers carry their folder\'s prefix'
          % (len(ids), len(public_headers(repo))))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
