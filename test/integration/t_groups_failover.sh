#!/usr/bin/env bash
# Issue 7: group answers wait for their records to replicate (a frozen
# follower holds a commit back until the ISR shrinks), and kill -9 of the
# group coordinator's node. Three nodes, a replicated
# __consumer_offsets; a confluent-kafka (librdkafka) group consumer reads a
# 6-partition topic with synchronous commits. Once some commits were
# acknowledged it pauses; the coordinator's node (the one whose admin port
# says it coordinates the group) is killed -9; another node becomes the
# coordinator and OffsetFetch (kafka-python) returns at least every
# acknowledged offset; the consumer then goes on with the same group on the
# new coordinator, reads the rest and commits it.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "t_groups_failover: jq missing"; exit 1; }

OPTS=(--set controller.quorum.fetch.timeout.ms=500 --set controller.quorum.election.timeout.ms=300
      --set broker.heartbeat.interval.ms=300 --set broker.session.timeout.ms=2500
      --set offsets.topic.num.partitions=6 --set group.initial.rebalance.delay.ms=0
      --set replica.lag.time.max.ms=2000)
sk_start_cluster 3 "${OPTS[@]}"
adm() { curl -s --max-time 3 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
waitfor() {  # waitfor SECONDS command... (polls every 0.2 s)
  local t=0
  until "${@:2}" >/dev/null 2>&1; do sleep 0.2; t=$((t + 1)); [ "$t" -lt $(($1 * 5)) ] || return 1; done
}
healthy() { [ "$(adm "$1" /v1/health | jq -r .healthy)" = true ]; }
all_healthy() { healthy 1 && healthy 2 && healthy 3; }
waitfor 30 all_healthy || sk_fail "cluster not healthy within 30 s"

# once every node is healthy (all three brokers registered and unfenced)
# the first create must succeed at once (issue 5: health used to read true
# before any registration had committed); skiffctl retries retriable
# errors itself, and a retry of a create that went through is answered
# TOPIC_ALREADY_EXISTS
SKIFF_BROKERS="$SK_BOOTSTRAP" "$SK_BIN/skiffctl" topic create fo -p 6 -r 3 > "$SK_TMP/create.out" 2>&1 ||
  grep -q TOPIC_ALREADY_EXISTS "$SK_TMP/create.out" || sk_fail "topic fo not created: $(cat "$SK_TMP/create.out")"
isr_full() { [ "$(adm 1 /v1/topics/fo | jq '[.partitions[] | select((.isr | length) == 3)] | length')" = 6 ]; }
waitfor 20 isr_full || sk_fail "fo not fully replicated"

# Phase A — answers wait for replication: with a follower of the group's
# __consumer_offsets partition frozen (SIGSTOP), a commit is answered only
# once the ISR no longer waits for it (replica.lag.time.max.ms / fencing),
# not at once; it shows meanwhile in skiff_purgatory_operations{group_commit}.
cat > "$SK_TMP/commit.py" <<'PY'
import json, os, sys, time
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition, OffsetAndMetadata
boot, tmp = sys.argv[1], sys.argv[2]
a = KafkaAdminClient(bootstrap_servers=boot)
deadline = time.time() + 30
while True:   # the first lookup creates __consumer_offsets: COORDINATOR_NOT_AVAILABLE meanwhile
    try:
        coord = a._find_coordinator_ids(["gwait"])["gwait"]; break
    except Exception:
        if time.time() > deadline: raise
        time.sleep(0.3)
a.close()
c = KafkaConsumer(bootstrap_servers=boot, group_id="gwait", enable_auto_commit=False, request_timeout_ms=30000)
tp = TopicPartition("fo", 0)
c.assign([tp])
t0 = time.time(); c.commit({tp: OffsetAndMetadata(1, None)}); quick = time.time() - t0
# the same commit sent to a node that does not coordinate gwait: answered
# NOT_COORDINATOR at once (nothing of its own to wait for)
from kafka.client_async import KafkaClient
from kafka.protocol.commit import OffsetCommitRequest
other = [i for i in (1, 2, 3) if i != coord][0]
kc = KafkaClient(bootstrap_servers=boot)
deadline = time.time() + 10
while not kc.ready(other) and time.time() < deadline: kc.poll(timeout_ms=100)
t2 = time.time()
f = kc.send(other, OffsetCommitRequest[2]("gwait", -1, "", -1, [("fo", [(0, 5, "")])]))
kc.poll(future=f, timeout_ms=5000)
other_err = f.value.topics[0][1][0][1] if f.succeeded() else repr(f.exception)
other_ms = int((time.time() - t2) * 1000)
kc.close()
json.dump({"coordinator": coord, "quick_ms": int(quick * 1000), "committed": c.committed(tp),
           "other": other, "other_error": other_err, "other_ms": other_ms},
          open(os.path.join(tmp, "c1.json"), "w"))
deadline = time.time() + 60
while not os.path.exists(os.path.join(tmp, "frozen")) and time.time() < deadline: time.sleep(0.05)
t1 = time.time(); c.commit({tp: OffsetAndMetadata(2, None)}); done = time.time()
json.dump({"wait_ms": int((done - t1) * 1000), "committed": c.committed(tp)}, open(os.path.join(tmp, "c2.json"), "w"))
c.close()
PY
/usr/bin/python3 "$SK_TMP/commit.py" "$SK_BOOTSTRAP" "$SK_TMP" > "$SK_TMP/commit.out" 2>&1 & CP2=$!
SK_PIDS+=("$CP2")
c1() { [ -s "$SK_TMP/c1.json" ]; }
waitfor 30 c1 || { cat "$SK_TMP/commit.out"; sk_fail "first commit not done"; }
sk_check "a commit with every replica up is quick ($(jq -c . "$SK_TMP/c1.json"))" \
  test "$(jq '.committed == 1 and .quick_ms < 1000' "$SK_TMP/c1.json")" = true
sk_check "a commit sent to a non-coordinator is answered NOT_COORDINATOR at once ($(jq -c '[.other, .other_error, .other_ms]' "$SK_TMP/c1.json"))" \
  test "$(jq '.other_error == 16 and .other_ms < 2000' "$SK_TMP/c1.json")" = true
GC=$(jq .coordinator "$SK_TMP/c1.json")
K=$(adm 1 /v1/health | jq .controller_id)
FZ=""; for i in 1 2 3; do [ "$i" != "$GC" ] && [ "$i" != "$K" ] && { FZ=$i; break; }; done
[ -n "$FZ" ] || for i in 1 2 3; do [ "$i" != "$GC" ] && { FZ=$i; break; }; done
sk_log "gwait: coordinator $GC, controller $K, freezing follower $FZ"
kill -STOP "${SK_NODE_PID[FZ]}"
touch "$SK_TMP/frozen"
waiting() { [ "$(adm "$GC" /metrics | awk '/^skiff_purgatory_operations\{purgatory="group_commit"\}/ { print $2 }')" -ge 1 ]; }
sk_check "the commit waits in the group_commit purgatory" waitfor 10 waiting
wait "$CP2"
# the leader drops the follower from the ISR replica.lag.time.max.ms (2 s)
# after its last fetch: the answer cannot come much sooner
sk_check "with follower $FZ frozen the commit is answered only after the ISR shrinks ($(jq -c . "$SK_TMP/c2.json"))" \
  test "$(jq '.committed == 2 and .wait_ms >= 1000' "$SK_TMP/c2.json")" = true
kill -CONT "${SK_NODE_PID[FZ]}"
waitfor 30 all_healthy || sk_fail "node $FZ not healthy again"
waitfor 30 isr_full || sk_fail "fo not fully replicated again"
co_full() { [ "$(adm 1 /v1/topics/__consumer_offsets | jq '[.partitions[] | select((.isr | length) < 3)] | length')" = 0 ]; }
waitfor 30 co_full || sk_fail "__consumer_offsets not fully replicated again"

# Phase B — kill -9 of the coordinator

cat > "$SK_TMP/consumer.py" <<'PY'
import json, os, sys, time
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
boot, tmp = sys.argv[1], sys.argv[2]
N = 600
p = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 5})
for i in range(N):
    p.produce("fo", value=b"m%d" % i, partition=i % 6)
