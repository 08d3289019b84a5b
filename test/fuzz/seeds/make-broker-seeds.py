#!/usr/bin/python3
"""Writes the seeds of the broker/storage decoder fuzz targets (fuzz_config,
fuzz_image_snapshot, fuzz_metadata_record, fuzz_txn_log, fuzz_checkpoint)
and fuzz_config.dict. Protobuf and Kafka encodings are written by hand from
broker/metadata.proto and protocol/schema/transaction_log_*.kps, so that the
seeds do not depend on the code under test."""
import os, struct, zlib

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.normpath(os.path.join(here, "..", "..", ".."))

def put(target, name, blob):
    d = os.path.join(here, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(blob)

# ---- protobuf (proto2 wire format) ------------------------------------------
def varint(v):
    if v < 0:
        v += 1 << 64
    out = b""
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])

def f_int(num, v):
    return varint(num << 3) + varint(v)

def f_bytes(num, b):
    if isinstance(b, str):
        b = b.encode()
    return varint(num << 3 | 2) + varint(len(b)) + b

def rec(kind, body):   # MetadataRecord oneof field number -> message bytes
    return f_bytes(kind, body)

UUID_A = bytes(range(1, 17))
UUID_B = bytes(range(17, 33))
def endpoint(l, h, p): return f_bytes(1, l) + f_bytes(2, h) + f_int(3, p)
def registration(bid, epoch, fenced=True, rack=None):
    b = f_int(1, bid) + f_bytes(2, bytes([bid]) * 16) + f_int(3, epoch)
    b += f_bytes(4, endpoint("PLAINTEXT", "127.0.0.1", 19090 + bid))
    if rack:
        b += f_bytes(5, rack)
    return rec(1, b + f_int(6, 1 if fenced else 0))
def fence(bid, epoch, fenced, shutdown=False):
    return rec(2, f_int(1, bid) + f_int(2, epoch) + f_int(3, 1 if fenced else 0) + f_int(4, 1 if shutdown else 0))
def unregister(bid, epoch): return rec(3, f_int(1, bid) + f_int(2, epoch))
def topic(name, uuid): return rec(4, f_bytes(1, name) + f_bytes(2, uuid))
def partition(uuid, pid, reps, isr, leader, le=0, pe=0):
    b = f_bytes(1, uuid) + f_int(2, pid)
    b += b"".join(f_int(3, r) for r in reps) + b"".join(f_int(4, r) for r in isr)
    return rec(5, b + f_int(7, leader) + f_int(8, le) + f_int(9, pe))
def change(uuid, pid, leader=None, isr=None):
    b = f_bytes(1, uuid) + f_int(2, pid)
    if leader is not None:
        b += f_int(3, leader)
    if isr is not None:
        b += f_int(4, 1) + b"".join(f_int(5, r) for r in isr)
    return rec(6, b)
def removal(uuid): return rec(7, f_bytes(1, uuid))
def config(rtype, rname, name, value=None):
    b = f_int(1, rtype) + f_bytes(2, rname) + f_bytes(3, name)
    return rec(8, b + (f_bytes(4, value) if value is not None else b""))
def pid_block(bid, epoch, nxt): return rec(9, f_int(1, bid) + f_int(2, epoch) + f_int(3, nxt))
NOOP = rec(10, b"")
def scram(name, mech, iters, fill=1):
    kl = 32 if mech == 1 else 64
    return rec(11, f_bytes(1, name) + f_int(2, mech) + f_bytes(3, bytes([fill]) * 16) +
               f_bytes(4, bytes([fill + 1]) * kl) + f_bytes(5, bytes([fill + 2]) * kl) + f_int(6, iters))
def scram_remove(name, mech): return rec(12, f_bytes(1, name) + f_int(2, mech))
SCRAM_DONE = rec(13, b"")
def f_double(num, v): return varint(num << 3 | 1) + struct.pack("<d", v)
def quota(parts, key, value=None, remove=False):   # parts: [(type, name or None)]
    b = b"".join(f_bytes(1, f_bytes(1, t) + (f_bytes(2, n) if n is not None else b"")) for t, n in parts)
    b += f_bytes(2, key)
    if value is not None:
        b += f_double(3, value)
    if remove:
        b += f_int(4, 1)
    return rec(24, b)

