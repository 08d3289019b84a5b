#!/usr/bin/python3
"""Log compaction seen by a real client (confluent-kafka / librdkafka).

usage: compact_check.py BOOTSTRAP MODE ARGS...
  codecs CODEC...   per codec a compacted topic "cmp-CODEC": 10 keys x 40
                    values (headers, explicit timestamps), tombstones for 2
                    keys, then after segment.ms one record that rolls the
                    segment. Waits until a consumer from the beginning sees
                    exactly the latest record per key (same offset, value,
                    timestamp, headers), then until the tombstones are gone
                    (delete.retention.ms); the filler record stays.
  txn               a compacted topic with one committed and one aborted
                    transaction: after cleaning, a read_uncommitted consumer
                    sees the committed records and none of the aborted ones.
  create TOPIC K=V...  creates a compacted topic (the settings above, then K=V;
                    replication.factor=N is the topic's replication factor).
  produce TOPIC N [PAD]  N keyed records over 20 keys (values "v<i>" and PAD
                    dots), acks=all; prints "LATEST key offset value" per key
                    (value "-": a tombstone, written for keys 3 and 7 last
                    when CC_TOMBSTONES=1).
  alter TOPIC K=V...  sets the topic's configs to exactly K=V... (AlterConfigs).
  latency TOPIC SECONDS RATE  produce latency at RATE msgs/s (acks=1,
                    linger 0), one JSON line: msgs errors p50_ms p99_ms p999_ms max_ms.
  alter-broker ID K=V...  dynamic broker configs of broker ID (AlterConfigs).
  dump TOPIC        prints "REC key offset value" per record from the start.
  commits TOPIC GROUP N   creates TOPIC, commits offsets 1..N of its
                    partition 0 for GROUP; prints "COMMITTED N".
  committed TOPIC GROUP   prints "COMMITTED <the group's committed offset>".
Prints PASS/FAIL lines (lib.sh's sk_check_lines).
"""
import os
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.dont_write_bytecode = True

boot, mode = sys.argv[1], sys.argv[2]
WAIT_S = 25
KEYS = int(os.environ.get("CC_KEYS", "20"))   # distinct keys of "produce"
TOPIC_CFG = {"cleanup.policy": "compact", "segment.ms": "300", "min.cleanable.dirty.ratio": "0.01",
             "delete.retention.ms": "2000", "min.compaction.lag.ms": "0"}


REPORT_LOCK = threading.Lock()   # codecs reports from one thread per codec


def report(name, why):
    with REPORT_LOCK:
        print(("PASS %s" % name) if why is None else ("FAIL %s: %s" % (name, why)), flush=True)


def create(topic, extra=None):
    cfg = dict(TOPIC_CFG)
    cfg.update(extra or {})
    rf = int(cfg.pop("replication.factor", "1"))
    a = AdminClient({"bootstrap.servers": boot})
    fs = a.create_topics([NewTopic(topic, num_partitions=1, replication_factor=rf, config=cfg)])
    for _, f in fs.items():
        f.result(timeout=20)


def read_all(topic, isolation="read_uncommitted"):
    """Every record from the start to the end: (key, offset, value, ts, headers)."""
    c = Consumer({"bootstrap.servers": boot, "group.id": "chk-%s-%f" % (topic, time.time()),
                  "enable.partition.eof": True, "enable.auto.commit": False,
                  "isolation.level": isolation, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0, -2)])   # OFFSET_BEGINNING
    out = []
    deadline = time.time() + 15
    while time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                break
            raise RuntimeError(str(m.error()))
        out.append((m.key(), m.offset(), m.value(), m.timestamp()[1], tuple(m.headers() or ())))
    c.close()
    return out


def produce_codec(codec):
    """Writes topic cmp-CODEC; returns (topic, records acked, {key: (offset, value, ts, headers)})."""
    topic = "cmp-" + codec
    create(topic)
    p = Producer({"bootstrap.servers": boot, "compression.type": codec, "linger.ms": 5,
                  "batch.num.messages": 7, "acks": "all"})
    latest = {}
    acked = {}

    def cb(err, msg):
        if err is None:
            acked[(msg.key(), msg.value(), msg.timestamp()[1])] = msg.offset()

    base_ts = int(time.time() * 1000) - 100000
    seq = 0
    for rnd in range(40):
        for k in range(10):
            key = b"k%02d" % k
            val = b"%s-v%03d-" % (key, rnd) + b"x" * 50
            ts = base_ts + seq
            hdr = [("round", b"%d" % rnd), ("key", key)]
            p.produce(topic, key=key, value=val, timestamp=ts, headers=hdr, on_delivery=cb)
            latest[key] = (val, ts, tuple(hdr))
            seq += 1
        if rnd % 10 == 9:
            p.flush(10)
            time.sleep(0.35)   # segment.ms passes: the next append rolls
    for k in (3, 7):
        key = b"k%02d" % k
        ts = base_ts + seq
        p.produce(topic, key=key, value=None, timestamp=ts, on_delivery=cb)
        latest[key] = (None, ts, ())
        seq += 1
    p.flush(10)
    time.sleep(0.4)
    ts = base_ts + seq
    p.produce(topic, key=b"zz-filler", value=b"roll", timestamp=ts, on_delivery=cb)
    latest[b"zz-filler"] = (b"roll", ts, ())
    p.flush(10)
    want = {key: (acked.get((key, val, ts)), val, ts, hdr) for key, (val, ts, hdr) in latest.items()}
    return topic, len(acked), want


