"""ACL checks of the APIs that answer their own authorization errors
(t_acl_apis.sh), over raw frames on SASL PLAIN connections (sasl_wire.py):
UpdateFeatures, Describe/AlterClientQuotas, ConsumerGroupHeartbeat,
ConsumerGroupDescribe, DescribeTopicPartitions. The bindings are set with
kafka-python by the super user. Prints PASS/FAIL lines. Users: admin (super
user), alice (some rights), bob (none)."""
import struct
import sys
import time

from kafka.admin import (ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient, NewTopic,
                         ResourcePattern, ResourceType)

from kwire import cstr, uvarint
from sasl_wire import Conn

B = sys.argv[1]
PW = {'admin': 'admin-secret', 'alice': 'alice-pw', 'bob': 'bob-pw'}
TOPIC_AUTH, GROUP_AUTH, CLUSTER_AUTH = 29, 30, 31


def check(what, ok, detail=''):
    print(('PASS ' if ok else 'FAIL ') + what + (f' ({detail})' if detail and not ok else ''))
    sys.stdout.flush()


def conn(user):
    c = Conn(B)
    err, _ = c.handshake('PLAIN')
    assert err == 0, err
    err, msg, _, _ = c.authenticate(b'\0' + user.encode() + b'\0' + PW[user].encode())
    assert err == 0, msg
    return c


def carr(items):
    return uvarint(len(items) + 1) + b''.join(items)


def update_features(user, validate_only):
    body = struct.pack('>i', 10000) + carr([cstr(b'group.version') + struct.pack('>hb', 1, 1) + b'\0'])
    body += bytes([1 if validate_only else 0]) + b'\0'
    r = conn(user).request(57, 1, body, True)
    r.i32()
    return r.i16()


def describe_quotas(user):
    body = carr([cstr(b'user') + struct.pack('>b', 2) + b'\0' + b'\0']) + b'\0' + b'\0'
    r = conn(user).request(48, 1, body, True)
    r.i32()
    return r.i16()


def alter_quotas(user, who):
    ent = carr([cstr(b'user') + cstr(who.encode()) + b'\0'])
    op = carr([cstr(b'producer_byte_rate') + struct.pack('>d', 1048576.0) + b'\0' + b'\0'])
    body = carr([ent + op + b'\0']) + b'\0' + b'\0'
    r = conn(user).request(49, 1, body, True)
    r.i32()
    n = r.count()
    return [r.i16() for _ in range(1)] if n >= 1 else []


def find_coordinator(user, group):
    r = conn(user).request(10, 0, struct.pack('>h', len(group)) + group.encode(), False)
    return r.i16()


def heartbeat(user, group, topics):
    body = cstr(group.encode()) + cstr(b'') + struct.pack('>i', 0) + b'\0' + b'\0' + struct.pack('>i', 30000)
    body += carr([cstr(t.encode()) for t in topics]) + b'\0' + carr([]) + b'\0'
    r = conn(user).request(68, 0, body, True)
    r.i32()
    return r.i16()


def describe_groups(user, groups):
    """-> [(error, group id)] of the first groups, as far as the denied
    (memberless) ones let the reader go: the first entry fully, then the
    error and id of the second."""
    body = carr([cstr(g.encode()) for g in groups]) + b'\0' + b'\0'
    r = conn(user).request(69, 0, body, True)
    r.i32()
    n = r.count()
    out = []
    for i in range(n):
        err = r.i16(); r.s(); gid = r.s()
        out.append((err, gid))
        if i == n - 1 or err == 0:
            break
        r.s(); r.i32(); r.i32(); r.s()
        assert r.count() == 0
        r.i32(); r.tags()
    return out


def describe_topic_partitions(user, topics):
    """-> [(error, name)] of the first topic only, and the topic count."""
    body = carr([cstr(t.encode()) + b'\0' for t in topics]) + struct.pack('>i', 2000) + b'\xff' + b'\0'
    r = conn(user).request(75, 0, body, True)
    r.i32()
    n = r.count()
    if n < 1:
        return n, None
    err = r.i16(); name = r.s()
    return n, (err, name)


def i32s(vals):
    return carr([struct.pack('>i', v) for v in vals])


