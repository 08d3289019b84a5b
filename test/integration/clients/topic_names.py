#!/usr/bin/python3
"""Topic names from the wire (issue 16, finding 6): Kafka's rule (1 to 249
of [a-zA-Z0-9._-], not "." or "..") in CreateTopics, Metadata auto-create
and Produce, and a name holding a NUL is never cut at the NUL ("a\\0b" used
to create and write topic "a").

usage: topic_names.py HOST:PORT
Needs a node with auto.create.topics.enable=true. Raw frames (no client
library can send a NUL inside a name: they pass names as C strings).
Prints "PASS what" / "FAIL what: why"; exit 1 on any failure.
"""
import socket
import struct
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import kwire  # noqa: E402

ADDR = sys.argv[1]
NONE, UNKNOWN_TOPIC, INVALID_TOPIC, INVALID_CONFIG = 0, 3, 17, 40
failures = 0


def case(name, fn):
    global failures
    try:
        why = fn()
    except Exception as e:  # an exception is a failure of the case, with its cause
        why = "%s: %s" % (type(e).__name__, e)
    print(("PASS %s" % name) if why is None else ("FAIL %s: %s" % (name, why)), flush=True)
    failures += why is not None


def s16(b):
    return struct.pack(">h", len(b)) + b


def nstr(b):
    return struct.pack(">h", -1) if b is None else s16(b)


# ---- CreateTopics v4 ---------------------------------------------------------

def create_topics(names, configs=()):
    """-> [(name, error_code, message)] in request order."""
    body = struct.pack(">i", len(names))
    for n in names:
        body += s16(n) + struct.pack(">ih", 1, 1) + struct.pack(">i", 0)
        body += struct.pack(">i", len(configs)) + b"".join(s16(k) + nstr(v) for k, v in configs)
    body += struct.pack(">i?", 30000, False)
    r = kwire.call(ADDR, 19, 4, body, flexible=False)
    r.i32()   # throttle
    out = []
    for _ in range(r.count(False)):
        name = r.take(r.i16())
        err = r.i16()
        n = r.i16()
        msg = r.take(n).decode() if n >= 0 else None
        out.append((name, err, msg))
    return out


# ---- Metadata v8 -------------------------------------------------------------

def metadata(names, auto_create=False):
    """names None = all topics -> {name bytes: (error_code, partition count)}."""
    if names is None:
        body = struct.pack(">i", -1)
    else:
        body = struct.pack(">i", len(names)) + b"".join(s16(n) for n in names)
    body += struct.pack(">???", auto_create, False, False)
    r = kwire.call(ADDR, 3, 8, body, flexible=False)
    r.i32()
    for _ in range(r.count(False)):           # brokers
        r.i32(); r.take(r.i16()); r.i32(); n = r.i16(); r.take(max(n, 0))
    n = r.i16(); r.take(max(n, 0))           # cluster id
    r.i32()                                    # controller
    topics = {}
    for _ in range(r.count(False)):
        err = r.i16()
        name = r.take(r.i16())
        r.i8()                                 # is_internal
        nparts = r.count(False)
        for _ in range(nparts):
            r.i16(); r.i32(); r.i32(); r.i32()
            for _ in range(3):                 # replicas, isr, offline
                r.take(4 * max(r.count(False), 0))
        r.i32()
        topics[name] = (err, nparts)
    return topics


# ---- Produce v7 (one record) -------------------------------------------------

def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c ^ 0xFFFFFFFF


def one_record_batch(value):
    rec = b"\x00" + b"\x00" + b"\x00" + b"\x01" + bytes([len(value) * 2]) + value + b"\x00"
    rec = bytes([len(rec) * 2]) + rec          # zig-zag varint length (< 64 bytes)
    ts = int(time.time() * 1000)
    after_crc = struct.pack(">hiqqqhii", 0, 0, ts, ts, -1, -1, -1, 1) + rec
    tail = struct.pack(">ibI", -1, 2, crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(tail)) + tail


def produce(topic, value):
    """-> error code of the single partition 0."""
    recs = one_record_batch(value)
    body = (struct.pack(">hhi", -1, 1, 10000) + struct.pack(">i", 1) + s16(topic) +
            struct.pack(">i", 1) + struct.pack(">ii", 0, len(recs)) + recs)
    r = kwire.call(ADDR, 0, 7, body, flexible=False)
    assert r.count(False) == 1
    r.take(r.i16())
    assert r.count(False) == 1
    r.i32()
    return r.i16()


# ---- ListOffsets v2 (latest) -------------------------------------------------

def latest_offset(topic):
    """-> (error, offset) of partition 0's end."""
    body = struct.pack(">ib", -1, 0) + struct.pack(">i", 1) + s16(topic) + struct.pack(">iiq", 1, 0, -1)
    r = kwire.call(ADDR, 2, 2, body, flexible=False)
    r.i32()
    assert r.count(False) == 1
    r.take(r.i16())
    assert r.count(False) == 1
    r.i32()
    err = r.i16()
    r.i64()
    return err, r.i64()


# ---- DeleteTopics v3 ---------------------------------------------------------

def delete_topics(names):
    body = struct.pack(">i", len(names)) + b"".join(s16(n) for n in names) + struct.pack(">i", 30000)
    r = kwire.call(ADDR, 20, 3, body, flexible=False)
    r.i32()
    out = []
    for _ in range(r.count(False)):
        name = r.take(r.i16())
        out.append((name, r.i16()))
    return out


def wait_topic(name, timeout_s=15.0):
    end = time.time() + timeout_s
    while time.time() < end:
        t = metadata([name]).get(name)
        if t and t[0] == NONE and t[1] > 0:
            err, _ = latest_offset(name)
            if err == NONE:
                return None
        time.sleep(0.2)
    return "topic %r not ready" % name


