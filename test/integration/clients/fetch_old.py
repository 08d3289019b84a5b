"""Raw Fetch v0-v9 for t_fetch_old_versions.sh: build one request, read the
answer, decode it (partition errors, HW/LSO, aborted transactions, the
records of magic 0/1 message sets or v2 batches, through kafka-python's
record readers).

  fetch_old.py produce BOOTSTRAP               the data of the test (below)
  fetch_old.py dump PORT VERSION ISO MAXB PMAXB TOPIC:P:OFF[,...]
      one request; prints a JSON document per partition on one line each
  fetch_old.py digest PORT OUT                  a fixed matrix of requests
      (every version 0-9, several limits, isolation levels) against topics
      `old` and `oldtx`; writes "name sha256" lines to OUT (raw answer bytes)
"""
import hashlib
import json
import socket
import struct
import sys

from kafka.record import MemoryRecords

from kwire import Rd, recv_exact  # the suite's bounds-checked wire reader


def s16(b):
    return struct.pack(">h", len(b)) + b


def request(version, parts, iso=0, max_bytes=50 << 20, corr=1, max_wait=0, min_bytes=0):
    """parts: [(topic, partition, offset, partition_max_bytes)] in order
    (consecutive entries of one topic share its entry)."""
    b = struct.pack(">iii", -1, max_wait, min_bytes)
    if version >= 3:
        b += struct.pack(">i", max_bytes)
    if version >= 4:
        b += struct.pack(">b", iso)
    if version >= 7:
        b += struct.pack(">ii", 0, -1)   # no session
    groups = []
    for t, p, off, pm in parts:
        if not groups or groups[-1][0] != t:
            groups.append((t, []))
        groups[-1][1].append((p, off, pm))
    b += struct.pack(">i", len(groups))
    for t, ps in groups:
        b += s16(t.encode()) + struct.pack(">i", len(ps))
        for p, off, pm in ps:
            b += struct.pack(">i", p)
            if version >= 9:
                b += struct.pack(">i", -1)
            b += struct.pack(">q", off)
            if version >= 5:
                b += struct.pack(">q", -1)
            b += struct.pack(">i", pm)
    if version >= 7:
        b += struct.pack(">i", 0)        # forgotten topics
    hdr = struct.pack(">hhi", 1, version, corr) + s16(b"fetch-old")
    return hdr + b


def roundtrip(s, req):
    s.sendall(struct.pack(">i", len(req)) + req)
    size = recv_exact(s, 4)
    ans = recv_exact(s, struct.unpack(">i", size)[0]) if size is not None else None
    if ans is None:
        raise EOFError("connection closed")
    return ans


def parse(version, ans):
    r = Rd(ans)
    r.i32()                               # correlation id
    if version >= 1:
        r.i32()                           # throttle
    if version >= 7:
        r.i16(); r.i32()                  # error, session
    out = []
    for _ in range(r.i32()):
        topic = r.take(r.i16()).decode()
        for _ in range(r.i32()):
            d = {"topic": topic, "partition": r.i32(), "error": r.i16(), "hw": r.i64()}
            if version >= 4:
                d["lso"] = r.i64()
                if version >= 5:
                    d["log_start"] = r.i64()
                n = r.i32()
                d["aborted"] = [(r.i64(), r.i64()) for _ in range(max(n, 0))]
            n = r.i32()
            d["records_bytes"] = max(n, 0)
            d["records"] = records(r.take(n)) if n > 0 else []
            out.append(d)
    if r.i != len(ans):
        raise ValueError("trailing bytes in the answer")
    return out


def records(raw):
    """[(offset, key, value, magic, producer_id, is_control)] of whole
    batches / messages; a partial one at the end is dropped."""
    out = []
    mr = MemoryRecords(raw)
    while mr.has_next():
        batch = mr.next_batch()
        if batch is None:
            break
        magic = getattr(batch, "magic", None)
        if magic is None:
            magic = batch._magic             # kafka-python 2.0's LegacyRecordBatch
        pid = -1
        if magic == 2:   # kafka-python 2.0 has no property for it: the header's 10th field
            pid = getattr(batch, "producer_id", None)
            pid = batch._header_data[9] if pid is None else pid
        ctrl = bool(getattr(batch, "is_control_batch", False)) if magic == 2 else False
        for rec in batch:
            k = rec.key.decode("latin-1") if rec.key is not None else None
            v = rec.value.decode("latin-1") if rec.value is not None else None
            out.append((rec.offset, k, v, magic, pid, ctrl))
    return out


CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PER_PART = 40            # messages per partition of `old`, in batches of BATCH
BATCH = 5


def expected(p):
    """[(key, value)] produced to old-p: p0 none (with headers), p1 gzip,
    p2 snappy, p3 lz4, p4 zstd, p5 lz4 / zstd / none batches in turn."""
    return [("k%d-%d" % (p, i), "v%d-%d-" % (p, i) + "x" * (i % 7) * 10) for i in range(PER_PART)]


def codec_of(p, batch):
    return CODECS[p] if p < 5 else ("lz4", "zstd", "none")[batch % 3]


def cmd_produce(argv):
    from confluent_kafka import Producer
    boot = argv[0]
    producers = {}

    def producer(codec):
        if codec not in producers:
            producers[codec] = Producer({"bootstrap.servers": boot, "compression.type": codec, "linger.ms": 1000,
                                         "batch.num.messages": BATCH, "acks": "all"})
        return producers[codec]
    for p in range(6):
        msgs = expected(p)
        for b in range(PER_PART // BATCH):
            pr = producer(codec_of(p, b))
            for k, v in msgs[b * BATCH:(b + 1) * BATCH]:
                # p0 carries headers: dropped by the down-conversion, so v0-3
                # answers of it are smaller than the batches read
                hdrs = [("h", b"y" * 300)] if p == 0 else None
                pr.produce("old", key=k.encode(), value=v.encode(), partition=p, headers=hdrs)
            if pr.flush(20) != 0:
                sys.exit("produce to old-%d not flushed" % p)
    # oldtx: committed, aborted, committed transactions of one producer, and
    # plain records of another between them
    tp = Producer({"bootstrap.servers": boot, "transactional.id": "fetch-old-tx", "compression.type": "lz4"})
    plain = producer("none")
    tp.init_transactions(20)
    for t, end in enumerate(("commit", "abort", "commit")):
        tp.begin_transaction()
        for i in range(10):
            tp.produce("oldtx", value=("tx%d-%s-%d" % (t, end, i)).encode(), partition=0)
        tp.flush(20)
        plain.produce("oldtx", value=("plain-%d" % t).encode(), partition=0)
        plain.flush(20)
        (tp.commit_transaction if end == "commit" else tp.abort_transaction)(20)
    print("produced")


def cmd_dump(argv):
    port, version, iso, maxb, pmaxb = (int(x) for x in argv[:5])
    parts = []
    for spec in argv[5].split(","):
        t, p, off = spec.rsplit(":", 2)
        parts.append((t, int(p), int(off), pmaxb))
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    for d in parse(version, roundtrip(s, request(version, parts, iso, maxb))):
        print(json.dumps(d))


def matrix():
    """(name, version, parts, iso, max_bytes) of the digest run."""
    mix = [("old", p, 0) for p in range(6)]
    mid = [("old", p, 7) for p in range(6)]
    tx = [("oldtx", 0, 0)]
    out = []
    for v in range(10):
        isos = (0, 1) if v >= 4 else (0,)
        for iso in isos:
            for name, parts in (("all", mix), ("mid", mid), ("tx", tx)):
                for pm, mb in ((1 << 20, 50 << 20), (1000, 3000), (100, 1 << 20), (1 << 20, 1), (64 << 10, 20000)):
                    if v < 3 and mb != 50 << 20 and pm == 1 << 20:
                        continue                     # no max_bytes below v3
                    out.append(("v%d-iso%d-%s-pm%d-mb%d" % (v, iso, name, pm, mb), v,
                                [(t, p, o, pm) for t, p, o in parts], iso, mb))
            # zstd first, then the others: the answer goes on after an error
            out.append(("v%d-iso%d-zfirst" % (v, iso), v,
                        [("old", p, 0, 1 << 20) for p in (4, 5, 0, 3)], iso, 50 << 20))
    return out


def cmd_digest(argv):
    port, path = int(argv[0]), argv[1]
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    with open(path, "w") as f:
        for i, (name, v, parts, iso, mb) in enumerate(matrix()):
            ans = roundtrip(s, request(v, parts, iso, mb, corr=i + 1))
            f.write("%s %s %d\n" % (name, hashlib.sha256(ans).hexdigest(), len(ans)))


if __name__ == "__main__":
    {"produce": cmd_produce, "dump": cmd_dump, "digest": cmd_digest}[sys.argv[1]](sys.argv[2:])
