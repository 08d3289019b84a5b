#!/usr/bin/env python3
"""Merges Kafka's config keys (dumped by KafkaKeys.java) with skiff's key
tables into broker/config/kafka_keys.tsv (written to stdout).

  import_kafka_keys.py NEW.tsv OLD.tsv NEW_VERSION OLD_VERSION

Every key of NEW gets a row. Its status says what skiff does with it:
  dynamic   skiff acts on it and it may change at run time (AlterConfigs)
  static    skiff acts on it; it is read at start-up only
  stored    skiff accepts, validates, stores and describes it; no effect
  obsolete  OLD knew it, NEW dropped it: accepted and ignored
Keys skiff acts on are those of config_keys.h (broker) and config_topic.h
(topic); every topic key skiff keeps is dynamic (a topic override). Run by
import_kafka_keys.sh; the result is committed and edited by hand after
that only through a new import."""
import re
import sys

ROOT = __file__.rsplit('/broker/config/gen/', 1)[0]


def read_dump(path):
    rows = {}
    for line in open(path, encoding='utf-8'):
        f = line.rstrip('\n').split('\t')
        if len(f) < 7:
            continue
        rows[(f[0], f[1])] = dict(name=f[0], scope=f[1], type=f[2], default=f[3],
                                  mode=f[4], valid=f[5], synonym=f[6])
    return rows


def skiff_keys():
    text = open(ROOT + '/broker/config/config_keys.h', encoding='utf-8').read().replace('\\\n', ' ')
    broker = {}
    for m in re.finditer(r'X\((\w+),\s*"([^"]+)",\s*(\w+),\s*(NULL|"[^"]*"|BK_CFG_LMAXS),[^\n]*?(BK_CFG_CF_\w+|0)\)', text):
        line_flags = m.group(0)
        default = {'NULL': None, 'BK_CFG_LMAXS': '9223372036854775807'}.get(m.group(4), m.group(4).strip('"'))
        broker[m.group(2)] = dict(type=m.group(3).lower(), default=default,
                                  dynamic='BK_CFG_CF_DYNAMIC' in line_flags)
    text = open(ROOT + '/broker/config/config_topic.h', encoding='utf-8').read()
    topic = {m.group(2): m.group(3) for m in re.finditer(r'X\((\w+),\s*"([^"]+)",\s*(\w+),', text)}
    return broker, topic


SKIFF_ONLY = {
    'admin.listener': 'skiff only: host:port of the admin HTTP port (empty = disabled)',
    'cluster.id': 'skiff only: the cluster id written to meta.properties (Kafka takes it from the storage format tool)',
    'max.replicas.per.node': 'skiff only: partition replicas this node may host; -1 = derived from the open-file limit (ulimit -n; see broker/README.md): the controller refuses CreateTopics / CreatePartitions beyond it with POLICY_VIOLATION',
}

SECURITY = re.compile(r'(^|\.)(ssl|sasl|security)\.|kerberos|principal|^authorizer|^super\.users|'
                      r'delegation\.token|^password\.encoder|^sasl_|^ssl_')
TIERED = re.compile(r'^remote\.|\.remote\.|^local\.retention|^log\.local\.retention|remote\.log')


def note_for(row, status, new, old):
    n = row['name']
    if status == 'obsolete':
        if n.startswith('zookeeper.') or 'zookeeper' in n:
            return 'ZooKeeper mode, removed in Kafka %s.0' % new.split('.')[0]
        return 'removed in Kafka %s.0' % new.split('.')[0]
    if status != 'stored':
        return ''
    if SECURITY.search(n) or row['type'] == 'password':
        return 'TLS/SASL/ACLs not implemented yet (issue 17)'
    if TIERED.search(n):
        return 'tiered storage not implemented'
    if n.startswith('share.') or '.share.' in n:
        return 'share groups (KIP-932) not implemented'
    if 'quota' in n:
        return 'quotas not implemented'
    return ''


def main():
    new_rows = read_dump(sys.argv[1])
    old_rows = read_dump(sys.argv[2])
    new, old = sys.argv[3], sys.argv[4]
    broker, topic = skiff_keys()
    out = []
    keys = set(new_rows)
    for k, r in old_rows.items():
        if k not in new_rows:
            keys.add(k)
    for name in broker:
        keys.add((name, 'broker'))
    for key in sorted(keys):
        name, scope = key
        r = dict(new_rows.get(key) or old_rows.get(key) or
                 dict(name=name, scope=scope, type=broker[name]['type'],
                      default='\\N' if broker[name]['default'] is None else broker[name]['default'],
                      mode='read-only', valid='', synonym=''))
        if r['default'] == '\\R':
            r['default'] = '\\N'
        notes = []
        if scope == 'broker' and name in broker:
            status = 'dynamic' if broker[name]['dynamic'] else 'static'
            sd = broker[name]['default']
            kd = None if r['default'] == '\\N' else r['default']
            if key not in new_rows and key not in old_rows:
                notes.append(SKIFF_ONLY.get(name, 'skiff only'))
            elif key not in new_rows:
                notes.append('removed in Kafka %s.0; skiff still acts on it' % new.split('.')[0])
            if sd != kd and key in new_rows:
                notes.append('skiff default: %s' % ('none' if sd is None else sd or '(empty)'))
        elif scope == 'topic' and name in topic:
            status = 'dynamic'
            if key not in new_rows:
                notes.append('removed in Kafka %s.0; skiff still acts on it' % new.split('.')[0])
        elif key in new_rows:
            status = 'stored'
        else:
            status = 'obsolete'
        n = note_for(r, status, new, old)
        if n:
            notes.append(n)
        out.append('\t'.join([name, scope, r['type'], r['default'], r['mode'], status,
                              r['valid'], r['synonym'], '; '.join(notes)]))
    print('# Every broker and topic config key of Kafka %s (and those Kafka %s had),' % (new, old))
    print('# with what skiff does with it. Generated by broker/config/gen/import_kafka_keys.sh;')
    print('# read by broker/config/gen/cfgkeys.py (C table + CONFIGURATION.md).')
    print('# Columns: name scope type default(\\N = none) kafka-update-mode status valid synonym note')
    for line in out:
        print(line)


if __name__ == '__main__':
    main()