def all_names():
    return set(metadata(None).keys())


# ---- cases -------------------------------------------------------------------

def c_create_rules():
    bad = [b"a\x00b", b"", b".", b"..", b"x" * 250, b"bad name!", b"caf\xc3\xa9", b"tab\tname"]
    good = [b"y" * 249, b"ok.Name_-09"]
    res = create_topics(bad + good)
    for (name, err, msg), want in zip(res, [INVALID_TOPIC] * len(bad) + [NONE] * len(good)):
        if err != want:
            return "%r: error %d, want %d (%s)" % (name, err, want, msg)
        if want == INVALID_TOPIC and not (msg and "Topic name" in msg):
            return "%r: message %r does not explain the rule" % (name, msg)
    names = all_names()
    for n in [b"a", b""]:
        if n in names:
            return "topic %r exists: a name was cut at its NUL" % n
    for n in good:
        if n not in names:
            return "valid name %r was not created" % n
    return None


def c_create_nul_never_cut():
    # "a" exists; creating "a\0b" must not answer TOPIC_ALREADY_EXISTS (36)
    res = create_topics([b"a"])
    if res[0][1] != NONE:
        return "creating 'a': error %d" % res[0][1]
    res = create_topics([b"a\x00b"])
    return None if res[0][1] == INVALID_TOPIC else "a\\0b: error %d, want 17 (not 36: no cut at the NUL)" % res[0][1]


def c_metadata_auto_create():
    t = metadata([b"m\x00n", b"bad!name", b"auto-ok"], auto_create=True)
    if t.get(b"m\x00n", (None,))[0] != INVALID_TOPIC:
        return "m\\0n: %r, want INVALID_TOPIC_EXCEPTION" % (t.get(b"m\x00n"),)
    if t.get(b"bad!name", (None,))[0] != INVALID_TOPIC:
        return "bad!name: %r" % (t.get(b"bad!name"),)
    why = wait_topic(b"auto-ok")
    if why:
        return "valid name not auto-created: " + why
    names = all_names()
    for n in [b"m", b"m\x00n", b"bad!name"]:
        if n in names:
            return "topic %r was created" % n
    return None


def c_produce_never_cut():
    why = wait_topic(b"a")
    if why:
        return why
    before = latest_offset(b"a")
    if produce(b"a", b"real") != NONE:
        return "produce to 'a' failed"
    err = produce(b"a\x00b", b"must-not-land-in-a")
    if err not in (UNKNOWN_TOPIC, INVALID_TOPIC):
        return "produce to a\\0b: error %d, want 3 or 17" % err
    err2 = produce(b"bad name!", b"x")
    if err2 not in (UNKNOWN_TOPIC, INVALID_TOPIC):
        return "produce to 'bad name!': error %d" % err2
    after = latest_offset(b"a")
    if after[1] != before[1] + 1:
        return "topic a grew from %d to %d: the a\\0b record landed in 'a'" % (before[1], after[1])
    return None


def c_list_offsets_never_cut():
    err, _ = latest_offset(b"a\x00b")
    return None if err == UNKNOWN_TOPIC else "ListOffsets a\\0b: error %d, want 3" % err


def c_delete_never_cut():
    res = delete_topics([b"a\x00b"])
    if res[0][1] != UNKNOWN_TOPIC:
        return "DeleteTopics a\\0b: error %d, want 3" % res[0][1]
    time.sleep(0.5)
    return None if b"a" in all_names() else "topic 'a' was deleted by a\\0b"


def c_config_nul_refused():
    # a NUL in a config value of CreateTopics: the connection is closed
    # (the string is refused, not cut) and nothing is created
    try:
        res = create_topics([b"cfg-nul"], configs=[(b"retention.ms", b"1000\x00junk")])
        got = res[0][1]
    except (ValueError, OSError):
        got = "closed"
    if got == NONE:
        return "created with a config value holding a NUL"
    return None if b"cfg-nul" not in all_names() else "topic cfg-nul exists"


def c_alter_configs_nul():
    # AlterConfigs v1 on topic 'a' with a NUL in the value -> INVALID_CONFIG
    body = (struct.pack(">i", 1) + struct.pack(">b", 2) + s16(b"a") + struct.pack(">i", 1) +
            s16(b"retention.ms") + s16(b"1000\x00x") + struct.pack(">?", True))
    r = kwire.call(ADDR, 33, 1, body, flexible=False)
    r.i32()
    assert r.count(False) == 1
    err = r.i16()
    return None if err == INVALID_CONFIG else "AlterConfigs with a NUL value: error %d, want 40" % err


def c_node_serves():
    if produce(b"ok.Name_-09", b"after") != NONE:
        return "produce after the bad requests failed"
    return None


case("CreateTopics: Kafka's name rule, INVALID_TOPIC_EXCEPTION with a message", c_create_rules)
case("CreateTopics: a\\0b is invalid even when 'a' exists", c_create_nul_never_cut)
case("Metadata auto-create: invalid names answered 17, never created", c_metadata_auto_create)
case("Produce: a\\0b never writes into 'a'", c_produce_never_cut)
case("ListOffsets: a\\0b is unknown", c_list_offsets_never_cut)
case("DeleteTopics: a\\0b never deletes 'a'", c_delete_never_cut)
case("CreateTopics: a config value with a NUL is refused", c_config_nul_refused)
case("AlterConfigs: a config value with a NUL is INVALID_CONFIG", c_alter_configs_nul)
case("the node still serves", c_node_serves)
sys.exit(1 if failures else 0)
