#!/usr/bin/env bash
# Transaction benchmark of issue 9 against one skiff node (free loopback
# ports, lib.sh), confluent-kafka (librdkafka), one BENCH_TXN_PARTITIONS-
# partition topic, BENCH_TXN_BYTES-byte values:
#  (a) idempotent produce of BENCH_TXN_MSGS messages (flush at the end);
#  (b) transactional produce of the same count, BENCH_TXN_PER_TXN (100)
#      messages per transaction (begin, produce, commit) — same run, same
#      node; the ratio (b)/(a) is printed;
#  (c) consume the whole topic with read_uncommitted and read_committed
#      (assign, from the start, until every message is read; timed from the
#      first message), each twice, alternating; the better run of each.
# Prints a table, then the raw JSON lines. No timing assertions: exit 0 when
# every phase completed.
# env: SKIFF_BIN_DIR (bin/), BENCH_TXN_MSGS (50000), BENCH_TXN_PER_TXN (100),
#      BENCH_TXN_PARTITIONS (3), BENCH_TXN_BYTES (100)
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
msgs=${BENCH_TXN_MSGS:-50000}
per_txn=${BENCH_TXN_PER_TXN:-100}
parts=${BENCH_TXN_PARTITIONS:-3}
vbytes=${BENCH_TXN_BYTES:-100}
res=$SK_TMP/results.jsonl

sk_start_cluster 1
"$SK_PY" - "$SK_BOOTSTRAP" "$msgs" "$per_txn" "$parts" "$vbytes" > "$res" <<'PY' || sk_fail "benchmark run failed"
import json, sys, time
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
boot, msgs, per_txn, parts, vbytes = sys.argv[1], *map(int, sys.argv[2:6])
adm = AdminClient({'bootstrap.servers': boot})
for f in adm.create_topics([NewTopic('tbench', parts, 1)]).values():
    f.result()
value = b'x' * vbytes

def out(**kw):
    print(json.dumps(kw), flush=True)

p = Producer({'bootstrap.servers': boot, 'enable.idempotence': True, 'linger.ms': 5})
t0 = time.time()
for i in range(msgs):
    while True:
        try:
            p.produce('tbench', value=value, partition=i % parts)
            break
        except BufferError:
            p.poll(0.01)
assert p.flush(120) == 0
dt = time.time() - t0
out(phase='idempotent', messages=msgs, seconds=round(dt, 3), msgs_per_s=round(msgs / dt))

tp = Producer({'bootstrap.servers': boot, 'transactional.id': 'bench-txn', 'linger.ms': 5})
tp.init_transactions(60)
ntx = msgs // per_txn
t0 = time.time()
for t in range(ntx):
    tp.begin_transaction()
    for i in range(per_txn):
        tp.produce('tbench', value=value, partition=(t * per_txn + i) % parts)
    tp.commit_transaction(60)
dt = time.time() - t0
out(phase='transactional', messages=ntx * per_txn, transactions=ntx, seconds=round(dt, 3),
    msgs_per_s=round(ntx * per_txn / dt), txns_per_s=round(ntx / dt, 1))
total = msgs + ntx * per_txn

best = {}
for rnd, iso in enumerate(('read_uncommitted', 'read_committed', 'read_uncommitted', 'read_committed')):
    c = Consumer({'bootstrap.servers': boot, 'group.id': 'bench-%s-%d' % (iso, rnd), 'isolation.level': iso,
                  'enable.auto.commit': False, 'fetch.wait.max.ms': 50})
    c.assign([TopicPartition('tbench', i, 0) for i in range(parts)])
    n = 0
    t0 = None                      # from the first message: connection set-up excluded
    deadline = time.time() + 120
    while n < total and time.time() < deadline:
        for m in c.consume(1000, 0.5):
            if not m.error():
                if t0 is None:
                    t0 = time.time()
                n += 1
    dt = max(time.time() - (t0 or time.time()), 1e-6)
    c.close()
    assert n == total, (iso, n, total)
    if n / dt > best.get(iso, (0,))[0]:
        best[iso] = (n / dt, dt)
for iso in ('read_uncommitted', 'read_committed'):
    out(phase='consume_' + iso, messages=total, seconds=round(best[iso][1], 3), msgs_per_s=round(best[iso][0]))
PY
echo "transactions benchmark (1 node, $parts partitions, ${vbytes}-byte values, $per_txn messages per transaction)"
jq -r '"  \(.phase | . + "                    " | .[0:26]) \(.msgs_per_s) msg/s" + (if .txns_per_s then "  (\(.txns_per_s) txn/s)" else "" end)' "$res"
idem=$(jq -r 'select(.phase == "idempotent") | .msgs_per_s' "$res")
txn=$(jq -r 'select(.phase == "transactional") | .msgs_per_s' "$res")
rc=$(jq -r 'select(.phase == "consume_read_committed") | .msgs_per_s' "$res")
ru=$(jq -r 'select(.phase == "consume_read_uncommitted") | .msgs_per_s' "$res")
awk -v a="$txn" -v b="$idem" 'BEGIN { printf "  transactional / idempotent produce: %.2f\n", a / b }'
awk -v a="$rc" -v b="$ru" 'BEGIN { printf "  read_committed / read_uncommitted consume: %.2f\n", a / b }'
cat "$res"