def matches(want, recs, with_tombstones):
    exp = {k: v for k, v in want.items() if with_tombstones or v[1] is not None}
    got = {}
    for key, off, val, ts, hdr in recs:
        if key in got:
            return "key %r seen twice" % key
        got[key] = (off, val, ts, hdr)
    return None if got == exp else "%d records, %d expected" % (len(recs), len(exp))


def wait_for(pred):
    deadline = time.time() + WAIT_S
    why = "timed out"
    while time.time() < deadline:
        why = pred()
        if why is None:
            return None
        time.sleep(0.3)
    return why


def codecs(names):
    # One thread per codec, each on its own topic with its own producer and
    # consumers: their waits (segment.ms rolls, cleaner passes,
    # delete.retention.ms) overlap instead of adding up; the checks per
    # codec are the same, in the same order.
    failed = []

    def one(codec):
        try:
            topic, total, want = produce_codec(codec)
            report("%s: all %d records acknowledged" % (codec, 40 * 10 + 3), None if total == 403 else "got %d" % total)

            def compacted():
                recs = read_all(topic)
                if matches(want, recs, False) is None:
                    return None   # the tombstones already went
                return matches(want, recs, True)
            report("%s: latest value per key, offsets, timestamps and headers kept after a pass" % codec,
                   wait_for(compacted))
            report("%s: tombstones gone after delete.retention.ms" % codec,
                   wait_for(lambda: matches(want, read_all(topic), False)))
            offs = [r[1] for r in read_all(topic)]
            report("%s: offsets increasing with gaps (never renumbered)" % codec,
                   None if offs == sorted(offs) and offs and offs[-1] == total - 1 else "offsets %s" % offs)
        except Exception as e:  # noqa: BLE001 - one FAIL line per codec
            report("%s: checks ran to the end" % codec, repr(e))
            failed.append(codec)

    threads = [threading.Thread(target=one, args=(codec,)) for codec in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        sys.exit(1)


def txn():
    topic = "cmp-txn"
    # 6 s, not 2: the shell test reads the ABORT marker after this script
    # ends, and a cleaner pass past the horizon may drop it before then
    create(topic, {"delete.retention.ms": "6000"})
    p = Producer({"bootstrap.servers": boot, "transactional.id": "cmp-txn-1", "linger.ms": 1})
    p.init_transactions(20)
    p.begin_transaction()
    for i in range(20):
        p.produce(topic, key=b"c%d" % (i % 4), value=b"committed-%d" % i)
    p.commit_transaction(20)
    time.sleep(0.4)   # the aborted transaction starts a new (active) segment
    p.begin_transaction()
    for i in range(20):
        p.produce(topic, key=b"a%d" % (i % 4), value=b"aborted-%d" % i)
    p.flush(20)   # abort_transaction purges what was not sent yet
    p.abort_transaction(20)
    before = read_all(topic)   # the active segment is never cleaned
    report("txn: aborted records readable read_uncommitted before cleaning",
           None if any(r[0].startswith(b"a") for r in before) else "none seen")
    time.sleep(0.4)
    p.begin_transaction()
    p.produce(topic, key=b"zz-filler", value=b"roll")
    p.commit_transaction(20)
    deadline = time.time() + WAIT_S
    why = "not cleaned"
    while time.time() < deadline:
        recs = read_all(topic)
        keys = sorted(r[0] for r in recs)
        vals = {r[0]: r[2] for r in recs}
        if keys == [b"c0", b"c1", b"c2", b"c3", b"zz-filler"]:
            why = None if all(vals[b"c%d" % k] == b"committed-%d" % (16 + k) for k in range(4)) else "values %r" % vals
            break
        time.sleep(0.5)
    report("txn: aborted data removed, latest committed value per key kept", why)
    recs = read_all(topic, "read_committed")
    report("txn: read_committed consumer agrees",
           None if sorted(r[0] for r in recs) == [b"c0", b"c1", b"c2", b"c3", b"zz-filler"] else "%r" % recs)


def produce(topic, n, pad=0):
    # batches well under the test topics' small segment.bytes
    p = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 5, "batch.size": 16384})
    last = {}
    errors = []

    def cb(err, msg):
        if err is None:
            last[msg.key()] = (msg.offset(), msg.value() if msg.value() is not None else b"-")
        else:
            errors.append(str(err))
    for i in range(n):
        p.produce(topic, key=b"key%02d" % (i % KEYS), value=b"v%d" % i + b"." * pad, on_delivery=cb)
        if i % 500 == 499:
            p.flush(10)
    if os.environ.get("CC_TOMBSTONES") == "1":   # keys 3 and 7 deleted
        for k in (3, 7):
            p.produce(topic, key=b"key%02d" % k, value=None, on_delivery=cb)
    p.flush(20)
    if errors:
        print("FAIL produce: %d errors, first %s" % (len(errors), errors[0]))
    for k in sorted(last):
        print("LATEST %s %d %s" % (k.decode(), last[k][0], last[k][1].decode().rstrip(".")))


