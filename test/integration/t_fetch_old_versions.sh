#!/usr/bin/env bash
# Fetch below v10 (old clients) answered from the worker pool (issue 19):
# the copy, zstd check and down-conversion run as pool jobs
# (broker/api/fetch_convert_int.h), counted by
# skiff_fetch_converted_total{where="worker"|"inline"}. One node:
#  1. data with every codec (none with headers, gzip, snappy, lz4, zstd, and
#     a partition mixing lz4 / zstd / none batches) and a topic with a
#     committed, an aborted and a committed transaction (clients/fetch_old.py);
#  2. kafka-python pinned to old versions (Fetch v0..v4: magic 0, magic 1,
#     v2 batches) reads every message of the non-zstd partitions, checked
#     one by one;
#  3. raw Fetch v0, v3, v4, v7, v9: per partition the error (zstd first:
#     UNSUPPORTED_COMPRESSION_TYPE; mixed: the answer stops before the zstd
#     batch), the magic the version must get, every record; read_committed
#     (v4+) lists the aborted transaction and nothing of it survives the
#     list; below v4 control batches are dropped;
#  4. the metric: work done by the worker, none inline, copy bytes counted;
#  5. the state loop is not held: old consumers (Fetch v2, magic 1) convert a
#     large lz4 topic over and over while a modern producer (acks=1) sends a
#     small probe every 20 ms; every probe is delivered (its worst latency
#     is logged, not asserted) and the worker did the conversions;
#  6. connections closed while their conversion runs, and a graceful stop
#     with conversions in flight: answers go on, the node stops cleanly.
. "$(dirname "$0")/lib.sh"
C="$SK_ROOT/test/integration/clients"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
[ -x "$kload" ] || { echo "t_fetch_old_versions: missing $kload"; exit 1; }

sk_start_cluster 1
B=$SK_BOOTSTRAP
PORT=${SK_KAFKA_PORT[1]}

# metric NAME LABEL VALUE -> the sample of NAME{LABEL="VALUE"} (missing: "missing")
metric() {
  local v
  v=$(curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[1]}/metrics" |
    awk -v p="$1{$2=\"$3\"} " 'index($0, p) == 1 { print $2 }')
  echo "${v:-missing}"
}
sk_check "converted metric exported, zero at start" test "$(metric skiff_fetch_converted_total where worker)" = 0

"$kload" create-topic --brokers "$B" --topic old --partitions 6 >/dev/null 2>>"$SK_TMP/kload.err" || sk_fail "create old"
"$kload" create-topic --brokers "$B" --topic oldtx --partitions 1 >/dev/null 2>>"$SK_TMP/kload.err" || sk_fail "create oldtx"
"$SK_PY" "$C/fetch_old.py" produce "$B" >"$SK_TMP/produce.out" 2>"$SK_TMP/produce.err" ||
  { cat "$SK_TMP/produce.err"; sk_fail "produce"; }

# 2: kafka-python pinned to old protocol versions
"$SK_PY" - "$B" "$C" >"$SK_TMP/kp.out" 2>"$SK_TMP/kp.err" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import logging
logging.disable(logging.CRITICAL)
from kafka import KafkaConsumer, TopicPartition
from fetch_old import expected, PER_PART
# api_version -> Fetch version kafka-python 2.0.2 sends
for api, fv in (((0, 8, 2), 0), ((0, 9), 1), ((0, 10, 0), 2), ((0, 10, 1), 3), ((0, 11), 4), ((1, 0), 4)):
    c = KafkaConsumer(bootstrap_servers=sys.argv[1], api_version=api, consumer_timeout_ms=8000,
                      enable_auto_commit=False, max_partition_fetch_bytes=4096)
    tps = [TopicPartition("old", p) for p in (0, 1, 2, 3)]   # zstd (4, 5) refused below v10
    c.assign(tps)
    c.seek_to_beginning()
    got = {p: [] for p in (0, 1, 2, 3)}
    for m in c:
        got[m.partition].append((m.offset, m.key.decode(), m.value.decode()))
        if sum(len(v) for v in got.values()) == 4 * PER_PART:
            break
    c.close()
    for p in (0, 1, 2, 3):
        want = [(i, k, v) for i, (k, v) in enumerate(expected(p))]
        print(("PASS kafka-python %s (Fetch v%d) read old-%d: %d messages, each as produced" % (api, fv, p, len(want)))
              if got[p] == want else
              ("FAIL kafka-python %s (Fetch v%d) old-%d: %d of %d, first difference %r" %
               (api, fv, p, len(got[p]), len(want),
                next(((a, b) for a, b in zip(got[p], want) if a != b), None))))
