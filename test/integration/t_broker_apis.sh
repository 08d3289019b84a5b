#!/usr/bin/env bash
# APIs the common clients rarely send, driven with hand-encoded v0 frames
# (python struct) plus kafka-python's admin for CreateTopics errors:
# DeleteRecords moves the log start (ListOffsets earliest follows, consumers
# start there), OffsetForLeaderEpoch gives the epoch's end offset,
# DescribeLogDirs lists the partition with its size, CreateTopics errors
# (bad name 17, exists 36, partitions 37, replication factor 38) and
# validate_only creating nothing.
. "$(dirname "$0")/lib.sh"

sk_start_cluster 1
PORT=${SK_KAFKA_PORT[1]}
B=127.0.0.1:$PORT
seq 0 99 | sed 's/^/r/' | kcat -b "$B" -P -t apis 2>/dev/null

PYTHONPATH="$(dirname "$0")/clients" "$SK_PY" - "$PORT" > "$SK_TMP/apis.out" 2>&1 <<'PY'
import socket, struct, sys
from kwire import recv_exact  # clients/kwire.py: an answer read to its end
def recv_all(s, n):
    return recv_exact(s, n) or b""
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port), timeout=10)
corr = [0]
def call(key, ver, body):
    corr[0] += 1
    hdr = struct.pack(">hhih", key, ver, corr[0], 1) + b"t"
    p = hdr + body
    s.sendall(struct.pack(">i", len(p)) + p)
    n = struct.unpack(">i", recv_all(s, 4))[0]
    d = recv_all(s, n)
    assert struct.unpack(">i", d[:4])[0] == corr[0]
    return d[4:]
def string(x): return struct.pack(">h", len(x)) + x
topic = b"apis"
# DeleteRecords v0: [topic [partition offset]] timeout
d = call(21, 0, struct.pack(">i", 1) + string(topic) + struct.pack(">iiq", 1, 0, 40) + struct.pack(">i", 5000))
# throttle, [name [partition low_watermark error]]
_, nt = struct.unpack(">ii", d[:8]); l = struct.unpack(">h", d[8:10])[0]
part, low, err = struct.unpack(">iqh", d[14 + l:14 + l + 14])
print("delete_records", "ok" if (err, low) == (0, 40) else "FAIL %d %d" % (err, low))
# beyond the HW -> OFFSET_OUT_OF_RANGE (1)
d = call(21, 0, struct.pack(">i", 1) + string(topic) + struct.pack(">iiq", 1, 0, 1000) + struct.pack(">i", 5000))
part, low, err = struct.unpack(">iqh", d[14 + l:14 + l + 14])
print("delete_records_beyond_hw", "ok" if err == 1 else "FAIL %d" % err)
# ListOffsets v1 earliest: replica_id [topic [partition timestamp]]
d = call(2, 1, struct.pack(">ii", -1, 1) + string(topic) + struct.pack(">iiq", 1, 0, -2))
nt = struct.unpack(">i", d[:4])[0]; l = struct.unpack(">h", d[4:6])[0]
part, err, ts, off = struct.unpack(">ihqq", d[6 + l + 4:6 + l + 4 + 22])
print("list_offsets_earliest", "ok" if (err, off) == (0, 40) else "FAIL %d %d" % (err, off))
# OffsetForLeaderEpoch v0: [topic [partition leader_epoch]]
d = call(23, 0, struct.pack(">i", 1) + string(topic) + struct.pack(">iii", 1, 0, 0))
nt = struct.unpack(">i", d[:4])[0]; l = struct.unpack(">h", d[4:6])[0]
err, part, end = struct.unpack(">hiq", d[6 + l + 4:6 + l + 4 + 14])
print("offset_for_leader_epoch", "ok" if err == 0 and 0 <= end <= 100 else "FAIL %d %d" % (err, end))
# unknown topic -> 3
d = call(23, 0, struct.pack(">i", 1) + string(b"nope") + struct.pack(">iii", 1, 0, 0))
err = struct.unpack(">h", d[4 + 2 + 4 + 4:4 + 2 + 4 + 4 + 2])[0]
print("offset_for_leader_epoch_unknown", "ok" if err == 3 else "FAIL %d" % err)
# DescribeLogDirs v0, null topics = all: throttle [error dir [topic [partition size lag future]]]
d = call(35, 0, struct.pack(">i", -1))
_, ndirs = struct.unpack(">ii", d[:8]); err, l = struct.unpack(">hh", d[8:12])
pos = 12 + l
nt = struct.unpack(">i", d[pos:pos + 4])[0]; pos += 4
found = False
for _ in range(nt):
    l = struct.unpack(">h", d[pos:pos + 2])[0]; name = d[pos + 2:pos + 2 + l]; pos += 2 + l
    np = struct.unpack(">i", d[pos:pos + 4])[0]; pos += 4
    for _ in range(np):
        part, size, lag, fut = struct.unpack(">iqq?", d[pos:pos + 21]); pos += 21
        if name == topic and part == 0 and size > 0: found = True
print("describe_log_dirs", "ok" if ndirs == 1 and err == 0 and found else "FAIL")
PY

"$SK_PY" - "$B" >> "$SK_TMP/apis.out" 2>&1 <<'PY'
import sys
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.protocol.admin import CreateTopicsRequest
a = KafkaAdminClient(bootstrap_servers=sys.argv[1])
def codes(topics, validate_only=False):
    req = CreateTopicsRequest[3](create_topic_requests=[(n, p, r, [], []) for n, p, r in topics], timeout=5000, validate_only=validate_only)
    fut = a._send_request_to_node(a._controller_id, req)
    a._wait_for_futures([fut])
    return {t[0]: t[1] for t in fut.value.topic_errors}
c = codes([("bad name!", 1, 1), ("apis", 1, 1), ("zero", 0, 1), ("rf9", 1, 9), ("fine", 2, 1)])
print("create_errors", "ok" if c == {"bad name!": 17, "apis": 36, "zero": 37, "rf9": 38, "fine": 0} else "FAIL %r" % c)
c = codes([("vonly", 3, 1)], validate_only=True)
print("validate_only", "ok" if c == {"vonly": 0} and "vonly" not in a.list_topics() and "fine" in a.list_topics() else "FAIL %r" % c)
PY
cat "$SK_TMP/apis.out"
for what in delete_records delete_records_beyond_hw list_offsets_earliest offset_for_leader_epoch offset_for_leader_epoch_unknown describe_log_dirs create_errors validate_only; do
  sk_check "$what" grep -q "^$what ok" "$SK_TMP/apis.out"
done
first=$(kcat -b "$B" -C -t apis -o beginning -c 1 -e -q -f '%o %s' 2>/dev/null)
sk_check "consumers start at the new log start (got '$first')" test "$first" = "40 r40"
sk_stop_node 1
sk_summary t_broker_apis