def call_retry(user, key, ver, body, flexible, parse, retry=(14, 15, 16), secs=20):
    """parse(Rd) -> (error, result); retried on coordinator errors."""
    deadline = time.time() + secs
    while True:
        err, res = parse(conn(user).request(key, ver, body, flexible))
        if err not in retry or time.time() > deadline:
            return err, res
        time.sleep(0.3)


def offset_for_leader_epoch(user, topic, replica_id):
    body = struct.pack('>i', replica_id) + carr([cstr(topic.encode()) + carr([struct.pack('>iii', 0, -1, 0) + b'\0'])
                                                 + b'\0']) + b'\0'
    r = conn(user).request(23, 4, body, True)
    r.i32(); r.count(); r.s(); r.count()
    return r.i16()


def delete_records(user, topic):
    body = carr([cstr(topic.encode()) + carr([struct.pack('>iq', 0, -1) + b'\0']) + b'\0']) + struct.pack('>i', 10000)
    r = conn(user).request(21, 2, body + b'\0', True)
    r.i32(); r.count(); r.s(); r.count(); r.i32(); r.i64()
    return r.i16()


def describe_producers(user, topic):
    body = carr([cstr(topic.encode()) + i32s([0]) + b'\0']) + b'\0'
    r = conn(user).request(61, 0, body, True)
    r.i32(); r.count(); r.s(); r.count(); r.i32()
    return r.i16()


def describe_transactions(user, tid):
    r = conn(user).request(65, 0, carr([cstr(tid.encode())]) + b'\0', True)
    r.i32(); r.count()
    return r.i16()


def list_transactions(user):
    r = conn(user).request(66, 0, carr([]) + carr([]) + b'\0', True)
    r.i32(); err = r.i16(); r.arr(r.s)
    ids = []
    for _ in range(r.count()):
        ids.append(r.s()); r.i64(); r.s(); r.tags()
    return err, ids


def offset_commit(user, group, topics):
    parts = lambda: carr([struct.pack('>iqi', 0, 1, -1) + b'\0' + b'\0'])
    body = cstr(group.encode()) + struct.pack('>i', -1) + cstr(b'') + b'\0'
    body += carr([cstr(t.encode()) + parts() + b'\0' for t in topics]) + b'\0'

    def parse(r):
        r.i32(); out = {}
        for _ in range(r.count()):
            name = r.s(); n = r.count()
            for _ in range(n):
                r.i32(); out[name] = r.i16(); r.tags()
            r.tags()
        errs = set(out.values())
        return (max(errs) if errs and errs <= {14, 15, 16} else 0), out
    return call_retry(user, 8, 8, body, True, parse)[1]


def offset_delete(user, group, topics):
    body = struct.pack('>h', len(group)) + group.encode() + struct.pack('>i', len(topics))
    for t in topics:
        body += struct.pack('>h', len(t)) + t.encode() + struct.pack('>ii', 1, 0)

    def parse(r):
        top = r.i16(); r.i32(); out = {}
        for _ in range(max(r.i32(), 0)):
            name = r.string(False)
            for _ in range(max(r.i32(), 0)):
                r.i32(); out[name] = r.i16()
        return top, (top, out)
    return call_retry(user, 47, 0, body, False, parse)[1]


def offset_fetch_v8(user, groups, topics=None, detail=False):
    """-> [(group, error)], or with detail [(group, error, {topic: [partition errors]})];
    topics None: every committed partition."""
    tq = b'\0' if topics is None else carr([cstr(t.encode()) + i32s([0]) + b'\0' for t in topics])
    body = carr([cstr(g.encode()) + tq + b'\0' for g in groups]) + b'\0' + b'\0'
    r = conn(user).request(9, 8, body, True)
    r.i32(); out = []
    for _ in range(r.count()):
        gid = r.s(); ts = {}
        for _ in range(max(r.count(), 0)):
            name = r.s(); ts[name] = []
            for _ in range(max(r.count(), 0)):
                r.i32(); r.i64(); r.i32(); r.s(); ts[name].append(r.i16()); r.tags()
            r.tags()
        err = r.i16(); r.tags()
        out.append((gid, err, ts) if detail else (gid, err))
    return out


