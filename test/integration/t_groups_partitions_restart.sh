#!/usr/bin/env bash
# A group's coordinator partition follows __consumer_offsets' partition
# count in the metadata image, not offsets.topic.num.partitions (which only
# sizes the topic when it is created), as in Kafka. A node restarted with a
# different value — here the default 50, then 1 — must still coordinate
# the groups FindCoordinator sends it. Before the fix a restarted node
# answered NOT_COORDINATOR to every request of such a group for good (the
# Java transactional producer's offsets stalled until its transaction
# timed out: test/integration/repro_java_txn_failover.sh restarts a node
# without the test's --set), and with 1 it aborted on an assertion.
# Client: confluent-kafka (commit + committed + a group consume).
. "$(dirname "$0")/lib.sh"
NAME=t_groups_partitions_restart
T=gpr

sk_start_cluster 1 --set offsets.topic.num.partitions=3
B=$SK_BOOTSTRAP
kcat -b "$B" -P -t "$T" <<<"$(seq 1 10)" 2>/dev/null || sk_fail "produce"

# commit.py BOOTSTRAP GROUP OFFSET -> commits OFFSET for partition 0 of $T,
# reads it back with committed(), then consumes with the group; prints
# "ok OFFSET-read records" or the client's error
cat > "$SK_TMP/commit.py" <<'PY'
import sys
from confluent_kafka import Consumer, TopicPartition, KafkaException
boot, group, off = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = Consumer({"bootstrap.servers": boot, "group.id": group, "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
try:
    c.commit(offsets=[TopicPartition("gpr", 0, off)], asynchronous=False)
    got = c.committed([TopicPartition("gpr", 0)], timeout=10)[0].offset
    c.subscribe(["gpr"])
    n = 0
    for _ in range(100):
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            n += 1
            if n == 10 - off:
                break
    print("ok", got, n)
except KafkaException as e:
    print("error", e)
finally:
    c.close()
PY
# groups on each of the 3 partitions (Java's String.hashCode % 3)
GRPS=(g-a g-b g-c)
run() { timeout 40 "$SK_PY" "$SK_TMP/commit.py" "$B" "$1" "$2" 2>/dev/null | tail -n 1; }
for g in "${GRPS[@]}"; do
  out=$(run "$g" 4)
  sk_check "3 partitions: group $g commits, reads and consumes ($out)" test "$out" = "ok 4 6"
done

for setting in "" "--set offsets.topic.num.partitions=1"; do
  sk_stop_node 1
  # shellcheck disable=SC2086 # word splitting of $setting is intended
  sk_start_node 1 $setting
  sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "restart ($setting)"
  for g in "${GRPS[@]}"; do
    out=$(run "$g" 7)
    sk_check "restarted with ${setting:-the default 50}: group $g commits, reads and consumes ($out)" test "$out" = "ok 7 3"
  done
  sk_check "node alive (${setting:-default})" kill -0 "${SK_NODE_PID[1]}"
done
sk_check "no assertion in the log" bash -c "! grep -q 'Assertion' '$SK_TMP/node-1.log'"
sk_summary "$NAME"
