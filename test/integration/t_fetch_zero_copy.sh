#!/usr/bin/env bash
# Zero-copy fetch (issue 19): every PLAINTEXT Fetch v10+ of magic-2 data
# leaves as file ranges (sendfile), never read into memory by skiff. The
# node counts record bytes answered by path, skiff_fetch_record_bytes_total
# {path="file"|"copy"} (broker/api/fetch.h). Three nodes, topics RF 3:
#  1. librdkafka consumer (Fetch v11) over 6 partitions: many-partition answers;
#  2. the followers' replica fetches (v13) of every produced batch;
#  3. read_committed over a topic with an aborted and a committed transaction
#     (aborted-transaction index path): only the committed records arrive;
#  4. a KIP-227 session: raw Fetch v11 frames, full (epoch 0) then
#     incremental (epoch 1) after more data was produced;
#  => copy bytes stay 0 on every node, file bytes cover what was consumed.
#  5. control (the counter can see a copy): kafka-python pinned to 0.10.1
#     (Fetch v3, down-conversion) makes copy bytes > 0.
. "$(dirname "$0")/lib.sh"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
[ -x "$kload" ] || { echo "t_fetch_zero_copy: missing $kload"; exit 1; }
command -v jq >/dev/null || { echo "t_fetch_zero_copy: jq missing"; exit 1; }

sk_start_cluster 3 --set default.replication.factor=3 --set min.insync.replicas=2 \
  --set offsets.topic.replication.factor=3 --set transaction.state.log.replication.factor=3 \
  --set transaction.state.log.min.isr=2 --set broker.heartbeat.interval.ms=300
B=$SK_BOOTSTRAP
unfenced3() { test "$(curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[1]}/v1/cluster" |
  jq '[.brokers[] | select(.fenced == false)] | length' 2>/dev/null)" = 3; }
t=0; until unfenced3; do sleep 0.2; t=$((t + 1)); [ "$t" -lt 150 ] || sk_fail "3 unfenced brokers not seen"; done

# metric PATH -> sum over the 3 nodes of skiff_fetch_record_bytes_total{path=PATH}
metric() {
  local i s=0 v
  for i in 1 2 3; do
    v=$(curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[i]}/metrics" |
      awk -v p="$1" 'index($0, "skiff_fetch_record_bytes_total{path=\"" p "\"} ") == 1 { print $2 }')
    [ -n "$v" ] || { echo "missing"; return; }
    s=$(awk -v a="$s" -v b="$v" 'BEGIN { printf "%.0f", a + b }')
  done
  echo "$s"
}

sk_check "metric exported, zero at start" test "$(metric copy)" = 0

# 1 + 2: many partitions, acks=all (followers fetch every batch)
"$kload" create-topic --brokers "$B" --topic zc --partitions 6 --replication 3 >/dev/null 2>>"$SK_TMP/kload.err" ||
  sk_fail "create-topic zc"
"$kload" produce --brokers "$B" --topic zc --count 20000 --size 200 --acks all >"$SK_TMP/p.json" 2>>"$SK_TMP/kload.err"
sk_check "produce 20000 x 200 B acks=all" jq -e '.errors == 0 and .msgs == 20000' "$SK_TMP/p.json" >/dev/null
"$kload" consume --brokers "$B" --topic zc --count 20000 --timeout-s 30 >"$SK_TMP/c.json" 2>>"$SK_TMP/kload.err"
sk_check "librdkafka consumer got all 20000 over 6 partitions" jq -e '.distinct == 20000 and .corrupt == 0' "$SK_TMP/c.json" >/dev/null

# 3: read_committed with an aborted and a committed transaction, then 4: a session
"$kload" create-topic --brokers "$B" --topic zctx --partitions 1 --replication 3 >/dev/null 2>>"$SK_TMP/kload.err" ||
  sk_fail "create-topic zctx"
"$SK_PY" - "$B" >"$SK_TMP/txn.out" 2>&1 <<'PY'
import sys
from confluent_kafka import Producer, Consumer, TopicPartition
b = sys.argv[1]
p = Producer({"bootstrap.servers": b, "transactional.id": "zc-tx", "enable.idempotence": True})
p.init_transactions(20)
p.begin_transaction()
for i in range(50):
    p.produce("zctx", value=b"aborted-%d" % i)
p.flush(20)
p.abort_transaction(20)
p.begin_transaction()
for i in range(50):
    p.produce("zctx", value=b"committed-%d" % i)
p.commit_transaction(20)
c = Consumer({"bootstrap.servers": b, "group.id": "zc-rc", "isolation.level": "read_committed",
              "enable.auto.commit": False})
c.assign([TopicPartition("zctx", 0, 0)])
got = []
import time
end = time.time() + 20
while time.time() < end and len(got) < 50:
    m = c.poll(0.5)
    if m is not None and not m.error():
        got.append(m.value())
