#!/usr/bin/env bash
# Every config name of Kafka 4.x is known (broker/config/kafka_keys.tsv):
# through real clients against a real node, IncrementalAlterConfigs (raw v0
# frames: the installed clients predate it) sets EVERY topic and broker key
# of the table to its Kafka default and never gets an "unknown" error
# (stored / obsolete keys and dynamic ones: NO_ERROR; read-only ones: a
# read-only refusal); legacy AlterConfigs with every topic key at once;
# librdkafka's own admin-test settings through confluent-kafka (topic
# message.format.version, broker sasl.kerberos.min.time.before.relogin)
# give NO_ERROR; DescribeConfigs (kafka-python) shows every key with its
# value, kept across a restart; an unknown name is still refused
# (INVALID_CONFIG, Kafka's "Unknown topic config name"); the config file
# takes a stored key and still gives the line-numbered error for an unknown
# one and logs each stored key it sets as having no effect; `skiff
# --describe-config [KEY]` prints the table.
. "$(dirname "$0")/lib.sh"

TSV=$SK_ROOT/broker/config/kafka_keys.tsv

# --- the command line ------------------------------------------------------------
out=$("$SK_BIN/skiff" --describe-config message.format.version 2>&1)
echo "$out"
sk_check "describe_config_key" grep -q "^message.format.version (topic config)" <<<"$out"
sk_check "describe_config_default" grep -q "default: *3.0-IV1" <<<"$out"
sk_check "describe_config_status" grep -q "status: *obsolete" <<<"$out"
out=$("$SK_BIN/skiff" --describe-config=sasl.kerberos.min.time.before.relogin 2>&1)
sk_check "describe_config_stored" grep -q "stored only (no effect in skiff)" <<<"$out"
n_all=$("$SK_BIN/skiff" --describe-config | wc -l)
n_tsv=$(grep -vc '^#' "$TSV")
sk_check "describe_config_all ($n_all lines, $n_tsv keys)" test "$n_all" -eq "$n_tsv"
"$SK_BIN/skiff" --describe-config no.such.key > "$SK_TMP/dc.out" 2>&1
rc=$?
sk_check "describe_config_unknown_exit_2" test "$rc" -eq 2
sk_check "describe_config_unknown_msg" grep -q "unknown config key 'no.such.key'" "$SK_TMP/dc.out"

# --- the config file ---------------------------------------------------------------
sk_write_cluster_conf 1
cp "$SK_TMP/cluster.conf" "$SK_TMP/bad.conf"
echo "no.such.key=1" >> "$SK_TMP/bad.conf"
line=$(wc -l < "$SK_TMP/bad.conf")
"$SK_BIN/skiff" --config "$SK_TMP/bad.conf" --node 1 > "$SK_TMP/bad.out" 2>&1
rc=$?
cat "$SK_TMP/bad.out"
sk_check "file_unknown_key_exit_2" test "$rc" -eq 2
sk_check "file_unknown_key_line" grep -q "bad.conf:$line: unknown key 'no.such.key'" "$SK_TMP/bad.out"
# stored keys in the file (top level, before any [node.N] section)
{ echo "add.partitions.to.txn.retry.backoff.ms=25"; echo "zookeeper.connect=zk:2181"; cat "$SK_TMP/cluster.conf"; } > "$SK_TMP/c2.conf"
mv "$SK_TMP/c2.conf" "$SK_TMP/cluster.conf"
sk_start_node 1
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node 1 not up"
B=127.0.0.1:${SK_KAFKA_PORT[1]}
# a stored key set in the file is logged at start-up as having no effect
sk_check "file_stored_key_logged" grep -q "config key add.partitions.to.txn.retry.backoff.ms=25 is accepted but has no effect: stored only" "$SK_TMP/node-1.log"
sk_check "file_obsolete_key_logged" grep -q "config key zookeeper.connect=zk:2181 is accepted but has no effect: obsolete" "$SK_TMP/node-1.log"

