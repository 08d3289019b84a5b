#!/usr/bin/env bash
# Idempotent produce with hand-made frames (batches built by kafka-python's
# own record builder): InitProducerId hands out an id; a retried batch gets
# its original offsets and is stored once; a sequence gap is
# OUT_OF_ORDER_SEQUENCE_NUMBER (45); an older epoch after a bump is
# INVALID_PRODUCER_EPOCH (47); an unknown producer id with a non-zero
# sequence is UNKNOWN_PRODUCER_ID (59); a corrupted CRC is CORRUPT_MESSAGE
# (2); a transactional batch without a transactional id is refused (INVALID_RECORD, 87); LogAppendTime topics get the
# broker's time. Producer state survives a restart.
. "$(dirname "$0")/lib.sh"

sk_start_cluster 1
PORT=${SK_KAFKA_PORT[1]}
B=127.0.0.1:$PORT
echo "seed" | kcat -b "$B" -P -t idem 2>/dev/null   # auto-create

run_py() {
PYTHONPATH="$(dirname "$0")/clients" "$SK_PY" - "$PORT" "$1" <<'PY'
import socket, struct, sys, json, os
from kwire import recv_exact  # clients/kwire.py: an answer read to its end
def recv_all(s, n):
    return recv_exact(s, n) or b""
from kafka.record.default_records import DefaultRecordBatchBuilder
port, phase = int(sys.argv[1]), sys.argv[2]
state_file = os.environ["SK_STATE"]
s = socket.create_connection(("127.0.0.1", port), timeout=10)
corr = [0]
def call(key, ver, body):
    corr[0] += 1
    p = struct.pack(">hhih", key, ver, corr[0], 1) + b"t" + body
    s.sendall(struct.pack(">i", len(p)) + p)
    n = struct.unpack(">i", recv_all(s, 4))[0]
    return recv_all(s, n)[4:]
def string(x): return struct.pack(">h", len(x)) + x
def batch(pid, epoch, seq, n=3, txn=False, ts=None):
    b = DefaultRecordBatchBuilder(2, 0, txn, pid, epoch, seq, 1 << 20)
    for i in range(n): b.append(i, ts if ts is not None else 1000 + i, b"k", b"v%d" % (seq + i), [])
    return bytes(b.build())
def produce(topic, records, ver=3):
    body = struct.pack(">h", -1) + struct.pack(">hii", -1, 5000, 1) + string(topic) + struct.pack(">ii", 1, 0)
    body += struct.pack(">i", len(records)) + records
    d = call(0, ver, body)
    l = struct.unpack(">h", d[4:6])[0]
    part, err, base = struct.unpack(">ihq", d[6 + l + 4:6 + l + 4 + 14])
    lat = struct.unpack(">q", d[6 + l + 4 + 14:6 + l + 4 + 22])[0] if ver >= 2 else None
    return err, base, lat
def check(name, cond, info=""):
    print(name, "ok" if cond else "FAIL %r" % (info,))
if phase == "1":
    d = call(22, 0, struct.pack(">hi", -1, 60000))
    _, err, pid, epoch = struct.unpack(">ihqh", d[:16])
    check("init_producer_id", err == 0 and pid >= 0 and epoch == 0, (err, pid, epoch))
    b0 = batch(pid, 0, 0)
    e1 = produce(b"idem", b0); e2 = produce(b"idem", b0)
    check("first_append", e1[0] == 0 and e1[1] == 1, e1)
    check("retry_same_offsets", e2[:2] == e1[:2], (e1, e2))
    check("gap_out_of_order", produce(b"idem", batch(pid, 0, 10))[0] == 45)
    check("next_in_sequence", produce(b"idem", batch(pid, 0, 3))[:2] == (0, 4))
    check("epoch_bump", produce(b"idem", batch(pid, 1, 0))[:2] == (0, 7))
    check("old_epoch_fenced", produce(b"idem", batch(pid, 0, 6))[0] == 47)
    check("unknown_producer", produce(b"idem", batch(pid + 500000, 0, 5))[0] == 59)
    bad = bytearray(batch(pid, 1, 3)); bad[-1] ^= 0xff
    check("corrupt_crc", produce(b"idem", bytes(bad))[0] == 2)
    # a transactional batch without a transactional id in the request: INVALID_RECORD
    check("transactional_without_id", produce(b"idem", batch(pid, 1, 3, txn=True))[0] == 87)
    json.dump({"pid": pid}, open(state_file, "w"))
    # LogAppendTime topic: CreateTopics v0 with message.timestamp.type
    body = struct.pack(">i", 1) + string(b"lat") + struct.pack(">ihi", 1, 1, 0) + struct.pack(">i", 1) + string(b"message.timestamp.type") + string(b"LogAppendTime") + struct.pack(">i", 5000)
    call(19, 0, body)
    err, base, lat = produce(b"lat", batch(-1, -1, -1, ts=1000), ver=3)
    check("log_append_time", err == 0 and lat is not None and lat > 1600000000000, (err, base, lat))
else:
    pid = json.load(open(state_file))["pid"]
    # after a restart the retried batch of epoch 1 seq 0 is still a duplicate
    e = produce(b"idem", batch(pid, 1, 0))
    check("dedup_after_restart", e[:2] == (0, 7), e)
    check("sequence_continues_after_restart", produce(b"idem", batch(pid, 1, 3))[:2] == (0, 10))
PY
}
export SK_STATE=$SK_TMP/state.json
run_py 1 > "$SK_TMP/idem.out" 2>&1
sk_stop_node 1
sk_start_node 1
sk_wait_port "$PORT" 30 || sk_fail "restart"
run_py 2 >> "$SK_TMP/idem.out" 2>&1
cat "$SK_TMP/idem.out"
for what in init_producer_id first_append retry_same_offsets gap_out_of_order next_in_sequence epoch_bump old_epoch_fenced unknown_producer corrupt_crc transactional_without_id log_append_time dedup_after_restart sequence_continues_after_restart; do
  sk_check "$what" grep -q "^$what ok" "$SK_TMP/idem.out"
done
n=$(kcat -b "$B" -C -t idem -o beginning -e -q 2>/dev/null | wc -l)
sk_check "stored once: seed + 4 batches x 3 = 13 records (got $n)" test "$n" -eq 13
sk_stop_node 1
sk_summary t_broker_idempotence