def txn_offset_commit(user, tid, group, topics):
    """InitProducerId, AddOffsetsToTxn, TxnOffsetCommit v3 -> {topic: error}, then aborts."""
    # FindCoordinator for the id first, as a client: it creates __transaction_state
    fc = struct.pack('>h', len(tid)) + tid.encode() + b'\x01'
    call_retry(user, 10, 1, fc, False, lambda r: (r.i32() and 0 or r.i16(), None))

    def pid_parse(r):
        r.i32(); err = r.i16(); return err, (r.i64(), r.i16())
    err, (pid, epoch) = call_retry(user, 22, 2, cstr(tid.encode()) + struct.pack('>i', 60000) + b'\0', True, pid_parse,
                                   retry=(14, 15, 16, 51))
    if err:
        return {'InitProducerId': err}
    base = cstr(tid.encode()) + struct.pack('>qh', pid, epoch)
    err = call_retry(user, 25, 3, base + cstr(group.encode()) + b'\0', True,
                     lambda r: (r.i32() and 0 or r.i16(), None), retry=(14, 15, 16, 51))[0]
    if err:
        return {'AddOffsetsToTxn': err}
    parts = carr([struct.pack('>iqi', 0, 1, -1) + b'\0' + b'\0'])
    body = cstr(tid.encode()) + cstr(group.encode()) + struct.pack('>qhi', pid, epoch, -1) + cstr(b'') + b'\0'
    body += carr([cstr(t.encode()) + parts + b'\0' for t in topics]) + b'\0'

    def parse(r):
        r.i32(); out = {}
        for _ in range(r.count()):
            name = r.s()
            for _ in range(r.count()):
                r.i32(); out[name] = r.i16(); r.tags()
            r.tags()
        errs = set(out.values())
        return (max(errs) if errs and errs <= {14, 15, 16} else 0), out
    out = call_retry(user, 28, 3, body, True, parse)[1]
    conn(user).request(26, 3, base + b'\0' + b'\0', True)    # EndTxn abort
    return out


def first_i16(user, key, ver, body, skip_i32=1):
    """The first int16 after skip_i32 int32 fields (the top-level error)."""
    r = conn(user).request(key, ver, body, True)
    for _ in range(skip_i32):
        r.i32()
    return r.i16()


def first_item_err(user, key, ver, body, before=0):
    """The error of the first item of the response's first array (after the
    throttle time and `before` int16 fields)."""
    r = conn(user).request(key, ver, body, True)
    r.i32()
    for _ in range(before):
        r.i16()
    r.count()
    return r


def describe_configs(user, rtype, name):
    body = carr([struct.pack('>b', rtype) + cstr(name.encode()) + b'\0' + b'\0']) + b'\0\0' + b'\0'
    return first_item_err(user, 32, 4, body).i16()


def incremental_alter(user, rtype, name, key, value):
    cfg = carr([cstr(key.encode()) + b'\0' + cstr(value.encode()) + b'\0'])
    body = carr([struct.pack('>b', rtype) + cstr(name.encode()) + cfg + b'\0']) + b'\1' + b'\0'
    return first_item_err(user, 44, 1, body).i16()


def alter_configs(user, rtype, name, key, value):
    cfg = carr([cstr(key.encode()) + cstr(value.encode()) + b'\0'])
    body = carr([struct.pack('>b', rtype) + cstr(name.encode()) + cfg + b'\0']) + b'\1' + b'\0'
    return first_item_err(user, 33, 2, body).i16()


def create_partitions(user, topic, count):
    body = carr([cstr(topic.encode()) + struct.pack('>i', count) + b'\0' + b'\0']) + struct.pack('>i', 10000)
    r = first_item_err(user, 37, 2, body + b'\1' + b'\0')
    r.s()
    return r.i16()


def elect_leaders(user, topic):
    body = b'\0' + carr([cstr(topic.encode()) + i32s([0]) + b'\0']) + struct.pack('>i', 10000) + b'\0'
    return first_i16(user, 43, 2, body)


