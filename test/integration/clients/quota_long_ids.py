#!/usr/bin/env python3
"""Client ids are compared whole by the quotas (issue 19 review): raw
Produce v7 frames from client ids of 256 bytes that share their first 255
bytes. A default client-id producer_byte_rate of 1000 B/s and a quota of
1e9 B/s named by the 255-byte prefix:
  - id A (prefix + "A") sending 5000 B is throttled by the default (the
    old code copied it into 256 bytes: it took the prefix's quota);
  - id B (prefix + "B") sending 100 B is not throttled (its own allowance,
    not A's debt; the old code shared one);
  - the same for ids C and D without a named quota (the old code put D in
    C's debt);
  - the prefix itself gets its named quota.
usage: quota_long_ids.py HOST:PORT; PASS/FAIL lines."""
import struct
import sys
import time

from kwire import call
from quota_raw import alter, describe
from txn_verify_raw import crc32c, zz

ADDR = sys.argv[1]
TOPIC = "qlong"
PREFIX = "x" * 255
fails = 0


def check(what, ok, why=""):
    global fails
    fails += 0 if ok else 1
    print(("PASS " if ok else "FAIL ") + what + ("" if ok else ": " + str(why)))
    sys.stdout.flush()


def plain_batch(size):
    v = b"v" * size
    body = b"\x00" + zz(0) + zz(0) + zz(-1) + zz(len(v)) + v + zz(0)
    recs = zz(len(body)) + body
    ts = int(time.time() * 1000)
    after = struct.pack(">hiqqqhii", 0, 0, ts, ts, -1, -1, -1, 1) + recs
    tail = struct.pack(">ibI", -1, 2, crc32c(after)) + after
    return struct.pack(">qi", 0, len(tail)) + tail


def produce(client, size):
    """(error, throttle_time_ms) of one Produce v7, acks=1, partition 0."""
    rec = plain_batch(size)
    b = (struct.pack(">h", -1) + struct.pack(">hi", 1, 15000) + struct.pack(">i", 1) +
         struct.pack(">h", len(TOPIC)) + TOPIC.encode() + struct.pack(">i", 1) +
         struct.pack(">ii", 0, len(rec)) + rec)
    r = call(ADDR, 0, 7, b, flexible=False, client=client.encode())
    r.i32(); r.string(False); r.i32()
    r.i32(); err = r.i16(); r.i64(); r.i64(); r.i64()
    return err, r.i32()


def main():
    from kafka.admin import KafkaAdminClient, NewTopic
    adm = KafkaAdminClient(bootstrap_servers=[ADDR], request_timeout_ms=20000)
    adm.create_topics([NewTopic(TOPIC, 1, 1)])
    adm.close()
    res = alter(ADDR, 1, [([("client-id", None)], [("producer_byte_rate", 1000.0, False)]),
                          ([("client-id", PREFIX)], [("producer_byte_rate", 1e9, False)])])
    check("two client-id quotas set", [c for c, _, _ in res] == [0, 0], res)
    deadline = time.time() + 20
    while time.time() < deadline:        # the quotas reach the image through the metadata log
        code, _, ents = describe(ADDR, 1, [("client-id", 1, None)], strict=True)
        if code == 0 and ents and produce("warm-up", 1)[0] == 0:
            break
        time.sleep(0.2)
    err, t = produce(PREFIX + "A", 5000)
    check("256-byte id A: 5000 B throttled by the default 1000 B/s (not its prefix's quota)",
          err == 0 and t >= 3000, (err, t))
    err, t = produce(PREFIX + "B", 100)
    check("256-byte id B sharing A's first 255 bytes: its own allowance (not throttled)", err == 0 and t == 0, (err, t))
    other = "y" * 255      # no quota named by this prefix: only the default applies
    err, t = produce(other + "C", 5000)
    check("256-byte id C: 5000 B throttled by the default", err == 0 and t >= 3000, (err, t))
    err, t = produce(other + "D", 100)
    check("256-byte id D sharing C's first 255 bytes: not in C's debt", err == 0 and t == 0, (err, t))
    err, t = produce(PREFIX, 5000)
    check("the 255-byte prefix itself: its named quota (not throttled)", err == 0 and t == 0, (err, t))
    return 1 if fails else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as ex:
        print("FAIL quota_long_ids crashed: %r" % (ex,))
        sys.exit(1)