history = [
    registration(1, 0), registration(2, 1, rack="r2"), fence(1, 0, False), fence(2, 1, False),
    topic("orders", UUID_A), partition(UUID_A, 0, [1, 2], [1, 2], 1), partition(UUID_A, 1, [2, 1], [2], 2, 3, 4),
    change(UUID_A, 0, leader=2), change(UUID_A, 1, isr=[2, 1]), config(2, "orders", "retention.ms", "1000"),
    config(4, "", "log.retention.ms", "5000"), topic("gone", UUID_B), partition(UUID_B, 0, [1], [1], 1),
    removal(UUID_B), pid_block(1, 0, 1000), fence(2, 1, True, True), NOOP, config(2, "orders", "retention.ms"),
    unregister(2, 1),
]
put("fuzz_metadata_record", "history.bin", b"".join(struct.pack(">H", len(r)) + r for r in history))
scram_history = [scram("admin", 1, 4096), scram("admin", 2, 8192, 5), scram("a,b=c", 1, 16384), SCRAM_DONE,
                 scram("admin", 1, 4096, 9), scram_remove("admin", 2), scram_remove("nobody", 1),
                 scram("low", 1, 1000), scram("", 2, 4096)]
put("fuzz_metadata_record", "scram.bin", b"".join(struct.pack(">H", len(r)) + r for r in scram_history))
quota_history = [quota([("user", "alice")], "producer_byte_rate", 1024.0),
                 quota([("user", "alice"), ("client-id", "app")], "request_percentage", 12.5),
                 quota([("user", None)], "consumer_byte_rate", 4096.0), quota([("client-id", None)], "consumer_byte_rate", 1.0),
                 quota([("user", "alice")], "producer_byte_rate", remove=True),
                 quota([("user", "x"), ("user", "y")], "producer_byte_rate", 1.0), quota([("ip", "1.2.3.4")], "producer_byte_rate", 1.0),
                 quota([("user", "z")], "no_such_key", 1.0), quota([("user", "z")], "producer_byte_rate", -1.0), quota([], "producer_byte_rate", 5.0)]
put("fuzz_metadata_record", "quota.bin", b"".join(struct.pack(">H", len(r)) + r for r in quota_history))
put("fuzz_metadata_record", "topic.bin", b"".join(struct.pack(">H", len(r)) + r for r in history[4:7]))

def snapshot(last_offset, last_epoch, cluster, records):
    return f_int(1, last_offset) + f_int(2, last_epoch) + f_bytes(3, cluster) + b"".join(f_bytes(4, r) for r in records)
snap_recs = [registration(1, 0, fenced=False), registration(2, 1, rack="r2"), fence(2, 1, True, True),
             topic("orders", UUID_A), partition(UUID_A, 0, [1, 2], [1, 2], 1, 5, 7),
             partition(UUID_A, 1, [2, 1], [2], 2), config(2, "orders", "cleanup.policy", "compact"),
             config(4, "1", "log.retention.ms", "5000"), pid_block(1, 0, 2000)]
put("fuzz_image_snapshot", "full.bin", snapshot(41, 3, "ar0DNXesQhGRYTX9vNaGFg", snap_recs))
put("fuzz_image_snapshot", "scram.bin", snapshot(7, 2, "c", [scram("admin", 1, 4096), scram("bob", 2, 8192), SCRAM_DONE]))
put("fuzz_image_snapshot", "quota.bin", snapshot(9, 2, "c", quota_history[:4]))
put("fuzz_image_snapshot", "empty.bin", snapshot(-1, -1, "c", []))
put("fuzz_image_snapshot", "local-follower.bin", snapshot(9, 1, "c", [topic("t", UUID_B), partition(UUID_B, 0, [2, 1], [2, 1], 2)]))

# ---- __transaction_state records (INT16 version + Kafka encoding) ------------
def kstr(s):
    s = s.encode()
    return struct.pack(">h", len(s)) + s
def txn_key(tid): return struct.pack(">h", 0) + kstr(tid)
def txn_value(pid, epoch, timeout, status, parts, upd, start):
    if parts is None:
        arr = struct.pack(">i", -1)
    else:
        arr = struct.pack(">i", len(parts)) + b"".join(
            kstr(t) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in ps) for t, ps in parts)
    return (struct.pack(">h", 0) + struct.pack(">qhib", pid, epoch, timeout, status) + arr +
            struct.pack(">qq", upd, start))
def txn_rec(key, value):
    if value is None:
        return struct.pack(">HH", len(key), 0xffff) + key
    return struct.pack(">HH", len(key), len(value)) + key + value