py() {
"$SK_PY" - "$B" "$TSV" "$1" <<'PY'
import socket, struct, sys, time
from kafka import KafkaAdminClient
from kafka.admin import NewTopic, ConfigResource, ConfigResourceType as T
b, tsv, phase = sys.argv[1], sys.argv[2], sys.argv[3]
rows = []
for line in open(tsv):
    if line.startswith('#'):
        continue
    f = line.rstrip('\n').split('\t')
    rows.append(dict(name=f[0], scope=f[1], type=f[2], default=None if f[3] == '\\N' else f[3],
                     mode=f[4], status=f[5]))
def check(name, cond, info=""):
    print(name, "ok" if cond else "FAIL %r" % (info,))

def value_of(r):
    """Kafka's default; for keys without one, a harmless value of the type
    (a week for the log.roll.ms / log.retention.ms kind)."""
    if r['default'] is not None:
        return r['default']
    return {'int': '1000', 'short': '1', 'long': '604800000', 'double': '0.5',
            'boolean': 'false'}.get(r['type'], '')

def s16(s):
    if s is None:
        return struct.pack('>h', -1)
    e = s.encode()
    return struct.pack('>h', len(e)) + e

class Raw:
    def __init__(self, addr):
        h, p = addr.split(':')
        self.s = socket.create_connection((h, int(p)), timeout=30)
        self.corr = 0
    def call(self, api, ver, body):
        self.corr += 1
        hdr = struct.pack('>hhi', api, ver, self.corr) + s16('t')
        msg = hdr + body
        self.s.sendall(struct.pack('>i', len(msg)) + msg)
        n = struct.unpack('>i', self.recv(4))[0]
        d = self.recv(n)
        assert struct.unpack('>i', d[:4])[0] == self.corr
        return d[4:]
    def recv(self, n):
        out = b''
        while len(out) < n:
            c = self.s.recv(n - len(out))
            if not c:
                raise EOFError
            out += c
        return out

def incremental(raw, rtype, rname, changes, validate_only=False):
    """IncrementalAlterConfigs v0; changes: [(name, op, value)] -> (err, msg)."""
    body = struct.pack('>i', 1) + struct.pack('>b', rtype) + s16(rname) + struct.pack('>i', len(changes))
    for name, op, value in changes:
        body += s16(name) + struct.pack('>b', op) + s16(value)
    body += struct.pack('>?', validate_only)
    d = raw.call(44, 0, body)
    pos = 4                                               # throttle
    assert struct.unpack('>i', d[pos:pos + 4])[0] == 1; pos += 4
    err = struct.unpack('>h', d[pos:pos + 2])[0]; pos += 2
    l = struct.unpack('>h', d[pos:pos + 2])[0]; pos += 2
    msg = d[pos:pos + l].decode() if l >= 0 else None
    return err, msg

a = KafkaAdminClient(bootstrap_servers=b)
def describe(kind, name):
    r = a.describe_configs([ConfigResource(kind, name)])[0].resources[0]
    return r[0], {e[0]: dict(value=e[1], read_only=e[2], source=e[3], sensitive=e[4]) for e in r[4]}

if phase == "1":
    a.create_topics([NewTopic("ck", 1, 1)])
    time.sleep(0.5)
    raw = Raw(b)
    # --- every topic key, one IncrementalAlterConfigs SET each --------------------
    bad = []
    for r in rows:
        if r['scope'] != 'topic':
            continue
        err, msg = incremental(raw, 2, "ck", [(r['name'], 0, value_of(r))])
        if err != 0:
            bad.append((r['name'], err, msg))
    check("incremental_every_topic_key", not bad, bad)
    # --- every broker key: NO_ERROR unless read-only; never "unknown" --------------
    bad = []
    nok = nro = 0
    for r in rows:
        if r['scope'] != 'broker':
            continue
        err, msg = incremental(raw, 4, "1", [(r['name'], 0, value_of(r))])
        writable = (r['status'] == 'dynamic' or
                    (r['status'] in ('stored', 'obsolete') and r['mode'] != 'read-only'))
        if writable and err == 0:
            nok += 1
        elif not writable and err == 40 and msg and 'unknown' not in msg.lower() and \
                ('restart' in msg or 'read-only' in msg):
            nro += 1
        else:
            bad.append((r['name'], r['status'], r['mode'], err, msg))
    print("broker keys: %d set, %d refused as read-only" % (nok, nro))
    check("incremental_every_broker_key", not bad and nok > 50 and nro > 50, bad)
    # cluster-wide stored keys at the cluster default (resource name "")
    cw = [r for r in rows if r['scope'] == 'broker' and r['status'] == 'stored' and r['mode'] == 'cluster-wide']
    bad = [(r['name'],) + incremental(raw, 4, "", [(r['name'], 0, value_of(r))]) for r in cw]
    check("incremental_cluster_default", all(x[1] == 0 for x in bad), [x for x in bad if x[1] != 0])
    err, msg = incremental(raw, 4, "", [("sasl.kerberos.min.time.before.relogin", 0, "58000")])
    check("per_broker_key_not_at_cluster_default", err == 40 and "one broker" in (msg or ""), (err, msg))
    # --- unknown names are still refused -------------------------------------------
    err, msg = incremental(raw, 2, "ck", [("no.such.key", 0, "1")])
    check("topic_unknown_refused", err == 40 and msg == "Unknown topic config name: no.such.key", (err, msg))
    err, msg = incremental(raw, 2, "ck", [("no.such.key", 1, None)])
    check("topic_unknown_delete_refused", err == 40, (err, msg))
    err, msg = incremental(raw, 4, "1", [("no.such.key", 0, "1")])
    check("broker_unknown_refused", err == 40 and "unknown" in (msg or ""), (err, msg))
    err, msg = incremental(raw, 2, "ck", [("compression.zstd.level", 0, "99")])
    check("stored_key_range_checked", err == 40 and "compression.zstd.level" in (msg or ""), (err, msg))
    # --- legacy AlterConfigs with every topic key at once (kafka-python) -----------
    allt = {r['name']: value_of(r) for r in rows if r['scope'] == 'topic'}
    allt['message.format.version'] = '0.10.0-IV1'
    r = a.alter_configs([ConfigResource(T.TOPIC, "ck", allt)]).resources[0]
    check("legacy_alter_every_topic_key", r[0] == 0, r)
    # --- librdkafka's admin test, through librdkafka (confluent-kafka) ------------
    from confluent_kafka.admin import AdminClient, ConfigResource as CR
    ca = AdminClient({'bootstrap.servers': b})
    fs = ca.alter_configs([CR('topic', 'ck', set_config={'compression.type': 'gzip', 'flush.ms': '12345678',
                                                         'message.format.version': '2.0'}),
                           CR('broker', '1', set_config={'sasl.kerberos.min.time.before.relogin': '58000'})])
    res = {}
    for k, f in fs.items():
        try:
            f.result(timeout=20); res[k.name] = 0
        except Exception as e:
            res[k.name] = str(e)
    check("librdkafka_topic_message_format_version", res.get('ck') == 0, res)
    check("librdkafka_broker_sasl_kerberos", res.get('1') == 0, res)

# --- DescribeConfigs (both phases; phase 2 runs after a restart) --------------------
err, tc = describe(T.TOPIC, "ck")
# obsolete keys are listed once set (message.format.version is)
want_t = [r['name'] for r in rows if r['scope'] == 'topic' and r['status'] != 'obsolete'] + ['message.format.version']
check("describe_topic_every_key", err == 0 and all(n in tc for n in want_t), [n for n in want_t if n not in tc])
m = tc.get('message.format.version', {})
check("describe_message_format_version", m.get('value') == '2.0' and m.get('source') == 1, m)
m = tc.get('flush.ms', {})
check("describe_topic_acted_value", m.get('value') == '12345678', m)
err, bc = describe(T.BROKER, "1")
want_b = [r['name'] for r in rows if r['scope'] == 'broker' and r['status'] != 'obsolete']
check("describe_broker_every_key", err == 0 and all(n in bc for n in want_b), [n for n in want_b if n not in bc])
m = bc.get('sasl.kerberos.min.time.before.relogin', {})
check("describe_sasl_kerberos", m.get('value') == '58000' and m.get('source') == 2 and not m.get('read_only'), m)
m = bc.get('add.partitions.to.txn.retry.backoff.ms', {})
check("describe_file_stored_key", m.get('value') == '25' and m.get('source') == 4 and m.get('read_only'), m)
m = bc.get('zookeeper.connect', {})
check("describe_file_obsolete_key", m.get('value') == 'zk:2181' and m.get('read_only'), m)
m = bc.get('broker.id', {})
check("describe_read_only_flag", m.get('read_only') is True, m)
m = bc.get('ssl.keystore.password', {})
check("describe_password_hidden", m.get('sensitive') is True and m.get('value') is None, m)
PY
}
py 1 > "$SK_TMP/ck.out" 2>&1
sk_stop_node 1
sk_start_node 1
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "restart"
py 2 > "$SK_TMP/ck2.out" 2>&1
cat "$SK_TMP/ck.out" "$SK_TMP/ck2.out"
for what in incremental_every_topic_key incremental_every_broker_key incremental_cluster_default \
    per_broker_key_not_at_cluster_default topic_unknown_refused topic_unknown_delete_refused \
    broker_unknown_refused stored_key_range_checked legacy_alter_every_topic_key \
    librdkafka_topic_message_format_version librdkafka_broker_sasl_kerberos; do
  sk_check "$what" grep -q "^$what ok" "$SK_TMP/ck.out"
done
for what in describe_topic_every_key describe_message_format_version describe_topic_acted_value \
    describe_broker_every_key describe_sasl_kerberos describe_file_stored_key describe_file_obsolete_key \
    describe_read_only_flag describe_password_hidden; do
  sk_check "$what" grep -q "^$what ok" "$SK_TMP/ck.out"
  sk_check "$what (after restart)" grep -q "^$what ok" "$SK_TMP/ck2.out"
done
sk_stop_node 1
sk_summary t_config_keys
