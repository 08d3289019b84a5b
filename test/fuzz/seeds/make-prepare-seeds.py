#!/usr/bin/env python3
"""Seeds of fuzz_prepare: Produce request frames (bytes after the size)
whose record sets are the batches of seeds/fuzz_batch (every codec, one
written by librdkafka), one or several per partition, several partitions
and topics, v3 and v7 (non-flexible) and v9 (flexible), plus a damaged CRC,
a cut set, null records and a non-Produce frame.
usage: make-prepare-seeds.py  (writes seeds/fuzz_prepare/*.bin)"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fuzz_prepare")


def uvarint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def s16(s):
    return struct.pack(">h", len(s)) + s


def produce(version, topics, corr=7, acks=-1):
    """topics: [(name, [(index, records or None)])]"""
    flex = version >= 9
    hdr = struct.pack(">hhi", 0, version, corr) + s16(b"fuzz")
    if flex:
        hdr += b"\x00"  # header tagged fields
    body = b""
    body += (b"\x00" if flex else struct.pack(">h", -1))  # transactional_id null
    body += struct.pack(">hi", acks, 30000)
    body += uvarint(len(topics) + 1) if flex else struct.pack(">i", len(topics))
    for name, parts in topics:
        body += (uvarint(len(name) + 1) + name) if flex else s16(name)
        body += uvarint(len(parts) + 1) if flex else struct.pack(">i", len(parts))
        for idx, recs in parts:
            body += struct.pack(">i", idx)
            if recs is None:
                body += b"\x00" if flex else struct.pack(">i", -1)
            else:
                body += (uvarint(len(recs) + 1) if flex else struct.pack(">i", len(recs))) + recs
            if flex:
                body += b"\x00"
        if flex:
            body += b"\x00"
    if flex:
        body += b"\x00"
    return hdr + body


def main():
    os.makedirs(OUT, exist_ok=True)
    bdir = os.path.join(HERE, "fuzz_batch")
    batches = {}
    for f in sorted(os.listdir(bdir)):
        if f.endswith(".bin"):
            batches[f[:-4]] = open(os.path.join(bdir, f), "rb").read()
    seeds = {}
    for name, b in batches.items():
        for v in (3, 7, 9):
            seeds["%s-v%d" % (name, v)] = produce(v, [(b"t", [(0, b)])])
    allb = list(batches.values())
    seeds["many-v9"] = produce(9, [(b"a", [(0, allb[0]), (1, allb[1] + allb[2])]),
                                   (b"b", [(0, b"".join(allb))])])
    seeds["many-v3"] = produce(3, [(b"a", [(i, allb[i % len(allb)]) for i in range(6)])])
    bad = bytearray(allb[0])
    bad[-1] ^= 1
    seeds["crc-v9"] = produce(9, [(b"t", [(0, allb[1] + bytes(bad))])])
    seeds["cut-v9"] = produce(9, [(b"t", [(0, allb[0][:-5])])])
    seeds["null-v3"] = produce(3, [(b"t", [(0, None), (1, allb[0])])])
    seeds["acks0-v7"] = produce(7, [(b"t", [(2, allb[-1])])], acks=0)
    seeds["metadata-v0"] = struct.pack(">hhi", 3, 0, 1) + s16(b"x") + struct.pack(">i", 0)
    for name, data in seeds.items():
        with open(os.path.join(OUT, name + ".bin"), "wb") as fh:
            fh.write(data)


if __name__ == "__main__":
    main()
