#!/usr/bin/python3
"""kafka-python 2.0.2 against one node: admin (topics, configs), producer,
consumer with seek / seek_to_beginning / offsets_for_times.

usage: kafka_python_check.py BOOT
Prints "PASS what" / "FAIL what: why" per check; exit 1 on any failure.
Expected values come from what this script sent, never from the broker.
"""
import signal
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.errors import (InvalidPartitionsError, InvalidReplicationFactorError,
                          InvalidTopicError, MessageSizeTooLargeError, TopicAlreadyExistsError,
                          UnknownTopicOrPartitionError)

BOOT = sys.argv[1]
N = 3000
PARTS = 3
BASE_TS = 1_600_000_000_000
CHECK_TIMEOUT_S = 30   # kafka-python can wait forever on a closed request
failures = []


class CheckTimeout(Exception):
    pass


def on_alarm(*_):
    raise CheckTimeout("no result within %d s" % CHECK_TIMEOUT_S)


signal.signal(signal.SIGALRM, on_alarm)


def check(name, fn):
    signal.alarm(CHECK_TIMEOUT_S)
    try:
        why = fn()
    except Exception as e:  # an exception is a failed check, not a crash
        why = "%s: %s" % (type(e).__name__, str(e)[:300])
    finally:
        signal.alarm(0)
    print(("PASS %s" % name) if why is None else ("FAIL %s: %s" % (name, why)), flush=True)
    if why is not None:
        failures.append(name)


def expect_raise(exc, fn):
    try:
        fn()
    except exc:
        return None
    except Exception as e:
        return "raised %s: %s, want %s" % (type(e).__name__, str(e)[:200], exc.__name__)
    return "no error, want %s" % exc.__name__


def wait_until(pred, timeout_s=10):
    end = time.time() + timeout_s
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.2)
    return pred()


admin = KafkaAdminClient(bootstrap_servers=BOOT, request_timeout_ms=15000, client_id="kp-check")

check("create topics kp-a (3 partitions, retention.ms) and kp-b", lambda: (
    admin.create_topics([NewTopic("kp-a", PARTS, 1, topic_configs={"retention.ms": "3600000"}),
                         NewTopic("kp-b", 1, 1)]) and None))
check("create existing topic -> TopicAlreadyExists",
      lambda: expect_raise(TopicAlreadyExistsError, lambda: admin.create_topics([NewTopic("kp-a", 1, 1)])))
check("create bad name -> InvalidTopic",
      lambda: expect_raise(InvalidTopicError, lambda: admin.create_topics([NewTopic("bad name!", 1, 1)])))
check("create 0 partitions -> InvalidPartitions",
      lambda: expect_raise(InvalidPartitionsError, lambda: admin.create_topics([NewTopic("kp-zero", 0, 1)])))
check("create replication 3 on one node -> InvalidReplicationFactor",
      lambda: expect_raise(InvalidReplicationFactorError, lambda: admin.create_topics([NewTopic("kp-rf3", 1, 3)])))
check("validate_only creates nothing", lambda: (
    admin.create_topics([NewTopic("kp-dry", 1, 1)], validate_only=True) and None) or (
    "kp-dry exists after validate_only" if "kp-dry" in admin.list_topics() else None))
check("list_topics has kp-a and kp-b",
      lambda: None if {"kp-a", "kp-b"} <= set(admin.list_topics()) else "got %r" % admin.list_topics())


def describe_a():
    d = [t for t in admin.describe_topics(["kp-a"]) if t["topic"] == "kp-a"]
    if not d or d[0]["error_code"] != 0:
        return "describe gave %r" % d
    ps = sorted(p["partition"] for p in d[0]["partitions"])
    leaders = {p["leader"] for p in d[0]["partitions"]}
    if ps != list(range(PARTS)) or leaders != {1}:
        return "partitions %r leaders %r" % (ps, leaders)
    return None


check("describe_topics kp-a: 3 partitions led by node 1", describe_a)


def topic_config(name, key):
    res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
    for r in res:
        for (_err, _msg, _rtype, rname, entries) in r.resources:
            for e in entries:
                if rname == name and e[0] == key:
                    return e[1]
    return None


