#!/usr/bin/python3
"""Hand-built Produce v7 requests against one node: bad batches are refused
with the right error code and never stored; good ones are.

usage: rawproduce.py HOST:PORT TOPIC MESSAGE_MAX_BYTES
TOPIC must exist with one partition holding exactly one record (offset 0).
Prints "PASS what" / "FAIL what: why"; exit 1 on any failure. At the end
prints "STORED v1 v2 ..." (the values this script expects in the log after
offset 0, in order) for the caller to compare with a real consumer.
"""
import socket
import struct
import sys
import time

IO_TIMEOUT_S = 5.0
HOST, PORT = sys.argv[1].rsplit(":", 1)
TOPIC = sys.argv[2].encode()
MSG_MAX = int(sys.argv[3])
NONE, CORRUPT_MESSAGE, UNKNOWN_TOPIC, MESSAGE_TOO_LARGE, INVALID_RECORD = 0, 2, 3, 10, 87
failures = 0
stored = []     # values expected in the log, in order
next_offset = 1


def crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


TABLE = crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def varint(n):
    z = (n << 1) ^ (n >> 63)          # zig-zag, as record fields use
    out = b""
    while True:
        if z < 0x80:
            return out + bytes([z])
        out += bytes([(z & 0x7F) | 0x80])
        z >>= 7


def record(i, value, key=b"k"):
    body = (b"\x00" + varint(0) + varint(i) + varint(len(key)) + key +
            varint(len(value)) + value + varint(0))
    return varint(len(body)) + body


def batch(values, attributes=0, count=None, magic=2, records=None, pid=-1):
    recs = records if records is not None else b"".join(record(i, v) for i, v in enumerate(values))
    n = len(values) if count is None else count
    ts = int(time.time() * 1000)
    after_crc = struct.pack(">hiqqqhii", attributes, len(values) - 1, ts, ts, pid, -1, -1, n) + recs
    crc = crc32c(after_crc)
    tail = struct.pack(">ibI", -1, magic, crc) + after_crc
    return struct.pack(">qi", 0, len(tail)) + tail


def produce_req(corr, records, acks=1, topic=TOPIC, partition=0):
    body = (struct.pack(">hhi", -1, acks, 10000) + struct.pack(">i", 1) +
            struct.pack(">h", len(topic)) + topic + struct.pack(">i", 1) +
            struct.pack(">ii", partition, len(records)) + records)
    hdr = struct.pack(">hhih", 0, 7, corr, 10) + b"rawproduce"
    return struct.pack(">i", len(hdr) + len(body)) + hdr + body


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_frame(s):
    size = recv_exact(s, 4)
    return None if size is None else recv_exact(s, struct.unpack(">i", size)[0])


def parse_produce_v7(body):
    """-> (corr, error_code, base_offset) of the single partition."""
    corr, ntopics, nlen = struct.unpack_from(">iih", body, 0)
    i = 10 + nlen
    nparts, idx, err, base = struct.unpack_from(">iihq", body, i)
    assert ntopics == 1 and nparts == 1, (ntopics, nparts)
    return corr, err, base


def connect():
    s = socket.create_connection((HOST, int(PORT)), timeout=IO_TIMEOUT_S)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


CORR = [100]


def send(records, **kw):
    """One Produce on a fresh connection -> (error_code, base_offset)."""
    CORR[0] += 1
    s = connect()
    s.sendall(produce_req(CORR[0], records, **kw))
    body = read_frame(s)
    s.close()
    if body is None:
        raise ConnectionError("closed without an answer")
    corr, err, base = parse_produce_v7(body)
    if corr != CORR[0]:
        raise ValueError("correlation id %d, want %d" % (corr, CORR[0]))
    return err, base


def case(name, fn):
    global failures
    try:
        why = fn()
    except Exception as e:
        why = "%s: %s" % (type(e).__name__, e)
    print(("PASS %s" % name) if why is None else ("FAIL %s: %s" % (name, why)), flush=True)
    failures += why is not None


def expect_error(records, allowed, **kw):
    err, _ = send(records, **kw)
    return None if err in allowed else "error %d, want one of %r" % (err, sorted(allowed))


