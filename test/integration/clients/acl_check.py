"""ACL checks against one SASL_PLAINTEXT node with the StandardAuthorizer on
(t_acl_basic.sh). Prints PASS/FAIL lines. Users (PLAIN): admin (super user),
alice, bob, carol, dave. Phases: main, after_restart."""
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient,
                         NewTopic, ResourcePattern, ResourcePatternFilter, ResourceType)

B = sys.argv[1]
PHASE = sys.argv[2]
PW = {'admin': 'admin-secret', 'alice': 'alice-pw', 'bob': 'bob-pw', 'carol': 'carol-pw', 'dave': 'dave-pw'}


def check(what, ok, detail=''):
    print(('PASS ' if ok else 'FAIL ') + what + (f' ({detail})' if detail and not ok else ''))
    sys.stdout.flush()


def admin(user):
    return KafkaAdminClient(bootstrap_servers=B, security_protocol='SASL_PLAINTEXT', sasl_mechanism='PLAIN',
                            sasl_plain_username=user, sasl_plain_password=PW[user], request_timeout_ms=10000)


def ck(user, extra=None):
    c = {'bootstrap.servers': B, 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanisms': 'PLAIN',
         'sasl.username': user, 'sasl.password': PW[user]}
    c.update(extra or {})
    return c


def produce(user, topic, n=5, extra=None):
    """-> (delivered, first error name)"""
    p = Producer(ck(user, extra))
    res = {'ok': 0, 'err': None}

    def cb(err, msg):
        if err:
            res['err'] = res['err'] or err.name()
        else:
            res['ok'] += 1
    for i in range(n):
        try:
            p.produce(topic, value=f'{user}-{i}'.encode(), callback=cb)
        except KafkaException as e:
            # a fatal error (an idempotent producer refused its producer id)
            # can come back before every message is queued: that is the
            # producer's refusal, not a crash of the test
            res['err'] = res['err'] or e.args[0].name()
            break
    try:
        p.flush(15)
    except KafkaException as e:   # the same fatal refusal, raised by flush
        res['err'] = res['err'] or e.args[0].name()
    return res['ok'], res['err']


def consume(user, topic, group, want, secs=15):
    """-> (records, first error name)"""
    c = Consumer(ck(user, {'group.id': group, 'auto.offset.reset': 'earliest', 'enable.auto.commit': False}))
    c.subscribe([topic])
    got, err = 0, None
    end = time.time() + secs
    while time.time() < end and got < want and err is None:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() != KafkaError._PARTITION_EOF:
                err = m.error().name()
            continue
        got += 1
    if got and err is None:
        try:
            c.commit(asynchronous=False)
        except KafkaException as e:
            err = e.args[0].name()
    c.close()
    return got, err


def acl(user, op, rtype, name, pattern=ACLResourcePatternType.LITERAL, perm=ACLPermissionType.ALLOW, host='*'):
    return ACL(principal=f'User:{user}', host=host, operation=op, permission_type=perm,
               resource_pattern=ResourcePattern(rtype, name, pattern))


def describe(a, principal=None):
    f = ACLFilter(principal=principal, host=None, operation=ACLOperation.ANY, permission_type=ACLPermissionType.ANY,
                  resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))
    acls, err = a.describe_acls(f)
    return acls