def alter_reassignments(user, topic):
    body = struct.pack('>i', 10000) + carr([cstr(topic.encode()) + carr([struct.pack('>i', 0) + b'\0' + b'\0'])
                                            + b'\0']) + b'\0'
    return first_i16(user, 45, 0, body)


def list_reassignments(user):
    return first_i16(user, 46, 0, struct.pack('>i', 10000) + b'\0' + b'\0')


def describe_scram(user):
    return first_i16(user, 50, 0, b'\0' + b'\0')


def alter_scram(user, name):
    body = carr([cstr(name.encode()) + b'\1' + b'\0']) + carr([]) + b'\0'
    r = first_item_err(user, 51, 0, body)
    r.s()
    return r.i16()


def add_partitions_v4(user):
    txn = cstr(b'tx-a') + struct.pack('>qh', 1, 0) + b'\1' + carr([cstr(b't-open') + i32s([0]) + b'\0']) + b'\0'
    return first_i16(user, 24, 4, carr([txn]) + b'\0')


def describe_log_dirs(user):
    return first_i16(user, 35, 4, b'\0' + b'\0')


def cluster_ops(user, ask):
    r = conn(user).request(60, 0, (b'\1' if ask else b'\0') + b'\0', True)
    r.i32(); r.i16(); r.s(); r.s(); r.i32()
    for _ in range(r.count()):
        r.i32(); r.s(); r.i32(); r.s(); r.tags()
    return r.i32()


def acl(user, op, rtype, name):
    return ACL(principal=f'User:{user}', host='*', operation=op, permission_type=ACLPermissionType.ALLOW,
               resource_pattern=ResourcePattern(rtype, name, ACLResourcePatternType.LITERAL))


def main():
    a = KafkaAdminClient(bootstrap_servers=B, security_protocol='SASL_PLAINTEXT', sasl_mechanism='PLAIN',
                         sasl_plain_username='admin', sasl_plain_password=PW['admin'], request_timeout_ms=10000)
    a.create_topics([NewTopic('t-open', 1, 1), NewTopic('t-secret', 1, 1)])
    res = a.create_acls([acl('alice', ACLOperation.DESCRIBE, ResourceType.TOPIC, 't-open'),
                         acl('alice', ACLOperation.READ, ResourceType.GROUP, 'g-ok'),
                         acl('alice', ACLOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, 'kafka-cluster')])
    check('admin created 3 bindings', len(res['succeeded']) == 3, res)
    time.sleep(0.5)

    e = update_features('alice', True)
    check(f'UpdateFeatures as alice (no ALTER on the cluster): CLUSTER_AUTHORIZATION_FAILED ({e})', e == CLUSTER_AUTH)
    e = update_features('admin', True)
    check(f'UpdateFeatures validate-only as the super user: no error ({e})', e == 0)

    e = describe_quotas('alice')
    check(f'DescribeClientQuotas as alice (DESCRIBE_CONFIGS on the cluster): no error ({e})', e == 0)
    e = describe_quotas('bob')
    check(f'DescribeClientQuotas as bob: CLUSTER_AUTHORIZATION_FAILED ({e})', e == CLUSTER_AUTH)
    e = alter_quotas('alice', 'bob')
    check(f'AlterClientQuotas as alice (no ALTER_CONFIGS): the entry CLUSTER_AUTHORIZATION_FAILED ({e})',
          e == [CLUSTER_AUTH])
    e = alter_quotas('admin', 'bob')
    check(f'AlterClientQuotas as the super user: the entry no error ({e})', e == [0])

    # FindCoordinator first, as a client: the first lookup creates
    # __consumer_offsets (COORDINATOR_NOT_AVAILABLE until it has a leader)
    deadline = time.time() + 20
    while True:
        e = find_coordinator('alice', 'g-ok')
        if e != 15 or time.time() > deadline:
            break
        time.sleep(0.3)
    check(f'FindCoordinator g-ok as alice: no error ({e})', e == 0)
    e = heartbeat('alice', 'g-ok', ['t-open'])
    check(f'ConsumerGroupHeartbeat as alice (READ group, DESCRIBE topic): no error ({e})', e == 0)
    e = heartbeat('alice', 'g-ok', ['t-open', 't-secret'])
    check(f'ConsumerGroupHeartbeat subscribing a topic alice may not describe: TOPIC_AUTHORIZATION_FAILED ({e})',
          e == TOPIC_AUTH)
    e = heartbeat('alice', 'g-other', ['t-open'])
    check(f'ConsumerGroupHeartbeat for a group alice may not read: GROUP_AUTHORIZATION_FAILED ({e})', e == GROUP_AUTH)
    e = heartbeat('bob', 'g-ok', ['t-open'])
    check(f'ConsumerGroupHeartbeat as bob: GROUP_AUTHORIZATION_FAILED ({e})', e == GROUP_AUTH)

    d = describe_groups('alice', ['g-other', 'g-ok'])
    check(f'ConsumerGroupDescribe as alice: g-other GROUP_AUTHORIZATION_FAILED, g-ok described ({d})',
          d == [(GROUP_AUTH, 'g-other'), (0, 'g-ok')])
    d = describe_groups('bob', ['g-ok'])
    check(f'ConsumerGroupDescribe as bob: GROUP_AUTHORIZATION_FAILED ({d})', d == [(GROUP_AUTH, 'g-ok')])
    d = describe_groups('admin', ['g-ok'])
    check(f'ConsumerGroupDescribe as the super user: described ({d})', d == [(0, 'g-ok')])

    n, t = describe_topic_partitions('alice', ['t-secret'])
    check(f'DescribeTopicPartitions t-secret as alice: TOPIC_AUTHORIZATION_FAILED ({n}, {t})',
          n == 1 and t == (TOPIC_AUTH, 't-secret'))
    n, t = describe_topic_partitions('alice', ['no-such-topic'])
    check(f'DescribeTopicPartitions of an absent topic alice may not describe: TOPIC_AUTHORIZATION_FAILED ({t})',
          n == 1 and t == (TOPIC_AUTH, 'no-such-topic'))
    n, t = describe_topic_partitions('alice', ['t-open'])
    check(f'DescribeTopicPartitions t-open as alice: described ({n}, {t})', n == 1 and t == (0, 't-open'))
    n, t = describe_topic_partitions('alice', [])
    check(f'DescribeTopicPartitions of every topic as alice: only t-open listed ({n}, {t})',
          n == 1 and t == (0, 't-open'))
    n, t = describe_topic_partitions('admin', [])
    check(f'DescribeTopicPartitions of every topic as the super user: both topics and more ({n})', n >= 2)

    phase2(a)