def good(values):
    global next_offset
    err, base = send(batch(values))
    if err != NONE or base != next_offset:
        return "error %d base %d, want 0 and %d" % (err, base, next_offset)
    stored.extend(values)
    next_offset += len(values)
    return None


def flip_crc():
    b = bytearray(batch([b"crc"]))
    b[-3] ^= 0x01                     # one bit inside the record, CRC unchanged
    return bytes(b)


case("control: our CRC-32C of '123456789' is e3069283",
     lambda: None if crc32c(b"123456789") == 0xE3069283 else "got %08x" % crc32c(b"123456789"))
case("valid batch of 3 -> error 0 at offset 1", lambda: good([b"good-1", b"good-2", b"good-3"]))
case("one flipped bit -> CORRUPT_MESSAGE", lambda: expect_error(flip_crc(), {CORRUPT_MESSAGE}))
case("batch length beyond the data -> CORRUPT_MESSAGE",
     lambda: expect_error(batch([b"short"])[:-4], {CORRUPT_MESSAGE}))
case("magic 3 -> CORRUPT_MESSAGE or INVALID_RECORD",
     lambda: expect_error(batch([b"m3"], magic=3), {CORRUPT_MESSAGE, INVALID_RECORD}))
case("record count 5 with 3 records -> INVALID_RECORD or CORRUPT_MESSAGE",
     lambda: expect_error(batch([b"a", b"b", b"c"], count=5), {CORRUPT_MESSAGE, INVALID_RECORD}))
case("record whose length lies (CRC right) -> INVALID_RECORD or CORRUPT_MESSAGE",
     lambda: expect_error(batch([b"x"], records=varint(40) + record(0, b"x")[1:]),
                          {CORRUPT_MESSAGE, INVALID_RECORD}))
case("no batch at all -> CORRUPT_MESSAGE or INVALID_RECORD",
     lambda: expect_error(b"", {CORRUPT_MESSAGE, INVALID_RECORD}))
case("control batch from a producer -> INVALID_RECORD",
     lambda: expect_error(batch([b"ctl"], attributes=0x20), {INVALID_RECORD}))
case("batch above message.max.bytes -> MESSAGE_TOO_LARGE",
     lambda: expect_error(batch([b"z" * (MSG_MAX + 100)]), {MESSAGE_TOO_LARGE}))
case("unknown topic -> UNKNOWN_TOPIC_OR_PARTITION",
     lambda: expect_error(batch([b"u"]), {UNKNOWN_TOPIC}, topic=b"no-such-topic-raw"))
case("partition 7 of a 1-partition topic -> UNKNOWN_TOPIC_OR_PARTITION",
     lambda: expect_error(batch([b"u"]), {UNKNOWN_TOPIC}, partition=7))
case("valid batch after the bad ones -> next offset", lambda: good([b"good-4"]))


def acks0_bad():
    s = connect()
    s.sendall(produce_req(900, flip_crc(), acks=0))
    try:
        data = s.recv(4096)
    except ConnectionResetError:
        data = b""
    except socket.timeout:
        return "no close within %.0f s" % IO_TIMEOUT_S
    s.close()
    return None if data == b"" else "answered %r" % data[:16]


def acks0_good():
    global next_offset
    s = connect()
    # acks=0 produce then ApiVersions v0: the first frame back must be the
    # ApiVersions answer (a Produce with acks=0 has none)
    s.sendall(produce_req(901, batch([b"acks0"]), acks=0) +
              struct.pack(">ihhih", 10, 18, 0, 902, 0))
    body = read_frame(s)
    s.close()
    if body is None:
        return "closed"
    (corr,) = struct.unpack_from(">i", body, 0)
    if corr != 902:
        return "first answer has correlation id %d, want 902" % corr
    stored.append(b"acks0")
    next_offset += 1
    return None


case("acks=0 with a corrupt batch -> connection closed, no answer", acks0_bad)
case("acks=0 valid batch -> no answer, stored", acks0_good)
print("STORED " + " ".join(v.decode() for v in stored), flush=True)
sys.exit(1 if failures else 0)
