#!/usr/bin/python3
"""Raw ElectLeaders (43) and AlterPartitionReassignments (45) frames for
t_reassign.sh: kafka-python 2.0.2 and confluent-kafka 1.7.0 cannot send
ElectLeaders, and kafkajs 2.2.4 cannot send a null replica list (cancel).

usage:
  reassign_raw.py elect HOST:PORT VERSION TYPE TOPIC PART[,PART...]|all
      -> one line per partition result: "TOPIC PART ERROR", then
         "top ERROR" (v1+); TOPIC 'all' sends a null topic list
  reassign_raw.py alter HOST:PORT TOPIC PART REPLICAS|null
      -> "top ERROR" then "TOPIC PART ERROR" (REPLICAS: 1,2,3 or null = cancel)
Exit status 0 when an answer was decoded, 2 on any I/O or decoding problem.
Every wait is bounded (IO_TIMEOUT_S).
"""
import struct
import sys

from kwire import call as kcall, uvarint

IO_TIMEOUT_S = 30.0


def enc_str(s, flexible):
    b = s.encode()
    return (uvarint(len(b) + 1) if flexible else struct.pack(">h", len(b))) + b


def enc_count(n, flexible):
    return uvarint(n + 1) if flexible else struct.pack(">i", n)


def elect(addr, ver, etype, topic, parts):
    flex = ver >= 2
    body = struct.pack(">b", etype) if ver >= 1 else b""
    if topic == "all":
        body += enc_count(-1, flex)
    else:
        ps = [int(p) for p in parts.split(",")]
        body += enc_count(1, flex) + enc_str(topic, flex) + enc_count(len(ps), flex)
        body += b"".join(struct.pack(">i", p) for p in ps) + (b"\x00" if flex else b"")
    body += struct.pack(">i", 10000) + (b"\x00" if flex else b"")
    r = kcall(addr, 43, ver, body, flex, b"reassign_raw", IO_TIMEOUT_S)
    r.i32()                                   # throttle
    top = r.i16() if ver >= 1 else None
    for _ in range(r.count(flex)):
        t = r.string(flex)
        for _ in range(r.count(flex)):
            p, err = r.i32(), r.i16()
            r.string(flex)
            r.tags(flex)
            print(t, p, err)
        r.tags(flex)
    if top is not None:
        print("top", top)


def alter(addr, topic, part, replicas):
    body = struct.pack(">i", 10000) + uvarint(2) + enc_str(topic, True) + uvarint(2) + struct.pack(">i", int(part))
    if replicas == "null":
        body += uvarint(0)
    else:
        rs = [int(x) for x in replicas.split(",")] if replicas else []
        body += uvarint(len(rs) + 1) + b"".join(struct.pack(">i", x) for x in rs)
    body += b"\x00" + b"\x00" + b"\x00"       # partition, topic, request tags
    r = kcall(addr, 45, 0, body, True, b"reassign_raw", IO_TIMEOUT_S)
    r.i32()
    print("top", r.i16())
    r.string(True)
    for _ in range(r.count(True)):
        t = r.string(True)
        for _ in range(r.count(True)):
            p, err = r.i32(), r.i16()
            r.string(True)
            r.tags(True)
            print(t, p, err)
        r.tags(True)


def main():
    try:
        if sys.argv[1] == "elect":
            elect(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6] if len(sys.argv) > 6 else "")
        elif sys.argv[1] == "alter":
            alter(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
        else:
            raise ValueError("unknown command " + sys.argv[1])
    except (OSError, ValueError, IndexError, struct.error) as e:
        print("error:", e, file=sys.stderr)
        sys.exit(2)


main()