PY
[ -s "$SK_TMP/kp.out" ] || { tail -5 "$SK_TMP/kp.err"; sk_fail "kafka-python consumers printed nothing"; }
sk_check_lines <"$SK_TMP/kp.out"

# 3: raw Fetch frames
"$SK_PY" - "$PORT" "$C" >"$SK_TMP/raw.out" 2>&1 <<'PY'
import socket, sys
sys.path.insert(0, sys.argv[2])
from fetch_old import expected, request, roundtrip, parse, PER_PART, BATCH
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
UNSUPPORTED_COMPRESSION_TYPE = 76
def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
corr = [0]
def fetch(v, parts, iso=0, maxb=50 << 20, pm=1 << 20):
    corr[0] += 1
    return parse(v, roundtrip(s, request(v, [(t, p, o, pm) for t, p, o in parts], iso, maxb, corr[0])))
for v in (0, 3, 4, 7, 9):
    magic = 0 if v < 2 else 1 if v < 4 else 2
    ans = {d["partition"]: d for d in fetch(v, [("old", p, 0) for p in range(6)])}
    for p in (0, 1, 2, 3):
        d = ans[p]
        recs = [(o, k, val) for o, k, val, m, _, _ in d["records"]]
        want = [(i, k, val) for i, (k, val) in enumerate(expected(p))]
        check(d["error"] == 0 and recs == want and {r[3] for r in d["records"]} == {magic},
              "Fetch v%d old-%d: %d records as produced, magic %d (error %d, got %d)" %
              (v, p, len(want), magic, d["error"], len(recs)))
    check(ans[4]["error"] == UNSUPPORTED_COMPRESSION_TYPE and ans[4]["records_bytes"] == 0,
          "Fetch v%d old-4 (zstd first): UNSUPPORTED_COMPRESSION_TYPE, no records (error %d)" % (v, ans[4]["error"]))
    recs = [(o, k, val) for o, k, val, m, _, _ in ans[5]["records"]]
    want = [(i, k, val) for i, (k, val) in enumerate(expected(5))][:BATCH]
    check(ans[5]["error"] == 0 and recs == want,
          "Fetch v%d old-5 (lz4 then zstd): the lz4 batch, stopped before zstd (%d records, error %d)" %
          (v, len(recs), ans[5]["error"]))
    # the zstd partition first in the request: the next partitions still answered
    z = fetch(v, [("old", 4, 0), ("old", 0, 0)])
    check(z[0]["error"] == UNSUPPORTED_COMPRESSION_TYPE and len(z[1]["records"]) == PER_PART,
          "Fetch v%d: after a refused zstd partition the next one still gets its %d records" % (v, len(z[1]["records"])))
    # a tight response budget: the first partition one batch (KIP-74), the rest nothing or little
    t = fetch(v, [("old", p, 0) for p in (3, 1)], maxb=1, pm=1 << 20)
    if v >= 3:
        check(len(t[0]["records"]) == BATCH and len(t[1]["records"]) == 0,
              "Fetch v%d max_bytes=1: first partition one batch (%d records), second none (%d)" %
              (v, len(t[0]["records"]), len(t[1]["records"])))