T0 = 1700000000000
txn_history = [
    txn_rec(txn_key("tx-a"), txn_value(1000, 0, 60000, 0, None, T0, -1)),
    txn_rec(txn_key("tx-a"), txn_value(1000, 0, 60000, 1, [("orders", [0, 1]), ("pay", [3])], T0 + 1, T0 + 1)),
    txn_rec(txn_key("tx-a"), txn_value(1000, 0, 60000, 2, [("orders", [0, 1]), ("pay", [3])], T0 + 2, T0 + 1)),
    txn_rec(txn_key("tx-b"), txn_value(1001, 5, 900000, 3, [("x", [7])], T0 + 3, T0)),
    txn_rec(txn_key("tx-a"), txn_value(1000, 0, 60000, 4, [], T0 + 4, T0 + 1)),
    txn_rec(txn_key("tx-c"), txn_value(1002, 1, 1000, 1, [("x", [1])], T0, T0)),
    txn_rec(txn_key("tx-a"), None),
]
put("fuzz_txn_log", "history.bin", b"".join(txn_history))
put("fuzz_txn_log", "ongoing.bin", txn_history[1])
put("fuzz_txn_log", "tombstone.bin", txn_history[-1])

# ---- storage small files (fuzz_checkpoint: byte 0 selects the file) ---------
put("fuzz_checkpoint", "offsets.bin", b"\x00" + b"0\n3\norders 0 42\norders 1 -1\n__consumer_offsets 49 7\n")
put("fuzz_checkpoint", "offsets-empty.bin", b"\x00" + b"0\n0\n")
put("fuzz_checkpoint", "meta.bin", b"\x01\xff" + b"version=1\ncluster.id=ar0DNXesQhGRYTX9vNaGFg\nnode.id=2\n")
for op in range(4):
    put("fuzz_checkpoint", "epochs-%d.bin" % op, bytes([2, op | 8]) + b"0\n3\n0 0\n2 100\n5 100\n")
snap_entry = struct.pack(">qhiqqb", 1000, 2, 7, -1, T0, 2) + b"".join(
    struct.pack(">iiqq", s, s + 4, 10 * s, 10 * s + 4) for s in (0, 5)) + bytes(24 * 3)
snap_body = struct.pack(">IHqI", 0x534b5053, 1, 7, 1) + snap_entry
put("fuzz_checkpoint", "ps-fixcrc.bin", b"\x83" + snap_body)
# CRC-32C (Castagnoli), bitwise: the file's own trailer
def crc32c(b):
    c = 0xffffffff
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82f63b78 if c & 1 else 0)
    return c ^ 0xffffffff
put("fuzz_checkpoint", "ps.bin", b"\x03" + snap_body + struct.pack(">I", crc32c(snap_body)))
put("fuzz_checkpoint", "txnindex.bin", b"\x04" + b"".join(struct.pack(">hqqqq", 0, 1000 + i, 10 * i, 10 * i + 5, 10 * i) for i in range(3)))
put("fuzz_checkpoint", "topic-id.bin", b"\x05" + b"version: 0\ntopic_id: AQIDBAUGBwgJCgsMDQ4PEA\n")
put("fuzz_checkpoint", "logdir.bin", b"\x86" + b"0\n2\norders 0 42\norders 1 7\n")

# ---- config files ------------------------------------------------------------
with open(os.path.join(root, "etc", "single-node.conf"), "rb") as f:
    single = f.read()
with open(os.path.join(root, "etc", "cluster.conf"), "rb") as f:
    cluster = f.read()
put("fuzz_config", "single.bin", b"\x07" + single)
put("fuzz_config", "cluster-node2.bin", b"\x02" + cluster)
put("fuzz_config", "sets.bin", b"\x07" + single + b"\0log.retention.ms=1000\0num.partitions=3\0log.cleanup.policy=compact")
put("fuzz_config", "args.bin", b"\x0f" + cluster + b"\0--node\x002\0--set=min.insync.replicas=2\0--set\0log.segment.bytes=1048576")
put("fuzz_config", "dynamic.bin", b"\x17" + single + b"\0message.max.bytes=2000000")

# dictionary: every key name (from the key table) and the syntax around it
with open(os.path.join(root, "broker", "config_keys.h")) as f:
    import re
    keys = sorted(set(re.findall(r'X\([A-Z0-9_]+, "([a-z0-9.]+)"', f.read())))
words = keys + ["[node.", "]", "=", "#", "--set", "--node", "--config", "PLAINTEXT://", "CONTROLLER://",
                "broker,controller", "@127.0.0.1:", "localhost", ":9092", "true", "false", "-1",
                "9223372036854775807", "2147483647", "compact,delete", "CreateTime", "zstd"]
