#!/usr/bin/env bash
# Group consumers of other clients against one skiff node: kafka-python
# with manual commits (and its admin: group offsets, describe, delete);
# kafkajs (test/js, `npm ci` there first; skipped with a notice when
# absent); librdkafka static membership (group.instance.id): a member that
# restarts within the session timeout gets its partitions back with no
# rebalance of the others.
. "$(dirname "$0")/lib.sh"

"$SK_PY" -c 'import kafka, confluent_kafka' 2>/dev/null || { echo "t_groups_clients: python clients missing"; exit 1; }
sk_start_cluster 1 --set group.min.session.timeout.ms=1000 --set group.initial.rebalance.delay.ms=0 \
  --set offsets.topic.num.partitions=3
B=127.0.0.1:${SK_KAFKA_PORT[1]}

cat > "$SK_TMP/c.py" <<'PY'
import sys, time
B, MODE = sys.argv[1], sys.argv[2]
fails = 0
def check(what, ok, detail=""):
    global fails
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else "  " + str(detail)), flush=True)
    if not ok: fails += 1

if MODE == 'setup':
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({'bootstrap.servers': B})
    a.create_topics([NewTopic('t4', 4, 1)])['t4'].result()
    p = Producer({'bootstrap.servers': B})
    for i in range(40): p.produce('t4', value=b'v%d' % i, partition=i % 4)
    check("produced 40 messages", p.flush(10) == 0)

if MODE == 'kafka-python':
    from kafka import KafkaConsumer, TopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.structs import OffsetAndMetadata
    kw = dict(bootstrap_servers=B, group_id='gkp', enable_auto_commit=False, auto_offset_reset='earliest',
              session_timeout_ms=3000, heartbeat_interval_ms=300, consumer_timeout_ms=15000)
    c = KafkaConsumer('t4', **kw)
    seen = {}
    for msg in c:
        seen[msg.partition] = seen.get(msg.partition, 0) + 1
        if sum(seen.values()) == 40: break
    check("kafka-python group consumer reads all 40", sum(seen.values()) == 40, seen)
    c.commit({TopicPartition('t4', p): OffsetAndMetadata(7, 'kp') for p in range(4)})
    c.close()
    c = KafkaConsumer(**kw)
    got = [c.committed(TopicPartition('t4', p)) for p in range(4)]
    check("manual commits read back by a new consumer", got == [7] * 4, got)
    c.close()
    a = KafkaAdminClient(bootstrap_servers=B)
    offs = a.list_consumer_group_offsets('gkp')
    check("admin: group offsets", {tp.partition: om.offset for tp, om in offs.items()} == {p: 7 for p in range(4)}, offs)
    d = a.describe_consumer_groups(['gkp'])[0]
    check("admin: describe shows Empty after close", d.state == 'Empty', d)
    res = a.delete_consumer_groups(['gkp'])
    check("admin: delete group", res == [('gkp', None)] or all(e is None or getattr(e, 'errno', 1) == 0 for _, e in res), res)

if MODE == 'static':
    from confluent_kafka import Consumer
    class Member:
        def __init__(self, inst):
            self.c = Consumer({'bootstrap.servers': B, 'group.id': 'gstatic', 'group.instance.id': inst,
                               'session.timeout.ms': 6000, 'heartbeat.interval.ms': 300,
                               'auto.offset.reset': 'earliest'})
            self.parts, self.assigns, self.revokes = set(), 0, 0
            self.c.subscribe(['t4'], on_assign=self.on_assign, on_revoke=self.on_revoke)
        def on_assign(self, c, ps): self.assigns += 1; self.parts = {p.partition for p in ps}
        def on_revoke(self, c, ps): self.revokes += 1; self.parts = set()
    def poll_until(ms, cond, limit):
        t0 = time.time()
        while time.time() - t0 < limit:
            for m in ms: m.c.poll(0.05)
            if cond(): return True
        return False
    a, b = Member('ia'), Member('ib')
    ok = poll_until([a, b], lambda: a.parts and b.parts and len(a.parts | b.parts) == 4, 30)
    check("two static members share 4 partitions", ok, (a.parts, b.parts))
    a_parts, b_assigns, b_revokes = set(a.parts), b.assigns, b.revokes
    a.c.close()                         # a static member does not leave the group
    a2 = Member('ia')
    ok = poll_until([a2, b], lambda: a2.parts == a_parts, 10)
    poll_until([a2, b], lambda: False, 1.5)     # time for a rebalance, if any, to show
    check("restarted static member gets its partitions back", ok, (a_parts, a2.parts))
    check("... without a rebalance of the other member", b.assigns == b_assigns and b.revokes == b_revokes,
          (b_assigns, b.assigns, b_revokes, b.revokes))
    a2.c.close(); b.c.close()
sys.exit(1 if fails else 0)
PY

cat > "$SK_TMP/c.js" <<'JS'
const { Kafka, logLevel } = require('kafkajs')
const kafka = new Kafka({ brokers: [process.argv[2]], clientId: 'skiff-test', logLevel: logLevel.NOTHING })
const main = async () => {
  const consumer = kafka.consumer({ groupId: 'gjs', sessionTimeout: 6000, heartbeatInterval: 300 })
  await consumer.connect()
  await consumer.subscribe({ topic: 't4', fromBeginning: true })
  let n = 0
  const done = new Promise((resolve) => {
    consumer.run({ eachMessage: async () => { if (++n === 40) resolve() } })
  })
  await Promise.race([done, new Promise((_, rej) => setTimeout(() => rej(new Error('timeout, got ' + n)), 30000).unref())])
  await consumer.commitOffsets([0, 1, 2, 3].map((p) => ({ topic: 't4', partition: p, offset: '10' })))
  await consumer.disconnect()
  const admin = kafka.admin()
  await admin.connect()
  const offs = await admin.fetchOffsets({ groupId: 'gjs', topics: ['t4'] })
  const got = offs[0].partitions.map((p) => p.partition + ':' + p.offset).sort().join(',')
  await admin.disconnect()
  if (n !== 40 || got !== '0:10,1:10,2:10,3:10') throw new Error('consumed ' + n + ', committed ' + got)
  console.log('ok   kafkajs group consumer read 40 and committed 10 per partition')
}
main().catch((e) => { console.log('FAIL kafkajs: ' + e.message); process.exit(1) })
JS

py() { local t0=$SECONDS rc; timeout 90 "$SK_PY" "$SK_TMP/c.py" "$B" "$@"; rc=$?; sk_log "$1: $((SECONDS - t0)) s"; return $rc; }
sk_check "setup" py setup
sk_check "kafka-python group consumer with manual commits" py kafka-python
sk_check "static membership restart without rebalance" py static
JS_MODULES=$SK_ROOT/test/js/node_modules
if [ -d "$JS_MODULES/kafkajs" ] && command -v node >/dev/null; then
  sk_check "kafkajs group consumer" env NODE_PATH="$JS_MODULES" timeout 60 node "$SK_TMP/c.js" "$B"
else
  echo "SKIP kafkajs: run 'npm ci' in test/js"
fi
[ "$SK_FAILS" -eq 0 ] || sk_dump_logs
sk_summary t_groups_clients
