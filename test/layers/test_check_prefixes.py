#!/usr/bin/env python3
"""Self-test of check_prefixes.py (it must be able to fail) and of
rename_prefixes.py (it fixes what the checker finds, refuses a collision and
renames nothing the second time).

Builds tiny fake trees in a temporary directory (broker/<folder>/*.h and a
.c using them) and asserts exit status and message for each:
  - a clean tree (private header with any names, root header)  -> 0, "ok"
  - a function without the prefix                             -> 1, its name
  - an enum constant made by an X-macro list                   -> 1, its name
  - a macro, a function-pointer typedef, an opaque tag         -> 1, its name
  - a root (broker/*.h) function named bk_node_*               -> 1
  - a folder the prefix table does not know                    -> 1, "has no prefix"
  - rename on a bad tree, then check                           -> 0; rerun renames 0
  - rename with two names mapping to one                       -> 1, "collision", nothing written
Prints "test_check_prefixes: N passed" last.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, 'check_prefixes.py')
RENAMER = os.path.join(HERE, 'rename_prefixes.py')

NET_H = '''/* net */
#ifndef SKIFF_BK_NET_H
#define SKIFF_BK_NET_H
#include <stdint.h>
#define BK_NET_BACKLOG 128
#define BK_NET_STATUS_LIST(X) X(BK_NET_ERR_GONE, -100) X(BK_NET_ERR_FULL, -101)
enum {
    BK_NET_OK = 0,
#define BK_NET_ENUM_(name, value) name = value,
    BK_NET_STATUS_LIST(BK_NET_ENUM_)
#undef BK_NET_ENUM_
};
struct event_base;
typedef struct bk_net bk_net_t;
typedef void (*bk_net_frame_fn)(bk_net_t *net, const uint8_t *frame);
bk_net_t *bk_net_new(struct event_base *base, void (*cb)(int (*inner)(void)));
int bk_net_listen(bk_net_t *net, const char *host) __attribute__((warn_unused_result));
#endif
'''
NET_INT_H = '''#ifndef SKIFF_BK_NET_INT_H
#define SKIFF_BK_NET_INT_H
#include "broker/net/net.h"
struct bk_net { int fd; };
void conn_private_helper(bk_net_t *net);
#define ANY_PRIVATE_NAME 1
#endif
'''
NET_C = '''#include "broker/net/net_int.h"
bk_net_t *bk_net_new(struct event_base *base, void (*cb)(int (*inner)(void))) { return 0; }
'''
NODE_H = '''#ifndef SKIFF_BK_NODE_H
#define SKIFF_BK_NODE_H
int bk_broker_start(void);
#endif
'''
BASE = {'broker/net/net.h': NET_H, 'broker/net/net_int.h': NET_INT_H, 'broker/net/net.c': NET_C,
        'broker/node.h': NODE_H, 'broker/README.md': '# broker\n'}


def make(root, files):
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'w') as f:
            f.write(text)


def run(prog, root, *args):
    p = subprocess.run([sys.executable, prog, '--repo', root] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    return p.returncode, p.stdout


def with_net(old, new):
    return {'broker/net/net.h': NET_H.replace(old, new)}


CHECK_CASES = [
    # (name, changed files, expected exit, expected text)
    ('clean', {}, 0, 'ok'),
    ('function', with_net('int bk_net_listen', 'int bk_listen'), 1, 'bk_listen lacks the prefix'),
    ('x-macro enum constant', with_net('X(BK_NET_ERR_FULL', 'X(BK_ERR_FULL'), 1, 'BK_ERR_FULL'),
    ('macro', with_net('#define BK_NET_BACKLOG', '#define BACKLOG'), 1, 'macro BACKLOG'),
    ('function pointer typedef', with_net('(*bk_net_frame_fn)', '(*bk_frame_fn)'), 1, 'bk_frame_fn'),
    ('opaque tag', {'broker/net/net.h': NET_H.replace('struct bk_net bk', 'struct bk_conn bk'),
                    'broker/net/net_int.h': NET_INT_H.replace('struct bk_net {', 'struct bk_conn {')},
     1, 'bk_conn lacks'),
    ('root function', {'broker/node.h': NODE_H.replace('bk_broker_start', 'bk_node_start')},
     1, 'bk_node_start lacks the prefix bk_broker_'),
    ('unknown folder', {'broker/extra/extra.h': 'void bk_extra_go(void);\n'}, 1, 'has no prefix'),
]

BAD_FOR_RENAME = {
    'broker/net/net.h': NET_H.replace('int bk_net_listen', 'int bk_listen')
                              .replace('#define BK_NET_BACKLOG', '#define BK_BACKLOG'),
    'broker/net/net.c': NET_C + 'int bk_listen(bk_net_t *n, const char *h) { return BK_BACKLOG; }\n'
                        'int bk_listener(void) { return 0; }\n',
    'broker/README.md': '# broker\nCall `bk_listen` (not bk_listener).\n',
}
COLLIDING = dict(BAD_FOR_RENAME)
COLLIDING['broker/net/net.h'] = BAD_FOR_RENAME['broker/net/net.h'].replace(
    '#endif', 'int bk_net_get(void);\nint bk_get(void);\n#endif')


def git_init(root):
    for cmd in (['init', '-q'], ['add', '-A']):
        subprocess.run(['git', '-C', root] + cmd, check=True, stdout=subprocess.DEVNULL)


def main():
    passed = 0
    failures = []
    with tempfile.TemporaryDirectory(prefix='check_prefixes.') as tmp:
        for i, (name, extra, want_rc, want_text) in enumerate(CHECK_CASES):
            root = os.path.join(tmp, 'repo%d' % i)
            files = dict(BASE)
            files.update(extra)
            make(root, files)
            rc, out = run(CHECKER, root)
            if rc != want_rc or want_text not in out:
                failures.append('%s: want exit %d with "%s", got %d:\n%s' % (name, want_rc, want_text, rc, out))
            else:
                passed += 1
        # rename, check, rename again
        root = os.path.join(tmp, 'rename')
        files = dict(BASE)
        files.update(BAD_FOR_RENAME)
        make(root, files)
        git_init(root)
        rc1, out1 = run(RENAMER, root, '--no-ctags')
        rc2, out2 = run(CHECKER, root)
        rc3, out3 = run(RENAMER, root, '--no-ctags')
        with open(os.path.join(root, 'broker/net/net.c')) as f:
            c = f.read()
        with open(os.path.join(root, 'broker/README.md')) as f:
            md = f.read()
        ok = (rc1 == 0 and 'renamed 2 identifiers' in out1 and rc2 == 0 and rc3 == 0
              and 'renamed 0 identifiers' in out3 and 'int bk_net_listen(' in c
              and 'return BK_NET_BACKLOG;' in c and 'int bk_listener(void)' in c
              and '`bk_net_listen` (not bk_listener)' in md)
        if ok:
            passed += 1
        else:
            failures.append('rename/check/rename:\n%s\n%s\n%s\n%s\n%s' % (out1, out2, out3, c, md))
        # a collision is refused and nothing is written
        root = os.path.join(tmp, 'collide')
        files = dict(BASE)
        files.update(COLLIDING)
        make(root, files)
        git_init(root)
        rc, out = run(RENAMER, root, '--no-ctags')
        with open(os.path.join(root, 'broker/net/net.c')) as f:
            c = f.read()
        if rc == 1 and 'collision' in out and 'bk_net_get' in out and 'int bk_listen(' in c:
            passed += 1
        else:
            failures.append('collision: want exit 1, "collision", nothing written; got %d:\n%s' % (rc, out))
    for f in failures:
        print('test_check_prefixes: FAIL ' + f)
    print('test_check_prefixes: %d passed%s' % (passed, ', %d failed' % len(failures) if failures else ''))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