def commits(topic, group, n):
    """n offset commits of one group for partition 0 of topic (created here)."""
    a = AdminClient({"bootstrap.servers": boot})
    for _, f in a.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)]).items():
        f.result(timeout=20)
    c = Consumer({"bootstrap.servers": boot, "group.id": group, "enable.auto.commit": False})
    for i in range(1, n + 1):
        c.commit(offsets=[TopicPartition(topic, 0, i)], asynchronous=(i % 200 != 0 and i != n))
    c.close()
    print("COMMITTED %d" % n)


def committed(topic, group):
    c = Consumer({"bootstrap.servers": boot, "group.id": group, "enable.auto.commit": False})
    tp = c.committed([TopicPartition(topic, 0)], timeout=20)
    c.close()
    print("COMMITTED %d" % tp[0].offset)


def alter(topic, kv):
    """Sets the topic's configs to exactly kv (AlterConfigs replaces them)."""
    from confluent_kafka.admin import ConfigResource
    a = AdminClient({"bootstrap.servers": boot})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config=kv)
    for _, f in a.alter_configs([res]).items():
        f.result(timeout=20)


def latency(topic, seconds, rate):
    """Produce latency (produce call -> delivery report, acks=1, linger 0) at a
    fixed rate for `seconds`; prints one JSON line with percentiles in ms."""
    import json
    p = Producer({"bootstrap.servers": boot, "acks": "1", "linger.ms": 0})
    lat = []
    errors = []
    # warm-up, not timed: the first messages of a new producer wait for its
    # metadata and connection (up to ~1 s here), which is not what is measured
    p.produce(topic, value=b"warm-up")
    if p.flush(30) != 0:
        raise SystemExit("warm-up message not delivered")

    def cb(err, msg, t0):
        if err is not None:
            errors.append(str(err))
        else:
            lat.append((time.perf_counter() - t0) * 1000.0)
    n = int(seconds * rate)
    start = time.perf_counter()
    for i in range(n):
        due = start + i / rate
        while True:
            now = time.perf_counter()
            if now >= due:
                break
            p.poll(min(due - now, 0.001))
        t0 = time.perf_counter()
        p.produce(topic, value=b"x" * 100, on_delivery=lambda err, msg, t0=t0: cb(err, msg, t0))
        p.poll(0)
    p.flush(30)
    lat.sort()

    def pct(q):
        return round(lat[min(len(lat) - 1, int(q * len(lat)))], 3) if lat else -1
    print(json.dumps({"msgs": len(lat), "errors": len(errors), "p50_ms": pct(0.5), "p99_ms": pct(0.99),
                      "p999_ms": pct(0.999), "max_ms": round(lat[-1], 3) if lat else -1}))


def alter_broker(broker, kv):
    """Dynamic broker config (AlterConfigs on broker resource BROKER)."""
    from confluent_kafka.admin import ConfigResource
    a = AdminClient({"bootstrap.servers": boot})
    res = ConfigResource(ConfigResource.Type.BROKER, broker, set_config=kv)
    for _, f in a.alter_configs([res]).items():
        f.result(timeout=20)


def dump(topic):
    for key, off, val, _, _ in read_all(topic):
        print("REC %s %d %s" % (key.decode() if key else "-", off, val.decode().rstrip(".") if val else "-"))


try:
    if mode == "codecs":
        codecs(sys.argv[3:])
    elif mode == "txn":
        txn()
    elif mode == "produce":
        produce(sys.argv[3], int(sys.argv[4]), int(sys.argv[5]) if len(sys.argv) > 5 else 0)
    elif mode == "latency":
        latency(sys.argv[3], float(sys.argv[4]), float(sys.argv[5]))
    elif mode == "alter-broker":
        alter_broker(sys.argv[3], dict(kv.split("=", 1) for kv in sys.argv[4:]))
    elif mode == "alter":
        alter(sys.argv[3], dict(kv.split("=", 1) for kv in sys.argv[4:]))
    elif mode == "create":
        create(sys.argv[3], dict(kv.split("=", 1) for kv in sys.argv[4:]))
    elif mode == "commits":
        commits(sys.argv[3], sys.argv[4], int(sys.argv[5]))
    elif mode == "committed":
        committed(sys.argv[3], sys.argv[4])
    elif mode == "dump":
        dump(sys.argv[3])
    else:
        sys.exit("unknown mode " + mode)
except Exception as e:  # noqa: BLE001 - one FAIL line, then the status
    report("%s ran to the end" % mode, repr(e))
    sys.exit(1)