def phase2(a):
    res = a.create_acls([acl('alice', ACLOperation.READ, ResourceType.TOPIC, 't-open'),
                         acl('alice', ACLOperation.DELETE, ResourceType.GROUP, 'g-del'),
                         acl('alice', ACLOperation.WRITE, ResourceType.TRANSACTIONAL_ID, 'tx-a')])
    check('admin created 3 more bindings', len(res['succeeded']) == 3, res)
    time.sleep(0.5)

    e = offset_for_leader_epoch('alice', 't-secret', -1)
    check(f'OffsetForLeaderEpoch t-secret as alice (client): TOPIC_AUTHORIZATION_FAILED ({e})', e == TOPIC_AUTH)
    e = offset_for_leader_epoch('alice', 't-open', -1)
    check(f'OffsetForLeaderEpoch t-open as alice (DESCRIBE): no error ({e})', e == 0)
    e = offset_for_leader_epoch('alice', 't-open', 1)
    check(f'OffsetForLeaderEpoch as a replica without CLUSTER_ACTION: CLUSTER_AUTHORIZATION_FAILED ({e})',
          e == CLUSTER_AUTH)

    e = delete_records('alice', 't-open')
    check(f'DeleteRecords t-open as alice (no DELETE): TOPIC_AUTHORIZATION_FAILED ({e})', e == TOPIC_AUTH)
    e = delete_records('admin', 't-open')
    check(f'DeleteRecords t-open as the super user: no error ({e})', e == 0)

    e = describe_producers('alice', 't-open')
    check(f'DescribeProducers t-open as alice (READ): no error ({e})', e == 0)
    e = describe_producers('alice', 't-secret')
    check(f'DescribeProducers t-secret as alice: TOPIC_AUTHORIZATION_FAILED ({e})', e == TOPIC_AUTH)

    out = offset_commit('admin', 'g-del', ['t-open', 't-secret'])
    check(f'OffsetCommit g-del as the super user ({out})', out == {'t-open': 0, 't-secret': 0})
    top, out = offset_delete('bob', 'g-del', ['t-open'])
    check(f'OffsetDelete as bob (no DELETE on the group): GROUP_AUTHORIZATION_FAILED ({top})', top == GROUP_AUTH)
    top, out = offset_delete('alice', 'g-del', ['t-open', 't-secret'])
    check(f'OffsetDelete as alice: t-open deleted, t-secret TOPIC_AUTHORIZATION_FAILED ({top}, {out})',
          top == 0 and out == {'t-open': 0, 't-secret': TOPIC_AUTH})

    out = offset_fetch_v8('alice', ['g-del', 'g-other'])
    check(f'OffsetFetch v8 as alice: g-del answered, g-other GROUP_AUTHORIZATION_FAILED ({out})',
          sorted(out) == [('g-del', 0), ('g-other', GROUP_AUTH)])

    out = offset_fetch_v8('alice', ['g-del'], detail=True)
    check(f'OffsetFetch v8 of every committed partition as alice: t-secret left out ({out})',
          out == [('g-del', 0, {})])
    out = offset_fetch_v8('admin', ['g-del'], detail=True)
    check(f'OffsetFetch v8 of every committed partition as the super user: t-secret listed ({out})',
          out == [('g-del', 0, {'t-secret': [0]})])
    out = offset_fetch_v8('alice', ['g-del'], topics=['t-open', 't-secret'], detail=True)
    check(f'OffsetFetch v8 of listed topics as alice: t-secret TOPIC_AUTHORIZATION_FAILED ({out})',
          out == [('g-del', 0, {'t-open': [0], 't-secret': [TOPIC_AUTH]})])

    out = txn_offset_commit('alice', 'tx-a', 'g-ok', ['t-open', 't-secret'])
    check(f'TxnOffsetCommit as alice: t-open committed, t-secret TOPIC_AUTHORIZATION_FAILED ({out})',
          out == {'t-open': 0, 't-secret': TOPIC_AUTH})
    e = describe_transactions('alice', 'tx-a')
    check(f'DescribeTransactions tx-a as alice: no error ({e})', e == 0)
    e = describe_transactions('bob', 'tx-a')
    check(f'DescribeTransactions tx-a as bob: TRANSACTIONAL_ID_AUTHORIZATION_FAILED ({e})', e == 53)
    err, ids = list_transactions('alice')
    check(f'ListTransactions as alice lists tx-a ({err}, {ids})', err == 0 and 'tx-a' in ids)
    err, ids = list_transactions('bob')
    check(f'ListTransactions as bob lists nothing ({err}, {ids})', err == 0 and ids == [])

    phase3(a)