if p.flush(30) != 0: sys.exit("produce did not finish")
c = Consumer({"bootstrap.servers": boot, "group.id": "gfo", "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
              "heartbeat.interval.ms": 500, "topic.metadata.refresh.interval.ms": 1000})
c.subscribe(["fo"])
acked, seen, commit_errors = {}, set(), []
firsts, t_start = {}, time.time()
def commit():
    try:
        for tp in c.commit(asynchronous=False):
            if tp.error: commit_errors.append(str(tp.error)); return False
            acked[tp.partition] = max(acked.get(tp.partition, -1), tp.offset)
        return True
    except KafkaException as e:
        if e.args[0].code() == KafkaError._NO_OFFSET: return True   # nothing new since the last commit
        commit_errors.append(str(e)); return False   # coordinator gone: librdkafka finds the next one; retry
    except Exception as e:
        commit_errors.append(str(e)); return False
def consume(until_seen, seconds):
    end = time.time() + seconds
    while len(seen) < until_seen and time.time() < end:
        m = c.poll(0.5)
        if m is None or m.error(): continue
        seen.add((m.partition(), m.offset()))
        firsts.setdefault(m.partition(), round(time.time() - t_start, 1))
        if len(seen) % 20 == 0: commit()
consume(300, 60)
while not commit() and len(commit_errors) < 50: time.sleep(0.2)
with open(os.path.join(tmp, "acked.json"), "w") as f: json.dump(acked, f)
os.rename(os.path.join(tmp, "acked.json"), os.path.join(tmp, "acked.ready.json"))
c.pause(c.assignment())      # no more records until the failover was checked
end = time.time() + 90        # keep the membership alive (poll) until told to go on
while not os.path.exists(os.path.join(tmp, "go")) and time.time() < end:
    m = c.poll(0.2)
    if m is not None and not m.error(): seen.add((m.partition(), m.offset()))   # after a rebalance
