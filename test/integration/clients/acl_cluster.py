"""ACL steps for t_acl_cluster.sh: acl_cluster.py BOOTSTRAP STEP [ARGS].
Steps: grant TOPIC USER [RF] (admin creates the topic, replication factor RF,
default 3, and WRITE/DESCRIBE for USER), count N (DescribeAcls as admin sees N bindings, waits up to 10 s),
produce USER TOPIC (ok), create_denied USER TOPIC (CreateTopics refused
with TOPIC_AUTHORIZATION_FAILED). Prints PASS/FAIL lines."""
import sys
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient,
                         ResourcePattern, ResourcePatternFilter, ResourceType)

B, STEP, ARGS = sys.argv[1], sys.argv[2], sys.argv[3:]
PW = {'admin': 'admin-secret', 'alice': 'alice-pw', 'bob': 'bob-pw', 'carol': 'carol-pw'}


def check(what, ok, detail=''):
    print(('PASS ' if ok else 'FAIL ') + what + (f' ({detail})' if detail and not ok else ''))


def kp_admin():
    return KafkaAdminClient(bootstrap_servers=B, security_protocol='SASL_PLAINTEXT', sasl_mechanism='PLAIN',
                            sasl_plain_username='admin', sasl_plain_password=PW['admin'], request_timeout_ms=10000)


def ck(user):
    return {'bootstrap.servers': B, 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanisms': 'PLAIN',
            'sasl.username': user, 'sasl.password': PW[user]}


if STEP == 'grant':
    topic, user = ARGS[:2]
    rf = int(ARGS[2]) if len(ARGS) > 2 else 3
    adm = AdminClient(ck('admin'))   # kept: the futures die with the handle
    fs = adm.create_topics([NewTopic(topic, 1, rf)])
    try:
        fs[topic].result(15)
    except Exception as e:
        check(f'admin creates {topic}', False, repr(e))
    acls = [ACL(principal=f'User:{user}', host='*', operation=op, permission_type=ACLPermissionType.ALLOW,
                resource_pattern=ResourcePattern(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL))
            for op in (ACLOperation.WRITE, ACLOperation.DESCRIBE)]
    r = kp_admin().create_acls(acls)
    check(f'create_acls through {B}: 2 created', len(r['succeeded']) == 2 and not r['failed'], str(r['failed']))
elif STEP == 'count':
    want = int(ARGS[0])
    f = ACLFilter(principal=None, host=None, operation=ACLOperation.ANY, permission_type=ACLPermissionType.ANY,
                  resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))
    n, end = -1, time.time() + 10
    while time.time() < end:
        try:
            n = len(kp_admin().describe_acls(f)[0])
        except Exception:
            n = -1
        if n == want:
            break
        time.sleep(0.3)
    check(f'describe_acls on {B}: {want} bindings', n == want, str(n))
elif STEP == 'produce':
    user, topic = ARGS
    p = Producer(ck(user))
    res = {'ok': 0, 'err': None}

    def cb(err, msg):
        if err:
            res['err'] = err.name()
        else:
            res['ok'] += 1
    for i in range(5):
        p.produce(topic, f'{i}'.encode(), callback=cb)
    p.flush(20)
    check(f'{user} produces to {topic} through {B}', res['ok'] == 5, str(res))
elif STEP == 'create_denied':
    user, topic = ARGS
    adm = AdminClient(ck(user))
    fs = adm.create_topics([NewTopic(topic, 1, 1)])
    try:
        fs[topic].result(15)
        check(f'{user} CreateTopics {topic} refused', False, 'created')
    except Exception as e:
        check(f'{user} CreateTopics {topic} refused (TOPIC_AUTHORIZATION_FAILED)',
              'TOPIC_AUTHORIZATION_FAILED' in repr(e), repr(e))