with open(os.path.join(root, "test", "fuzz", "fuzz_config.dict"), "w") as f:
    f.write("# libFuzzer dictionary for fuzz_config (written by seeds/make-broker-seeds.py)\n")
    for w in words:
        f.write('"%s"\n' % w.replace("\\", "\\\\").replace('"', '\\"'))

# ---- admin HTTP requests (fuzz_admin_http sends them as raw bytes) ----------
put("fuzz_admin_http", "healthz.txt", b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
put("fuzz_admin_http", "topic.txt", b"GET /v1/topics/or%2Fders%C3%A9?q=a%20b&x=1 HTTP/1.1\r\nHost: x\r\n\r\n")
put("fuzz_admin_http", "partition.txt", b"GET /v1/topics/t/partitions/%FF%FE HTTP/1.0\r\n\r\n")
put("fuzz_admin_http", "post.txt", b"POST /v1/topics/t HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
put("fuzz_admin_http", "pipelined.txt", b"GET /v1/cluster HTTP/1.1\r\nHost: x\r\n\r\nDELETE /v1/topics/a HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\n\r\n")
put("fuzz_admin_http", "bad-escape.txt", b"GET /v1/topics/%0 HTTP/1.1\r\nHost: x\r\n\r\n")

# ---- __consumer_offsets records (fuzz_group_records) -------------------------
def kbytes(b):
    return struct.pack(">i", len(b)) + b
def knstr(s):
    return struct.pack(">h", -1) if s is None else kstr(s)
def grp_key(g): return struct.pack(">h", 2) + kstr(g)
def off_key(g, t, p, kind=1): return struct.pack(">h", kind) + kstr(g) + kstr(t) + struct.pack(">i", p)
def grp_value(ptype, gen, proto, leader, ts, members):
    b = struct.pack(">h", 3) + kstr(ptype) + struct.pack(">i", gen) + knstr(proto) + knstr(leader)
    b += struct.pack(">qi", ts, len(members))
    for mid, inst, cid, host, reb, sess, sub, asg in members:
        b += kstr(mid) + knstr(inst) + kstr(cid) + kstr(host) + struct.pack(">ii", reb, sess) + kbytes(sub) + kbytes(asg)
    return b
def off_value_v3(off, epoch, meta, ts): return struct.pack(">hqi", 3, off, epoch) + kstr(meta) + struct.pack(">q", ts)
def off_value_v1(off, meta, ts, exp): return struct.pack(">hq", 1, off) + kstr(meta) + struct.pack(">qq", ts, exp)
grp_history = [
    txn_rec(grp_key("g1"), grp_value("consumer", 3, "range", "m-1", T0, [
        ("m-1", None, "c1", "/127.0.0.1", 300000, 45000, b"\x00\x01sub", b"\x00\x01asg"),
        ("m-2", "static-2", "c2", "/127.0.0.1", -1, 10000, b"", b"")])),
    txn_rec(off_key("g1", "orders", 0), off_value_v3(42, 5, "meta", T0)),
    txn_rec(off_key("g1", "orders", 1), off_value_v1(7, "", T0, T0 + 1000)),
    txn_rec(off_key("g2", "pay", 3, kind=0), off_value_v3(1, -1, "", T0)),
    txn_rec(grp_key("g3"), grp_value("", 0, None, None, -1, [])),
    txn_rec(off_key("g1", "orders", 1), None),
    txn_rec(grp_key("g2"), None),
]
put("fuzz_group_records", "history.bin", b"".join(grp_history))
put("fuzz_group_records", "group.bin", grp_history[0])
put("fuzz_group_records", "offset.bin", grp_history[1])

# ---- metadata log batches (fuzz_meta_log: u8 flags, u8 count, u16-len records)
def meta_batch(flags, recs):
    return bytes([flags, len(recs)]) + b"".join(struct.pack(">H", len(r)) + r for r in recs)
put("fuzz_meta_log", "history.bin", meta_batch(0, history[:4]) + meta_batch(2, []) + meta_batch(0, history[4:]))
put("fuzz_meta_log", "one-batch.bin", meta_batch(0, history))
put("fuzz_meta_log", "gzip.bin", meta_batch(0, history[:2]) + meta_batch(1, history[2:4]))
put("fuzz_meta_log", "bad-record.bin", meta_batch(0, history[:3] + [b"\xff\xff"] + history[3:5]))