before = len(seen)
c.resume(c.assignment())
resumed = time.time()
firsts, t_start = {}, resumed
consume(N, 90)
for _ in range(100):          # the final commit must land on the new coordinator
    if commit(): break
    time.sleep(0.3)
json.dump({"seen": len(seen), "after_failover": len(seen) - before, "acked": acked,
           "resume_s": round(time.time() - resumed, 1), "first_s": firsts,
           "commit_errors": commit_errors[:5]}, open(os.path.join(tmp, "final.json"), "w"))
c.close()
PY
/usr/bin/python3 "$SK_TMP/consumer.py" "$SK_BOOTSTRAP" "$SK_TMP" > "$SK_TMP/consumer.out" 2>&1 & CP=$!
SK_PIDS+=("$CP")
ready() { [ -f "$SK_TMP/acked.ready.json" ]; }
waitfor 90 ready || { cat "$SK_TMP/consumer.out"; sk_fail "consumer did not commit"; }
sk_check "some commits acknowledged before the kill" test "$(jq 'length' "$SK_TMP/acked.ready.json")" -ge 1

coordinator() { for i in "$@"; do [ "$(adm "$i" /v1/groups/gfo | jq -r .coordinated_here)" = true ] && { echo "$i"; return 0; }; done; return 1; }
C=$(coordinator 1 2 3) || sk_fail "no node coordinates gfo"
sk_log "coordinator of gfo: node $C; killing it"
REST=(); for i in 1 2 3; do [ "$i" = "$C" ] || REST+=("$i"); done
sk_kill9_node "$C"
new_coord() { coordinator "${REST[@]}"; }
sk_check "another node coordinates gfo within 30 s" waitfor 30 new_coord
N2=$(new_coord)
sk_log "new coordinator: node ${N2:-none}"

# OffsetFetch through the new coordinator: every acknowledged offset kept
cat > "$SK_TMP/fetch.py" <<'PY'
import json, sys, time
from kafka import KafkaAdminClient
boot, acked = sys.argv[1], json.load(open(sys.argv[2]))
deadline, got, err = time.time() + 30, None, None
while time.time() < deadline:
    try:
        a = KafkaAdminClient(bootstrap_servers=boot, request_timeout_ms=5000)
        got = {str(tp.partition): om.offset for tp, om in a.list_consumer_group_offsets("gfo").items()}
        a.close()
        if all(got.get(p, -1) >= o for p, o in acked.items()): break
    except Exception as e:
        err = e
    time.sleep(0.5)
print(json.dumps({"committed": got, "error": str(err) if err else None}))
PY
LIVE=$(for i in "${REST[@]}"; do printf '127.0.0.1:%s,' "${SK_KAFKA_PORT[i]}"; done)
/usr/bin/python3 "$SK_TMP/fetch.py" "${LIVE%,}" "$SK_TMP/acked.ready.json" > "$SK_TMP/fetch.json" 2> "$SK_TMP/fetch.err"
lost=$(jq -n --slurpfile a "$SK_TMP/acked.ready.json" --slurpfile f "$SK_TMP/fetch.json" \
  '[$a[0] | to_entries[] | select(($f[0].committed[.key] // -1) < .value)] | length')
sk_check "no acknowledged commit lost (acked $(jq -c . "$SK_TMP/acked.ready.json"), fetched $(jq -c .committed "$SK_TMP/fetch.json"))" \
  test "$lost" = 0

touch "$SK_TMP/go"
wait "$CP"; rc=$?
sk_check "consumer finished" test "$rc" -eq 0 || tail -5 "$SK_TMP/consumer.out"
F=$SK_TMP/final.json
if [ -f "$F" ]; then
  sk_check "the group went on after the failover: all 600 records read ($(jq .seen "$F"))" test "$(jq .seen "$F")" = 600
  sk_check "records read after the failover ($(jq .after_failover "$F"))" test "$(jq .after_failover "$F")" -gt 0
  sk_check "final commit covers every partition's end (100 each): $(jq -c .acked "$F")" \
    test "$(jq '[.acked[]] | map(select(. == 100)) | length' "$F")" = 6
else
  sk_check "consumer wrote its final state" false
fi
g=$(adm "$N2" /v1/groups/gfo)
sk_check "new coordinator node $N2 shows gfo with lag 0" test "$(jq .total_lag <<<"$g")" = 0

for i in "${REST[@]}"; do sk_stop_node "$i"; done
sk_summary t_groups_failover