check("describe_configs kp-a retention.ms = 3600000",
      lambda: None if topic_config("kp-a", "retention.ms") == "3600000"
      else "got %r" % topic_config("kp-a", "retention.ms"))
check("describe_configs kp-b has cleanup.policy delete",
      lambda: None if topic_config("kp-b", "cleanup.policy") == "delete"
      else "got %r" % topic_config("kp-b", "cleanup.policy"))


def alter():
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-a",
                                        configs={"retention.ms": "7200000"})])
    got = topic_config("kp-a", "retention.ms")
    return None if got == "7200000" else "after alter got %r" % got


check("alter_configs kp-a retention.ms -> 7200000 visible at once", alter)


def broker_configs():
    res = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")])
    names = {e[0] for r in res for rr in r.resources for e in rr[4]}
    missing = {"num.partitions", "log.retention.hours", "message.max.bytes"} - names
    return None if not missing else "missing %r of %d keys" % (missing, len(names))


check("describe_configs broker 1 lists broker keys", broker_configs)
check("create_partitions kp-b 1 -> 2", lambda: (
    admin.create_partitions({"kp-b": NewPartitions(2)}) and None) or (
    None if wait_until(lambda: len([p for t in admin.describe_topics(["kp-b"]) for p in t["partitions"]]) == 2)
    else "kp-b still has %r" % admin.describe_topics(["kp-b"])))
check("delete_topics kp-b", lambda: admin.delete_topics(["kp-b"]) and None)
check("kp-b gone from list_topics",
      lambda: None if wait_until(lambda: "kp-b" not in admin.list_topics()) else "still listed")
check("delete unknown topic -> UnknownTopicOrPartition",
      lambda: expect_raise(UnknownTopicOrPartitionError, lambda: admin.delete_topics(["kp-never"])))

# --- producer -------------------------------------------------------------
sent = []   # (partition, offset, key, value, headers, timestamp)


def produce():
    p = KafkaProducer(bootstrap_servers=BOOT, acks="all", compression_type="gzip",
                      linger_ms=5, request_timeout_ms=15000)
    futs = []
    for i in range(N):
        part, key, val = i % PARTS, b"key-%d" % i, (b"value-%d-" % i) * (1 + i % 7)
        hdrs = [("seq", b"%d" % i), ("empty", b"")]
        ts = BASE_TS + i * 1000
        futs.append((part, key, val, hdrs, ts,
                     p.send("kp-a", key=key, value=val, headers=hdrs, partition=part, timestamp_ms=ts)))
    p.flush(30)
    for part, key, val, hdrs, ts, f in futs:
        md = f.get(timeout=30)
        if md.partition != part:
            return "message went to partition %d, want %d" % (md.partition, part)
        sent.append((part, md.offset, key, val, hdrs, ts))
    p.close()
    per = {q: [s[1] for s in sent if s[0] == q] for q in range(PARTS)}
    for q, offs in per.items():
        if offs != list(range(len(offs))):
            return "partition %d offsets %r... not 0..n-1" % (q, offs[:5])
    return None


check("producer: %d gzip messages with headers and timestamps acknowledged" % N, produce)

# --- consumer ---------------------------------------------------------------
tps = [TopicPartition("kp-a", q) for q in range(PARTS)]
cons = KafkaConsumer(bootstrap_servers=BOOT, group_id=None, enable_auto_commit=False,
                     request_timeout_ms=15000, consumer_timeout_ms=3000)
cons.assign(tps)


def drain(limit=None):
    got = []
    end = time.time() + 20
    while time.time() < end and (limit is None or len(got) < limit):
        batch = cons.poll(timeout_ms=500, max_records=limit - len(got) if limit else 500)
        if not batch and limit is None and got:
            break
        for _tp, recs in batch.items():
            got.extend(recs)
    return got


def as_tuple(r):
    return (r.partition, r.offset, r.key, r.value, [(k, v) for k, v in r.headers], r.timestamp)


def same_as_sent(got, want):
    g = sorted(as_tuple(r) for r in got)
    w = sorted(want)
    if g == w:
        return None
    if len(g) != len(w):
        return "%d records, want %d" % (len(g), len(w))
    first = next(i for i in range(len(g)) if g[i] != w[i])
    return "first difference: got %r want %r" % (g[first], w[first])


