#!/usr/bin/python3
"""Config values range-checked on the wire (issue 16, finding 7):
segment.index.bytes=2147483647 and max.message.bytes=2147483647 used to be
accepted. CreateTopics configs and AlterConfigs through confluent-kafka,
IncrementalAlterConfigs as a raw frame (confluent-kafka 1.7 lacks it):
INVALID_CONFIG with a message naming the key and the range, for topic and
broker resources, skiff's caps and Kafka's own ranges alike; values inside
the range still work.

usage: config_ranges.py HOST:PORT BROKER_ID
Prints "PASS what" / "FAIL what: why"; exit 1 on any failure.
"""
import struct
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import kwire  # noqa: E402
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # noqa: E402

BOOT, BROKER = sys.argv[1], sys.argv[2]
INVALID_CONFIG = 40
failures = 0


def check(name, why):
    global failures
    print(("PASS %s" % name) if why is None else ("FAIL %s: %s" % (name, why)), flush=True)
    failures += why is not None


ADMIN = AdminClient({"bootstrap.servers": BOOT})   # kept: futures die with their client


def admin():
    return ADMIN


def create(topic, configs):
    """-> None on success, else the error text."""
    fs = admin().create_topics([NewTopic(topic, 1, 1, config=configs)], request_timeout=15)
    try:
        fs[topic].result()
        return None
    except Exception as e:   # the broker's refusal, as the client reports it
        return str(e)


def alter(rtype, name, configs):
    fs = admin().alter_configs([ConfigResource(rtype, name, set_config=configs)], request_timeout=15)
    try:
        for f in fs.values():
            f.result()
        return None
    except Exception as e:
        return str(e)


def s16(b):
    return struct.pack(">h", len(b)) + b


def incremental(rtype, name, key, value):
    """IncrementalAlterConfigs v0, one SET -> (error_code, message)."""
    body = (struct.pack(">i", 1) + struct.pack(">b", rtype) + s16(name.encode()) + struct.pack(">i", 1) +
            s16(key.encode()) + struct.pack(">b", 0) + s16(value.encode()) + struct.pack(">?", False))
    r = kwire.call(BOOT, 44, 0, body, flexible=False)
    r.i32()
    assert r.count(False) == 1
    err = r.i16()
    n = r.i16()
    return err, (r.take(n).decode() if n >= 0 else None)


def refused_naming(err_text, key, *range_bits):
    if err_text is None:
        return "accepted"
    if "INVALID_CONFIG" not in err_text and "nvalid" not in err_text:
        return "not INVALID_CONFIG: %s" % err_text
    for bit in (key,) + range_bits:
        if bit not in err_text:
            return "message lacks %r: %s" % (bit, err_text)
    return None


def expect_inc(rtype, name, key, value, *range_bits):
    err, msg = incremental(rtype, name, key, value)
    if err != INVALID_CONFIG:
        return "error %d (%s), want 40" % (err, msg)
    return refused_naming("INVALID_CONFIG " + (msg or ""), key, *range_bits)


TOPIC, BRK = 2, 4
# CreateTopics: the caps and Kafka's ranges
check("CreateTopics segment.index.bytes=2147483647 refused, key and cap named",
      refused_naming(create("cr-idx", {"segment.index.bytes": "2147483647"}), "segment.index.bytes", "67108864"))
check("CreateTopics max.message.bytes=2147483647 refused, key and cap named",
      refused_naming(create("cr-msg", {"max.message.bytes": "2147483647"}), "max.message.bytes", "1073741824"))
check("CreateTopics min.insync.replicas=0 refused (Kafka's [1,...])",
      refused_naming(create("cr-isr", {"min.insync.replicas": "0"}), "min.insync.replicas"))
check("CreateTopics retention.ms=-2 refused (Kafka's [-1,...])",
      refused_naming(create("cr-ret", {"retention.ms": "-2"}), "retention.ms", "-1"))
check("CreateTopics stored key local.retention.ms=-3 refused (Kafka's [-2,...])",
      refused_naming(create("cr-loc", {"local.retention.ms": "-3"}), "local.retention.ms"))
md = admin().list_topics(timeout=10).topics
check("no refused topic was created",
      None if not [t for t in md if t.startswith("cr-")] else "created: %r" % [t for t in md if t.startswith("cr-")])
check("CreateTopics at the caps works",
      create("cr-ok", {"segment.index.bytes": "67108864", "max.message.bytes": "1073741824"}))

# AlterConfigs (legacy, replaces the set) on the topic and the broker
check("AlterConfigs topic segment.index.bytes=2147483647 refused",
      refused_naming(alter("topic", "cr-ok", {"segment.index.bytes": "2147483647"}), "segment.index.bytes",
                     "67108864"))
check("AlterConfigs broker message.max.bytes=2147483647 refused",
      refused_naming(alter("broker", BROKER, {"message.max.bytes": "2147483647"}), "message.max.bytes",
                     "1073741824"))
check("AlterConfigs topic max.message.bytes in range works", alter("topic", "cr-ok", {"max.message.bytes": "2000000"}))

# IncrementalAlterConfigs (raw v0)
check("IncrementalAlterConfigs topic max.message.bytes=2147483647 refused",
      expect_inc(TOPIC, "cr-ok", "max.message.bytes", "2147483647", "1073741824"))
check("IncrementalAlterConfigs topic segment.index.bytes=67108865 refused",
      expect_inc(TOPIC, "cr-ok", "segment.index.bytes", "67108865", "67108864"))
check("IncrementalAlterConfigs broker log.index.size.max.bytes=2147483647 refused",
      expect_inc(BRK, BROKER, "log.index.size.max.bytes", "2147483647", "67108864"))
check("IncrementalAlterConfigs broker min.insync.replicas=0 refused",
      expect_inc(BRK, BROKER, "min.insync.replicas", "0"))
err, msg = incremental(TOPIC, "cr-ok", "segment.index.bytes", "1048576")
check("IncrementalAlterConfigs topic segment.index.bytes=1048576 works",
      None if err == 0 else "error %d: %s" % (err, msg))
sys.exit(1 if failures else 0)