def phase3(a):
    TOPIC, BROKER = 2, 4
    e = describe_configs('alice', TOPIC, 't-secret')
    check(f'DescribeConfigs t-secret as alice (no DESCRIBE_CONFIGS): TOPIC_AUTHORIZATION_FAILED ({e})', e == TOPIC_AUTH)
    e = describe_configs('alice', BROKER, '1')
    check(f'DescribeConfigs broker 1 as alice (DESCRIBE_CONFIGS on the cluster): no error ({e})', e == 0)
    e = describe_configs('bob', BROKER, '1')
    check(f'DescribeConfigs broker 1 as bob: CLUSTER_AUTHORIZATION_FAILED ({e})', e == CLUSTER_AUTH)
    e = describe_configs('admin', TOPIC, 't-secret')
    check(f'DescribeConfigs t-secret as the super user: no error ({e})', e == 0)
    e = incremental_alter('alice', TOPIC, 't-open', 'retention.ms', '3600000')
    check(f'IncrementalAlterConfigs t-open as alice (no ALTER_CONFIGS): TOPIC_AUTHORIZATION_FAILED ({e})',
          e == TOPIC_AUTH)
    e = incremental_alter('alice', BROKER, '1', 'log.retention.ms', '3600000')
    check(f'IncrementalAlterConfigs broker 1 as alice: CLUSTER_AUTHORIZATION_FAILED ({e})', e == CLUSTER_AUTH)
    e = incremental_alter('admin', TOPIC, 't-open', 'retention.ms', '3600000')
    check(f'IncrementalAlterConfigs t-open validate-only as the super user: no error ({e})', e == 0)
    e = alter_configs('alice', TOPIC, 't-open', 'retention.ms', '3600000')
    check(f'AlterConfigs t-open as alice: TOPIC_AUTHORIZATION_FAILED ({e})', e == TOPIC_AUTH)
    e = create_partitions('alice', 't-open', 2)
    check(f'CreatePartitions t-open as alice (no ALTER): TOPIC_AUTHORIZATION_FAILED ({e})', e == TOPIC_AUTH)
    e = create_partitions('admin', 't-open', 2)
    check(f'CreatePartitions t-open validate-only as the super user: no error ({e})', e == 0)
    e = elect_leaders('alice', 't-open')
    check(f'ElectLeaders as alice: CLUSTER_AUTHORIZATION_FAILED ({e})', e == CLUSTER_AUTH)
    e = alter_reassignments('alice', 't-open')
    check(f'AlterPartitionReassignments as alice: CLUSTER_AUTHORIZATION_FAILED ({e})', e == CLUSTER_AUTH)
    e = list_reassignments('alice')
    check(f'ListPartitionReassignments as alice (no DESCRIBE on the cluster): CLUSTER_AUTHORIZATION_FAILED ({e})',
          e == CLUSTER_AUTH)
    e = list_reassignments('admin')
    check(f'ListPartitionReassignments as the super user: no error ({e})', e == 0)
    e = describe_scram('alice')
    check(f'DescribeUserScramCredentials as alice: CLUSTER_AUTHORIZATION_FAILED ({e})', e == CLUSTER_AUTH)
    e = describe_scram('admin')
    check(f'DescribeUserScramCredentials as the super user: no error ({e})', e == 0)
    e = alter_scram('alice', 'nobody')
    check(f'AlterUserScramCredentials as alice: the user CLUSTER_AUTHORIZATION_FAILED ({e})', e == CLUSTER_AUTH)
    e = alter_scram('admin', 'nobody')
    check(f'AlterUserScramCredentials deleting an absent credential as the super user: RESOURCE_NOT_FOUND ({e})',
          e == 91)
    e = add_partitions_v4('alice')
    check(f'AddPartitionsToTxn v4 (broker to coordinator) as alice: CLUSTER_AUTHORIZATION_FAILED ({e})',
          e == CLUSTER_AUTH)
    e = add_partitions_v4('admin')
    check(f'AddPartitionsToTxn v4 as the super user: no top-level error ({e})', e == 0)
    e = describe_log_dirs('bob')
    check(f'DescribeLogDirs as bob: CLUSTER_AUTHORIZATION_FAILED ({e})', e == CLUSTER_AUTH)
    e = describe_log_dirs('admin')
    check(f'DescribeLogDirs as the super user: no error ({e})', e == 0)
    ops = cluster_ops('admin', False)
    check(f'DescribeCluster without asking: authorized operations INT32_MIN ({ops})', ops == -2**31)
    ops = cluster_ops('admin', True)
    want = sum(1 << o for o in (5, 7, 8, 9, 10, 11, 12))
    check(f'DescribeCluster as the super user: every cluster operation ({ops:#x} vs {want:#x})', ops == want)
    ops = cluster_ops('alice', True)
    check(f'DescribeCluster as alice without DESCRIBE on the cluster: 0 ({ops})', ops == 0)
    res = a.create_acls([acl('alice', ACLOperation.DESCRIBE, ResourceType.CLUSTER, 'kafka-cluster')])
    time.sleep(0.5)
    ops = cluster_ops('alice', True)
    check(f'DescribeCluster as alice with DESCRIBE + DESCRIBE_CONFIGS: those two bits ({ops:#x})',
          ops == (1 << 8) | (1 << 10))


main()
print("PASS acl_apis.py ran to its end")