def from_beginning():
    cons.seek_to_beginning()
    return same_as_sent(drain(), sent)


check("seek_to_beginning: every record equal (key, value, headers, timestamp, offset)", from_beginning)


def control():
    cons.seek_to_beginning()
    got = drain()
    bad = list(sent)
    bad[17] = bad[17][:3] + (bad[17][3] + b"x",) + bad[17][4:]
    return None if same_as_sent(got, bad) is not None else "a changed value went unnoticed"


check("control: comparison notices one changed value", control)


def seek_offset():
    tp = tps[1]
    cons.seek(tp, 100)
    cons.pause(tps[0], tps[2])
    got = drain(limit=50)
    cons.resume(tps[0], tps[2])
    want = [s for s in sent if s[0] == 1 and 100 <= s[1] < 150]
    return same_as_sent(got[:50], want)


check("seek(partition 1, 100): next 50 records are offsets 100..149", seek_offset)


def by_time():
    tp = tps[2]
    target = BASE_TS + 1500 * 1000 + 1       # just after message 1500's stamp
    got = cons.offsets_for_times({tp: target})[tp]
    want = min(s[1] for s in sent if s[0] == 2 and s[5] >= target)
    want_ts = min(s[5] for s in sent if s[0] == 2 and s[5] >= target)
    if got is None or (got.offset, got.timestamp) != (want, want_ts):
        return "got %r, want offset %d timestamp %d" % (got, want, want_ts)
    late = cons.offsets_for_times({tp: BASE_TS + N * 1000 * 10})[tp]
    if late is not None:
        return "timestamp after the end gave %r, want None" % (late,)
    cons.seek(tp, got.offset)
    cons.pause(tps[0], tps[1])
    first = drain(limit=1)
    cons.resume(tps[0], tps[1])
    if not first or first[0].timestamp != want_ts:
        return "record at that offset has %r" % (first and as_tuple(first[0]))
    return None


check("offsets_for_times finds the first record at/after a time", by_time)


def watermarks():
    b = cons.beginning_offsets(tps)
    e = cons.end_offsets(tps)
    for q in range(PARTS):
        n = len([s for s in sent if s[0] == q])
        if b[tps[q]] != 0 or e[tps[q]] != n:
            return "partition %d: [%d, %d), want [0, %d)" % (q, b[tps[q]], e[tps[q]], n)
    return None


check("beginning_offsets / end_offsets", watermarks)


def at_end():
    # Polling for silence would have to wait out the whole drain bound (20 s)
    # to pass. Instead: resolve the end positions, then write one marker per
    # partition; the first records read must be exactly those markers at the
    # old ends, so any record from before the end shows up ahead of them.
    ends = cons.end_offsets(tps)
    cons.seek_to_end()
    pos = {tp: cons.position(tp) for tp in tps}
    if pos != ends:
        return "positions after seek_to_end %r, want the ends %r" % (pos, ends)
    p = KafkaProducer(bootstrap_servers=BOOT, acks="all", request_timeout_ms=15000)
    for q in range(PARTS):
        p.send("kp-a", value=b"after-end-%d" % q, partition=q).get(timeout=15)
    p.close()
    got = sorted((r.partition, r.offset, r.value) for r in drain(limit=PARTS))
    want = [(q, ends[tps[q]], b"after-end-%d" % q) for q in range(PARTS)]
    return None if got == want else "after seek_to_end read %r, want only the markers %r" % (got, want)


check("seek_to_end: nothing more (next records are markers written after it)", at_end)
cons.close()

# --- old formats: legacy message sets in, down-converted fetches out ----------
OLD = [((0, 10, 1), "gzip", True), ((0, 9), "snappy", False)]   # magic 1, magic 0
old_sent = []   # (offset, key, value, timestamp or None)