c.close()
ok = len(got) == 50 and all(v.startswith(b"committed-") for v in got)
print("PASS read_committed skips the aborted transaction" if ok else "FAIL read_committed: got %d, first %r" % (len(got), got[:2]))
PY
sk_check_lines <"$SK_TMP/txn.out"

# the leader of zctx-0 (sessions are per node)
leader=$(curl -s "127.0.0.1:${SK_ADMIN_PORT[1]}/v1/topics/zctx" | jq -r '.partitions[0].leader')
lport=""
for i in 1 2 3; do [ "$i" = "$leader" ] && lport=${SK_KAFKA_PORT[i]}; done
[ -n "$lport" ] || sk_fail "no leader for zctx-0 ($leader)"
"$SK_PY" - "$lport" "$B" >"$SK_TMP/sess.out" 2>&1 <<'PY'
import socket, struct, sys
from confluent_kafka import Producer
port, boot = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), timeout=15)
corr = [0]
def string(x): return struct.pack(">h", len(x)) + x
def recv(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c: raise EOFError
        b += c
    return b
def fetch(sid, epoch, off):
    """Fetch v11 of zctx-0 from `off`; returns (error, session id, record bytes)."""
    corr[0] += 1
    body = struct.pack(">iiiibii", -1, 100, 1, 1 << 20, 1, sid, epoch)
    body += struct.pack(">i", 1) + string(b"zctx") + struct.pack(">i", 1)
    body += struct.pack(">iiqqi", 0, -1, off, -1, 1 << 20)
    body += struct.pack(">i", 0) + string(b"")        # forgotten, rack
    hdr = struct.pack(">hhi", 1, 11, corr[0]) + string(b"zc")
    s.sendall(struct.pack(">i", len(hdr + body)) + hdr + body)
    size = struct.unpack(">i", recv(4))[0]
    r = recv(size)
    _, _, err, sid = struct.unpack(">iihi", r[:14])
    pos = 14
    ntop = struct.unpack(">i", r[pos:pos + 4])[0]; pos += 4
    recs = 0
    for _ in range(ntop):
        tl = struct.unpack(">h", r[pos:pos + 2])[0]; pos += 2 + tl
        nparts = struct.unpack(">i", r[pos:pos + 4])[0]; pos += 4
        for _ in range(nparts):
            pos += 4 + 2 + 8 + 8 + 8               # partition, error, hw, lso, log start
            nab = struct.unpack(">i", r[pos:pos + 4])[0]; pos += 4
            pos += max(nab, 0) * 16
            pos += 4                                # preferred read replica
            rl = struct.unpack(">i", r[pos:pos + 4])[0]; pos += 4
            recs += max(rl, 0); pos += max(rl, 0)
    return err, sid, recs
err, sid, recs = fetch(0, 0, 0)
print("PASS full session fetch opens a session with records" if err == 0 and sid != 0 and recs > 0
      else "FAIL full fetch: error %d session %d records %d" % (err, sid, recs))
p = Producer({"bootstrap.servers": boot, "acks": "all"})
for i in range(20):
    p.produce("zctx", value=b"late-%d" % i)
p.flush(20)
err2, sid2, recs2 = fetch(sid, 1, 0)
print("PASS incremental session fetch answers records" if err2 == 0 and sid2 == sid and recs2 > recs
      else "FAIL incremental: error %d session %d records %d (full had %d)" % (err2, sid2, recs2, recs))
PY
sk_check_lines <"$SK_TMP/sess.out"

file=$(metric file); copy=$(metric copy)
echo "record bytes answered: file $file, copy $copy"
sk_check "no Fetch v10+ copied record bytes (copy = $copy)" test "$copy" = 0
# consumers alone read 20000 x (200 B + record overhead); followers as much again
sk_check "file bytes cover consumers and followers (file = $file)" test "$file" -gt $((2 * 20000 * 200))

# 5: control: an old client's Fetch v3 is down-converted, which the counter sees
"$SK_PY" - "$B" >"$SK_TMP/old.out" 2>&1 <<'PY'
import sys
from kafka import KafkaConsumer, TopicPartition
c = KafkaConsumer(bootstrap_servers=sys.argv[1], api_version=(0, 10, 1), consumer_timeout_ms=10000,
                  enable_auto_commit=False)
c.assign([TopicPartition("zc", 0)])
c.seek_to_beginning()
n = sum(1 for _ in zip(range(100), c))
c.close()
print("PASS old client read %d records" % n if n == 100 else "FAIL old client read %d records" % n)
PY
sk_check_lines <"$SK_TMP/old.out"
copy=$(metric copy)
sk_check "Fetch v3 (down-conversion) is counted as copied (copy = $copy)" test "$copy" -gt 0

sk_summary t_fetch_zero_copy
