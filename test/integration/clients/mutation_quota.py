"""controller_mutation_rate (KIP-599) over raw frames (t_mutation_quota.sh):
CreateTopics / DeleteTopics / CreatePartitions from a client id with a quota
of 2 partitions/s, sent to the node given (the controller: its handler
counts; another node: counted there before forwarding). Prints PASS/FAIL.
argv: ADDR CLIENT_ID LABEL LOCAL(1: the node serves it, answers carry the
throttle time)."""
import struct
import sys
import time

from kwire import call, cstr, uvarint

ADDR, CID, LABEL, LOCAL = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
THROTTLED = 89


def check(what, ok, detail=''):
    print(('PASS ' if ok else 'FAIL ') + f'{LABEL}: ' + what + (f' ({detail})' if detail and not ok else ''))
    sys.stdout.flush()


def carr(items):
    return uvarint(len(items) + 1) + b''.join(items)


def create(ver, topics, validate_only=False):
    """-> (throttle, {name: error})"""
    ts = [cstr(n.encode()) + struct.pack('>ih', p, 1) + carr([]) + carr([]) + b'\0' for n, p in topics]
    body = carr(ts) + struct.pack('>i', 15000) + (b'\1' if validate_only else b'\0') + b'\0'
    r = call(ADDR, 19, ver, body, client=CID.encode())
    thr = r.i32(); out = {}
    for _ in range(r.count()):
        name = r.s()
        if ver >= 7:
            r.take(16)
        out[name] = r.i16(); r.s(); r.i32(); r.i16()
        n = r.count()
        for _ in range(max(n, 0)):
            r.s(); r.s(); r.i8(); r.i8(); r.i8(); r.tags()
        r.tags()
    return thr, out


def delete(ver, names):
    body = carr([cstr(n.encode()) for n in names]) + struct.pack('>i', 15000) + b'\0'
    r = call(ADDR, 20, ver, body, client=CID.encode())
    thr = r.i32(); out = {}
    for _ in range(r.count()):
        name = r.s(); out[name] = r.i16()
        if ver >= 5:
            r.s()
        r.tags()
    return thr, out


def create_partitions(ver, name, count):
    body = carr([cstr(name.encode()) + struct.pack('>i', count) + b'\0' + b'\0']) + struct.pack('>i', 15000) + b'\0\0'
    r = call(ADDR, 37, ver, body, client=CID.encode())
    thr = r.i32(); r.count(); r.s()
    return thr, r.i16()


t = lambda s: f'{CID}-{s}'
thr, out = create(7, [(t('a'), 4)])
check(f'CreateTopics v7 of 4 partitions within the bucket: created ({out})', out == {t('a'): 0})
check(f'... and the bucket is in debt: throttle_time_ms > 0 ({thr})', thr > 0 or not LOCAL)
thr, out = create(7, [(t('b'), 1)])
check(f'CreateTopics v7 in debt: THROTTLING_QUOTA_EXCEEDED ({out}, {thr})', out == {t('b'): THROTTLED} and
      (thr > 0 or not LOCAL))
thr, out = create(7, [(t('v'), 1)], validate_only=True)
check(f'CreateTopics v7 validate_only in debt: not counted, no error ({out})', out == {t('v'): 0})
thr, out = create(5, [(t('c'), 1)])
check(f'CreateTopics v5 in debt: admitted (old versions are only throttled) ({out}, {thr})', out == {t('c'): 0} and
      (thr > 0 or not LOCAL))
thr, out = delete(5, [t('a')])
check(f'DeleteTopics v5 in debt: THROTTLING_QUOTA_EXCEEDED ({out})', out == {t('a'): THROTTLED})
thr, e = create_partitions(3, t('c'), 2)
check(f'CreatePartitions v3 in debt: THROTTLING_QUOTA_EXCEEDED ({e})', e == THROTTLED)
deadline = time.time() + 20
while True:
    thr, out = create(7, [(t('d'), 1)])
    if out.get(t('d')) != THROTTLED or time.time() > deadline:
        break
    time.sleep(0.3)
check(f'CreateTopics v7 once the bucket refilled: created ({out})', out == {t('d'): 0})
deadline = time.time() + 20
while True:
    thr, out = delete(5, [t('a')])
    if out.get(t('a')) != THROTTLED or time.time() > deadline:
        break
    time.sleep(0.3)
check(f'DeleteTopics v5 once the bucket refilled: deleted ({out})', out == {t('a'): 0})
