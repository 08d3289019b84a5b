#!/usr/bin/python3
"""Prints the data records of a partition directory's segments (Kafka v2
batches, uncompressed only), one "offset key value" line each, in offset
order; control batches are skipped. For comparing replicas byte for byte
without a consumer (a consumer only reads the leader).

usage: segdump.py PARTITION_DIR
"""
import glob
import struct
import sys

sys.dont_write_bytecode = True


def varint(b, i):
    shift = result = 0
    while True:
        c = b[i]
        i += 1
        result |= (c & 0x7F) << shift
        if not c & 0x80:
            break
        shift += 7
    return (result >> 1) ^ -(result & 1), i


def records(path):
    data = open(path, "rb").read()
    pos = 0
    while pos + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        batch = data[pos:pos + 12 + length]
        pos += 12 + length
        attrs = struct.unpack_from(">h", batch, 21)[0]
        if attrs & 0x20:
            continue  # control batch
        if attrs & 0x07:
            sys.exit("%s: compressed batch at %d: not supported here" % (path, base))
        count = struct.unpack_from(">i", batch, 57)[0]
        i = 61
        for _ in range(count):
            _, i = varint(batch, i)
            i += 1  # attributes
            _, i = varint(batch, i)   # timestamp delta
            od, i = varint(batch, i)
            kl, i = varint(batch, i)
            key = batch[i:i + kl] if kl >= 0 else None
            i += max(kl, 0)
            vl, i = varint(batch, i)
            val = batch[i:i + vl] if vl >= 0 else None
            i += max(vl, 0)
            nh, i = varint(batch, i)
            for _ in range(nh):
                hl, i = varint(batch, i)
                i += hl
                hv, i = varint(batch, i)
                i += max(hv, 0)
            yield base + od, key, val


for seg in sorted(glob.glob(sys.argv[1] + "/*.log")):
    for off, key, val in records(seg):
        print(off, key.decode() if key is not None else "-", val.decode().rstrip(".") if val is not None else "-")