def produce_old():
    admin.create_topics([NewTopic("kp-old", 1, 1)])
    for ver, codec, has_ts in OLD:
        p = KafkaProducer(bootstrap_servers=BOOT, api_version=ver, compression_type=codec,
                          acks=1, linger_ms=5, request_timeout_ms=15000)
        futs = []
        for i in range(300):
            key, val = b"old-%s-%d" % (codec.encode(), i), (b"legacy-%d-" % i) * (1 + i % 5)
            ts = BASE_TS + i if has_ts else None
            futs.append((key, val, ts, p.send("kp-old", key=key, value=val, partition=0, timestamp_ms=ts)))
        p.flush(30)
        for key, val, ts, f in futs:
            old_sent.append((f.get(timeout=30).offset, key, val, ts))
        p.close()
    offs = [s[0] for s in old_sent]
    return None if offs == list(range(600)) else "offsets %r..." % offs[:5]


check("legacy producers (magic 1 gzip, magic 0 snappy): 600 acknowledged at 0..599", produce_old)


def read_old(ver):
    c = KafkaConsumer(bootstrap_servers=BOOT, group_id=None, enable_auto_commit=False,
                      api_version=ver, request_timeout_ms=15000, consumer_timeout_ms=3000)
    tp = TopicPartition("kp-old", 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = []
    end = time.time() + 20
    while len(got) < len(old_sent) and time.time() < end:
        for recs in c.poll(timeout_ms=500).values():
            got.extend(recs)
    c.close()
    g = [(r.offset, r.key, r.value) for r in got]
    w = [s[:3] for s in old_sent]
    if g != w:
        if len(g) != len(w):
            return "%d records, want %d" % (len(g), len(w))
        i = next(i for i in range(len(g)) if g[i] != w[i])
        return "first difference at %d: got %r want %r" % (i, g[i], w[i])
    if ver is None or ver >= (0, 10):
        bad = [(r.offset, r.timestamp, s[3]) for r, s in zip(got, old_sent)
               if s[3] is not None and r.timestamp != s[3]]
        if bad:
            return "%d timestamps differ, first %r" % (len(bad), bad[0])
    return None




def max_message_bytes_live():
    """A topic config change applies to the next produce, without restart."""
    admin.create_topics([NewTopic("kp-limit", 1, 1)])
    p = KafkaProducer(bootstrap_servers=BOOT, acks=1, retries=0, request_timeout_ms=15000)
    p.send("kp-limit", value=b"x" * 5000).get(timeout=15)
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-limit",
                                        configs={"max.message.bytes": "1000"})])
    try:
        p.send("kp-limit", value=b"y" * 5000).get(timeout=15)
        why = "a 5000-byte record was accepted under max.message.bytes=1000"
    except MessageSizeTooLargeError:
        why = None
    p.send("kp-limit", value=b"z" * 100).get(timeout=15)   # small ones still go
    p.close()
    return why


check("alter max.message.bytes=1000: next 5000-byte record -> MESSAGE_TOO_LARGE", max_message_bytes_live)


def log_append_time():
    admin.create_topics([NewTopic("kp-lat", 1, 1, topic_configs={"message.timestamp.type": "LogAppendTime"})])
    p = KafkaProducer(bootstrap_servers=BOOT, acks=1, request_timeout_ms=15000)
    t0 = int(time.time() * 1000)
    p.send("kp-lat", value=b"late", timestamp_ms=BASE_TS).get(timeout=15)
    t1 = int(time.time() * 1000)
    p.close()
    c = KafkaConsumer(bootstrap_servers=BOOT, group_id=None, request_timeout_ms=15000)
    tp = TopicPartition("kp-lat", 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    recs = []
    end = time.time() + 15
    while not recs and time.time() < end:
        for rs in c.poll(timeout_ms=500).values():
            recs.extend(rs)
    c.close()
    if not recs:
        return "record not read back"
    r = recs[0]
    if r.timestamp_type != 1 or not (t0 - 1000 <= r.timestamp <= t1 + 1000):
        return "timestamp %d type %d, want type 1 within [%d, %d]" % (r.timestamp, r.timestamp_type, t0, t1)
    return None


check("message.timestamp.type=LogAppendTime: broker stamps append time", log_append_time)
check("modern consumer reads the legacy writes (stored as v2)", lambda: read_old(None))
check("0.10 consumer (Fetch v2/v3, magic 1 down-conversion) reads everything", lambda: read_old((0, 10, 1)))
check("0.9 consumer (Fetch v1, magic 0 down-conversion) reads everything", lambda: read_old((0, 9)))
admin.close()
sys.exit(1 if failures else 0)