# transactions
def committed_view(d):
    """records left after the aborted list (read_committed client rule)"""
    aborted = sorted(d["aborted"], key=lambda a: a[1])
    live, out = {}, []
    for o, k, val, m, pid, ctrl in d["records"]:
        while aborted and aborted[0][1] <= o:     # each listed transaction opens once
            live[aborted.pop(0)[0]] = True
        if ctrl:
            live.pop(pid, None)
            continue
        if pid not in live:
            out.append(val)
    return out
want_committed = ["tx0-commit-%d" % i for i in range(10)] + ["plain-0", "plain-1"] + \
                 ["tx2-commit-%d" % i for i in range(10)] + ["plain-2"]
for v in (4, 7, 9):
    d = fetch(v, [("oldtx", 0, 0)], iso=1)[0]
    vals = committed_view(d)
    check(len(d["aborted"]) == 1 and sorted(vals) == sorted(want_committed),
          "Fetch v%d read_committed: 1 aborted transaction listed, %d committed records left (aborted list %r)" %
          (v, len(vals), d["aborted"]))
for v in (0, 3):
    d = fetch(v, [("oldtx", 0, 0)])[0]
    vals = [val for _, _, val, _, _, ctrl in d["records"] if not ctrl]
    ctrl = [1 for r in d["records"] if r[5]]
    check(len(vals) == 33 and not ctrl and sum(1 for x in vals if "abort" in x) == 10,
          "Fetch v%d of transactions: 33 records (aborted ones included: no isolation below v4), no control records (%d)" %
          (v, len(vals)))
PY
sk_check_lines <"$SK_TMP/raw.out"

# 4: where the work ran
w=$(metric skiff_fetch_converted_total where worker); i=$(metric skiff_fetch_converted_total where inline)
copy=$(metric skiff_fetch_record_bytes_total path copy)
echo "converted record sets: worker $w, inline $i; copy bytes $copy"
sk_check "old fetches converted by the worker pool (worker = $w)" test "$w" -gt 20
sk_check "none inline while the pool had room (inline = $i)" test "$i" = 0
sk_check "copy bytes counted (copy = $copy)" test "$copy" -gt 50000

# 5: a large lz4 topic converted over and over for old consumers, while a
# modern producer's acks=1 probes go on
"$kload" create-topic --brokers "$B" --topic oldbig --partitions 1 >/dev/null 2>>"$SK_TMP/kload.err" || sk_fail "create oldbig"
"$kload" create-topic --brokers "$B" --topic probe --partitions 1 >/dev/null 2>>"$SK_TMP/kload.err" || sk_fail "create probe"
"$kload" produce --brokers "$B" --topic oldbig --count 40000 --size 1000 --compression lz4 --acks 1 \
  >"$SK_TMP/big.json" 2>>"$SK_TMP/kload.err" || sk_fail "produce oldbig"
w0=$(metric skiff_fetch_converted_total where worker)
# the old consumers (one process, a thread each) and the probe (its own
# process: the consumers' decoding would hold its interpreter otherwise)
"$SK_PY" - "$B" >"$SK_TMP/old.out" 2>"$SK_TMP/old.err" <<'PY' &
import sys, threading, time
import logging
logging.disable(logging.CRITICAL)
from kafka import KafkaConsumer, TopicPartition
boot = sys.argv[1]
stop = time.time() + 12
read = [0] * 3
def old_consumer(i):
    c = KafkaConsumer(bootstrap_servers=boot, api_version=(0, 10, 0), enable_auto_commit=False,
                      max_partition_fetch_bytes=16 << 20, fetch_max_bytes=64 << 20, consumer_timeout_ms=3000)
    tp = TopicPartition("oldbig", 0)
    c.assign([tp])
    while time.time() < stop:
        c.seek_to_beginning(tp)
        recs = c.poll(timeout_ms=2000, max_records=100000)
        read[i] += sum(len(v) for v in recs.values())
    c.close()