def main():
    a = admin('admin')
    a.create_topics([NewTopic(t, 1, 1) for t in ('t1', 'pay-a', 'pay-secret', 'other')])
    T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
    acls = [
        acl('alice', ACLOperation.WRITE, T, 't1'),
        acl('alice', ACLOperation.DESCRIBE, T, 't1'),
        acl('alice', ACLOperation.IDEMPOTENT_WRITE, C, 'kafka-cluster'),
        acl('bob', ACLOperation.READ, T, 'pay', ACLResourcePatternType.PREFIXED),
        acl('bob', ACLOperation.READ, G, 'g-bob'),
        acl('bob', ACLOperation.READ, T, 'pay-secret', perm=ACLPermissionType.DENY),
        acl('carol', ACLOperation.READ, T, 't1'),           # topic, not the group
        acl('dave', ACLOperation.READ, G, 'g-dave'),         # group, not the topic
        acl('alice', ACLOperation.READ, T, 't1', host='10.9.9.9'),  # another host: never matches here
    ]
    res = a.create_acls(acls)
    check('kafka-python create_acls: 9 created, none failed',
          len(res['succeeded']) == 9 and not res['failed'], str(res['failed']))
    bad = ACL(principal='User:x', host='*', operation=ACLOperation.READ, permission_type=ACLPermissionType.ALLOW,
              resource_pattern=ResourcePattern(C, 'not-the-cluster', ACLResourcePatternType.LITERAL))
    res = a.create_acls([bad])
    check('create_acls: CLUSTER named other than kafka-cluster refused', len(res['failed']) == 1)
    time.sleep(0.5)
    got = describe(a)
    check('describe_acls lists the 9 bindings', len(got) == 9, str(len(got)))
    got = describe(a, 'User:bob')
    check('describe_acls filtered by principal: bob has 3', len(got) == 3, str(len(got)))
    check('describe_acls returns the PREFIXED pattern',
          any(x.resource_pattern.pattern_type == ACLResourcePatternType.PREFIXED for x in got))
    # a user without DESCRIBE on the cluster may not list ACLs
    try:
        describe(admin('alice'))
        check('alice describe_acls refused (CLUSTER_AUTHORIZATION_FAILED)', False, 'no error')
    except Exception as e:
        check('alice describe_acls refused (CLUSTER_AUTHORIZATION_FAILED)', 'ClusterAuthorization' in repr(e), repr(e))
    try:
        r = admin('alice').create_acls([acl('alice', ACLOperation.ALL, T, 'other')])
        check('alice create_acls refused', len(r['failed']) == 1 and not r['succeeded'], str(r))
    except Exception as e:
        check('alice create_acls refused', 'ClusterAuthorization' in repr(e), repr(e))

    ok, err = produce('alice', 't1')
    check('alice (WRITE t1) produces to t1', ok == 5 and err is None, f'{ok} {err}')
    ok, err = produce('alice', 'other', 1)
    check('alice produce to other: TOPIC_AUTHORIZATION_FAILED', ok == 0 and err == 'TOPIC_AUTHORIZATION_FAILED',
          f'{ok} {err}')
    ok, err = produce('alice', 't1', 3, {'enable.idempotence': True})
    check('alice idempotent producer (IDEMPOTENT_WRITE) produces', ok == 3 and err is None, f'{ok} {err}')
    ok, err = produce('bob', 't1', 1, {'enable.idempotence': True})
    check('bob idempotent producer without IDEMPOTENT_WRITE fails', ok == 0 and err is not None, f'{ok} {err}')

    md = Producer(ck('alice')).list_topics(timeout=10)
    names = sorted(md.topics)
    check('Metadata for alice lists only t1', names == ['t1'], str(names))
    md = Producer(ck('admin')).list_topics(timeout=10)
    check('Metadata for the super user lists all 4', {'t1', 'pay-a', 'pay-secret', 'other'} <= set(md.topics),
          str(sorted(md.topics)))
    md = Producer(ck('bob')).list_topics(timeout=10)
    # a DENY of READ leaves the DESCRIBE that the prefixed READ implies
    check('Metadata for bob lists the pay* topics (DENY READ does not deny DESCRIBE)',
          sorted(md.topics) == ['pay-a', 'pay-secret'], str(sorted(md.topics)))
    md = Producer(ck('alice')).list_topics(topic='newtopic', timeout=10)
    t = md.topics.get('newtopic')
    check('auto-creation without CREATE: not created',
          t is not None and t.error is not None and 'newtopic' not in Producer(ck('admin')).list_topics(timeout=10).topics,
          str(t and t.error))

    ok, err = produce('admin', 'pay-a', 4)
    ok2, err2 = produce('admin', 'pay-secret', 2)
    check('super user produces anywhere', ok == 4 and ok2 == 2, f'{ok} {err} {ok2} {err2}')
    got, err = consume('bob', 'pay-a', 'g-bob', 4)
    check('bob (PREFIXED pay READ + group g-bob) consumes pay-a and commits', got == 4 and err is None, f'{got} {err}')
    got, err = consume('bob', 'pay-secret', 'g-bob', 2, 8)
    check('bob on pay-secret: DENY beats the prefixed ALLOW', got == 0 and err == 'TOPIC_AUTHORIZATION_FAILED',
          f'{got} {err}')
    got, err = consume('carol', 't1', 'g-carol', 5, 8)
    check('carol may read the topic but not the group: GROUP_AUTHORIZATION_FAILED',
          got == 0 and err == 'GROUP_AUTHORIZATION_FAILED', f'{got} {err}')
    got, err = consume('dave', 't1', 'g-dave', 5, 8)
    check('dave may use the group but not read the topic: TOPIC_AUTHORIZATION_FAILED',
          got == 0 and err == 'TOPIC_AUTHORIZATION_FAILED', f'{got} {err}')

    # transactional ids
    try:
        p = Producer(ck('alice', {'transactional.id': 'tx-alice'}))
        p.init_transactions(10)
        check('transactional producer without WRITE on its id refused', False, 'init succeeded')
    except KafkaException as e:
        check('transactional producer without WRITE on its id refused',
              e.args[0].name() == 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED', e.args[0].name())
    a.create_acls([acl('alice', ACLOperation.WRITE, ResourceType.TRANSACTIONAL_ID, 'tx-', ACLResourcePatternType.PREFIXED),
                   acl('alice', ACLOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, 'tx-', ACLResourcePatternType.PREFIXED)])
    time.sleep(0.5)
    try:
        p = Producer(ck('alice', {'transactional.id': 'tx-alice'}))
        p.init_transactions(15)
        p.begin_transaction()
        p.produce('t1', b'in-txn')
        p.commit_transaction(15)
        check('transactional producer with WRITE on tx- (prefixed) commits', True)
    except KafkaException as e:
        check('transactional producer with WRITE on tx- (prefixed) commits', False, e.args[0].name())
    # AddPartitionsToTxn needs WRITE on the topic too: the commit fails
    try:
        p.begin_transaction()
        p.produce('other', b'not-allowed')
        p.commit_transaction(15)
        check('transaction writing a topic without WRITE does not commit', False, 'committed')
    except KafkaException as e:
        check('transaction writing a topic without WRITE does not commit', True)
        try:
            p.abort_transaction(15)
        except KafkaException:
            pass

    # delete: bob's group ACL goes, bob can no longer consume
    f = ACLFilter(principal='User:bob', host=None, operation=ACLOperation.READ, permission_type=ACLPermissionType.ALLOW,
                  resource_pattern=ResourcePatternFilter(G, 'g-bob', ACLResourcePatternType.LITERAL))
    res = a.delete_acls([f])
    matched = res[0][1] if res else []
    check('kafka-python delete_acls removes bob\'s group ACL (1 matched)', len(matched) == 1, str(res))
    time.sleep(0.5)
    got, err = consume('bob', 'pay-a', 'g-bob', 4, 8)
    check('bob after delete: GROUP_AUTHORIZATION_FAILED', got == 0 and err == 'GROUP_AUTHORIZATION_FAILED',
          f'{got} {err}')
    check('11 - 1 = 10 bindings remain', len(describe(a)) == 10, str(len(describe(a))))

    # group admin APIs: ListGroups filtered by DESCRIBE, DeleteGroups needs DELETE
    groups = [g[0] for g in a.list_consumer_groups()]
    check('super user lists g-bob', 'g-bob' in groups, str(groups))
    groups = [g[0] for g in admin('alice').list_consumer_groups()]
    check('alice (no group ACL) lists no group', groups == [], str(groups))
    # kafka-python asks FindCoordinator first, which needs DESCRIBE on the
    # group: with DESCRIBE but not DELETE the DeleteGroups handler refuses
    a.create_acls([acl('alice', ACLOperation.DESCRIBE, G, 'g-bob')])
    time.sleep(0.5)
    try:
        res = admin('alice').delete_consumer_groups(['g-bob'])
    except Exception as e:
        res = [('g-bob', e)]
    err = res[0][1] if res else None
    check('alice DeleteGroups g-bob: GROUP_AUTHORIZATION_FAILED', 'GroupAuthorization' in repr(err), repr(res))
    groups = [g[0] for g in a.list_consumer_groups()]
    check('g-bob still there after the refused delete', 'g-bob' in groups, str(groups))


def after_restart():
    a = admin('admin')
    got = describe(a)
    check('after restart: the 11 bindings are back', len(got) == 11, str(len(got)))
    ok, err = produce('alice', 't1', 2)
    check('after restart: alice still produces to t1', ok == 2 and err is None, f'{ok} {err}')
    ok, err = produce('alice', 'other', 1)
    check('after restart: alice still refused on other', ok == 0 and err == 'TOPIC_AUTHORIZATION_FAILED', f'{ok} {err}')


try:
    {'main': main, 'after_restart': after_restart}[PHASE]()
    check(f'phase {PHASE} ran to its end', True)
except Exception as e:   # a crash must fail the test, not just stop the checks
    check(f'phase {PHASE} ran to its end', False, repr(e))
