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


main()
print("PASS acl_apis.py ran to its end")
