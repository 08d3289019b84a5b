"""Loads N ACL bindings (literal WRITE on distinct topics for distinct users,
plus prefixed and DENY ones for variety) through CreateAcls (kafka-python),
then the grants the bench user needs. Used by run-acl-bench.sh."""
import sys

from kafka.admin import (ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient,
                         ResourcePattern, ResourceType)

b, n, user, topic = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
a = KafkaAdminClient(bootstrap_servers=b, security_protocol='SASL_PLAINTEXT', sasl_mechanism='PLAIN',
                     sasl_plain_username='admin', sasl_plain_password='admin-secret', request_timeout_ms=60000)


def acl(p, op, rt, name, pat=ACLResourcePatternType.LITERAL, perm=ACLPermissionType.ALLOW):
    return ACL(principal=p, host='*', operation=op, permission_type=perm, resource_pattern=ResourcePattern(rt, name, pat))


made = 0
batch = []
for i in range(n):
    kind = i % 10
    if kind == 8:
        batch.append(acl(f'User:u{i}', ACLOperation.READ, ResourceType.TOPIC, f'pre-{i}-', ACLResourcePatternType.PREFIXED))
    elif kind == 9:
        batch.append(acl(f'User:u{i}', ACLOperation.WRITE, ResourceType.TOPIC, f'bench-{i}', perm=ACLPermissionType.DENY))
    else:
        batch.append(acl(f'User:u{i}', ACLOperation.WRITE, ResourceType.TOPIC, f'bench-{i}'))
    if len(batch) == 1000:
        r = a.create_acls(batch)
        made += len(r['succeeded'])
        batch = []
if batch:
    made += len(a.create_acls(batch)['succeeded'])
r = a.create_acls([acl(f'User:{user}', ACLOperation.WRITE, ResourceType.TOPIC, 'acl-bench', ACLResourcePatternType.PREFIXED),
                   acl(f'User:{user}', ACLOperation.DESCRIBE, ResourceType.TOPIC, 'acl-bench', ACLResourcePatternType.PREFIXED)])
made += len(r['succeeded'])
print(made)
