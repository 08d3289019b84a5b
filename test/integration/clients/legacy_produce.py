#!/usr/bin/python3
"""Compressed legacy message sets (magic 0 and 1) with any inner offsets.

usage: legacy_produce.py HOST:PORT TOPIC

Sarama with its default version (0.8.2) sends Produce v0 whose gzip or
snappy wrapper holds inner messages all at offset 0. Kafka ignores magic 0
inner offsets and rewrites non-sequential magic 1 ones, so every such set is
stored. Here: Produce v0/v1/v2 x magic 0/1 x gzip / raw snappy (what
librdkafka and Sarama write) / xerial snappy (what Java writes) x inner
offsets 0,0,0 / 5,6,7 / 0,1,2, three messages each. Each must be accepted
(error 0) at the next offset of TOPIC partition 0 (which must be empty).
Prints "PASS what" / "FAIL what: why" per request, then "STORED v v ..." (the
values expected in the log from offset 0, in order); exit 1 on any failure.
"""
import gzip
import socket
import struct
import sys
import zlib

import snappy

from kwire import recv_exact

IO_TIMEOUT_S = 10.0
HOST, PORT = sys.argv[1].rsplit(":", 1)
TOPIC = sys.argv[2].encode()
failures = 0
stored = []
next_offset = 0


def message(offset, magic, attrs, value, key=None, ts=1_600_000_000_000):
    """One legacy entry: offset, size, crc, magic, attributes, [ts], key, value."""
    body = struct.pack(">bb", magic, attrs)
    if magic == 1:
        body += struct.pack(">q", ts)
    body += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    body += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    msg = struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF) + body
    return struct.pack(">qi", offset, len(msg)) + msg


def xerial(data, block=32 * 1024):
    """snappy-java's stream: magic, version 1, compatible 1, then blocks of
    INT32 length + raw snappy."""
    out = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    for i in range(0, len(data), block):
        c = snappy.compress(data[i:i + block])
        out += struct.pack(">i", len(c)) + c
    return out


CODECS = {
    "gzip": (1, gzip.compress),
    "snappy-raw": (2, snappy.compress),
    "snappy-xerial": (2, xerial),
}


def produce_req(ver, corr, msgset):
    body = (struct.pack(">hi", 1, 10000) + struct.pack(">i", 1) +
            struct.pack(">h", len(TOPIC)) + TOPIC + struct.pack(">i", 1) +
            struct.pack(">ii", 0, len(msgset)) + msgset)
    hdr = struct.pack(">hhih", 0, ver, corr, 6) + b"legacy"
    return struct.pack(">i", len(hdr) + len(body)) + hdr + body


def produce(ver, msgset):
    """(error, base offset) of partition 0, or (None, why)."""
    s = socket.create_connection((HOST, int(PORT)), timeout=IO_TIMEOUT_S)
    try:
        s.sendall(produce_req(ver, 11, msgset))
        head = recv_exact(s, 4)
        if head is None:
            return None, "connection closed"
        body = recv_exact(s, struct.unpack(">i", head)[0])
    finally:
        s.close()
    if body is None or len(body) < 4 or struct.unpack(">i", body[:4])[0] != 11:
        return None, "bad answer"
    pos = 4
    ntopics = struct.unpack(">i", body[pos:pos + 4])[0]
    pos += 4
    tlen = struct.unpack(">h", body[pos:pos + 2])[0]
    pos += 2 + tlen
    nparts = struct.unpack(">i", body[pos:pos + 4])[0]
    pos += 4
    if ntopics != 1 or nparts != 1:
        return None, "answer with %d topics, %d partitions" % (ntopics, nparts)
    part, err, base = struct.unpack(">ihq", body[pos:pos + 14])
    return err, base


def case(ver, magic, codec_name, inner):
    global failures, next_offset
    codec, compress = CODECS[codec_name]
    tag = "v%d-m%d-%s-%s" % (ver, magic, codec_name, ".".join(map(str, inner)))
    values = [("%s-#%d" % (tag, i)).encode() for i in range(len(inner))]
    inner_set = b"".join(message(o, magic, 0, v, key=b"k%d" % i)
                         for i, (o, v) in enumerate(zip(inner, values)))
    # magic 1 wrapper: the absolute offset of the last inner message (any
    # value the broker replaces); magic 0 wrapper: the last inner offset
    wrapper_offset = inner[-1] if magic == 0 else 1000 + inner[-1]
    msgset = message(wrapper_offset, magic, codec, compress(inner_set))
    err, base = produce(ver, msgset)
    name = "Produce %s accepted at offset %d" % (tag, next_offset)
    if err is None:
        failures += 1
        print("FAIL %s: %s" % (name, base))
    elif err != 0 or base != next_offset:
        failures += 1
        print("FAIL %s: error %d, base offset %d" % (name, err, base))
    else:
        print("PASS " + name)
        stored.extend(values)
        next_offset += len(values)
    sys.stdout.flush()


for ver, magic in ((0, 0), (1, 0), (2, 1), (1, 1), (2, 0)):
    for codec_name in CODECS:
        for inner in ((0, 0, 0), (5, 6, 7), (0, 1, 2)):
            case(ver, magic, codec_name, inner)
print("STORED " + " ".join(v.decode() for v in stored))
sys.exit(1 if failures else 0)