threads = [threading.Thread(target=old_consumer, args=(i,)) for i in range(3)]
for t in threads: t.start()
for t in threads: t.join()
print(("PASS" if min(read) > 0 else "FAIL") + " every old consumer (Fetch v2) read records (%s)" % read)
PY
oldpid=$!
SK_PIDS+=("$oldpid")
sleep 1
"$SK_PY" - "$B" >"$SK_TMP/stall.out" 2>"$SK_TMP/stall.err" <<'PY'
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "1", "linger.ms": 0})
lat, failed = [], []
def dr(err, msg, t0):
    if err: failed.append(str(err))
    else: lat.append(time.time() - t0)
sent, stop = 0, time.time() + 10
while time.time() < stop:
    t0 = time.time()
    p.produce("probe", value=b"probe-%d" % sent, on_delivery=lambda e, m, t0=t0: dr(e, m, t0))
    sent += 1
    while time.time() < t0 + 0.02:         # serve delivery callbacks as they come
        p.poll(max(0.0, t0 + 0.02 - time.time()))
p.flush(20)
lat.sort()
print("probes %d delivered %d failed %d; latency max %.1f ms p99 %.1f ms median %.1f ms" %
      (sent, len(lat), len(failed), 1000 * lat[-1] if lat else -1, 1000 * lat[int(len(lat) * 0.99)] if lat else -1,
       1000 * lat[len(lat) // 2] if lat else -1), file=sys.stderr)
print(("PASS" if len(lat) == sent and not failed and sent > 100 else "FAIL") +
      " every acks=1 probe delivered while old consumers converted (%d of %d)" % (len(lat), sent))
PY
wait "$oldpid"
cat "$SK_TMP/old.out" >>"$SK_TMP/stall.out"
grep -v "^%" "$SK_TMP/stall.err" | tail -3
sk_check_lines <"$SK_TMP/stall.out"
w1=$(metric skiff_fetch_converted_total where worker)
sk_check "the large conversions ran on the worker pool ($w0 -> $w1)" test "$w1" -gt "$w0"

# 6: connections that leave while their conversion runs, then a graceful
# stop with conversions in flight: the node answers on and stops cleanly
"$SK_PY" - "$PORT" "$C" >"$SK_TMP/gone.out" 2>&1 <<'PY'
import socket, struct, sys, time
sys.path.insert(0, sys.argv[2])
from fetch_old import request, roundtrip, parse
port = int(sys.argv[1])
for i in range(20):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    req = request(2, [("oldbig", 0, 0, 16 << 20)], corr=i)
    s.sendall(struct.pack(">i", len(req)) + req)
    s.close()                                  # gone before the answer
s = socket.create_connection(("127.0.0.1", port), timeout=30)
d = parse(3, roundtrip(s, request(3, [("old", 0, 0, 1 << 20)])))[0]
print(("PASS" if d["error"] == 0 and len(d["records"]) == 40 else "FAIL") +
      " after 20 connections closed during their conversion, a Fetch v3 is answered (%d records)" % len(d["records"]))
PY
sk_check_lines <"$SK_TMP/gone.out"
"$SK_PY" - "$PORT" "$C" >/dev/null 2>&1 <<'PY' &
import socket, struct, sys
sys.path.insert(0, sys.argv[2])
from fetch_old import request
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
for i in range(8):                             # pipelined: several in flight at the stop
    req = request(2, [("oldbig", 0, 0, 16 << 20)], corr=i)
    s.sendall(struct.pack(">i", len(req)) + req)
try:
    while s.recv(1 << 20):
        pass
except OSError:
    pass
PY
inflight=$!
SK_PIDS+=("$inflight")
sleep 0.3
sk_stop_node 1
wait "$inflight" 2>/dev/null
sk_check "graceful stop with old fetches in flight: stopped cleanly" grep -q "stopped cleanly" "$SK_TMP/node-1.log"

sk_summary t_fetch_old_versions
