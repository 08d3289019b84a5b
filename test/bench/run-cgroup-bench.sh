#!/usr/bin/env bash
# KIP-848 consumer group benchmark (issue 20) against one skiff node:
#  (a) BENCH_CG_MEMBERS (10) confluent-kafka 2.12.1 consumers (the venv of
#      t_cgroup_confluent.sh, build/venv-ck) join a fresh group on a
#      BENCH_CG_PARTITIONS (20) partition topic until every member holds a
#      non-empty assignment covering all partitions: group.protocol=consumer
#      vs classic, BENCH_CG_ROUNDS (3) fresh groups each, interleaved, same
#      node (group.initial.rebalance.delay.ms 0 for classic, its protocol's
#      own time; Kafka's default adds 3 s). A consumer-protocol member
#      learns of a new epoch at its next heartbeat, so (a) is about one
#      group.consumer.heartbeat.interval.ms (BENCH_CG_HEARTBEAT_MS, 5000);
#  (b) the pure core (build/test/bench_cgroup): join-until-Stable CPU and the
#      steady heartbeats/s one coordinator core sustains.
# No timing assertions: exit 0 when every round completed. Skipped (exit 0)
# when the venv is missing and PyPI unreachable.
. "$(dirname "$0")/../integration/lib.sh"
members=${BENCH_CG_MEMBERS:-10}
parts=${BENCH_CG_PARTITIONS:-20}
rounds=${BENCH_CG_ROUNDS:-3}
hb_ms=${BENCH_CG_HEARTBEAT_MS:-5000}   # group.consumer.heartbeat.interval.ms (Kafka's default)
test_dir=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}
VENV=${SKIFF_CK_VENV:-$SK_ROOT/build/venv-ck}
if ! "$VENV/bin/python" -c 'import confluent_kafka as c; assert c.version() == "2.12.1"' 2>/dev/null; then
  { "$SK_PY" -m venv "$VENV" && timeout 120 "$VENV/bin/pip" install -q confluent-kafka==2.12.1; } >/dev/null 2>&1 ||
    { echo "SKIP run-cgroup-bench: confluent-kafka 2.12.1 not installable"; exit 0; }
fi
status=0
sk_start_cluster 1 --set group.initial.rebalance.delay.ms=0 --set offsets.topic.num.partitions=3 \
  --set group.consumer.heartbeat.interval.ms="$hb_ms"
B=127.0.0.1:${SK_KAFKA_PORT[1]}
SKIFF_BROKERS=$B "$SK_BIN/skiffctl" topic create cgb -p "$parts" -r 1 >/dev/null || sk_fail "create cgb"
res=$SK_TMP/res.jsonl
# warm-up (creates __consumer_offsets), not counted
"$VENV/bin/python" "$SK_ROOT/test/bench/cgroup_join.py" "$B" cgb "$parts" "$members" warm consumer >/dev/null || status=1
for r in $(seq 1 "$rounds"); do
  for p in consumer classic; do
    "$VENV/bin/python" "$SK_ROOT/test/bench/cgroup_join.py" "$B" cgb "$parts" "$members" "g-$p-$r" "$p" >> "$res" || status=1
  done
done
echo "== $members members join a fresh group on $parts partitions (one node, loopback; heartbeat interval $hb_ms ms; seconds)"
for p in consumer classic; do
  jq -r --arg p "$p" 'select(.protocol == $p) | .seconds' "$res" | sort -n |
    awk -v p="$p" '{v[NR] = $1} END {printf "  %-8s rounds %d  min %.3f  median %.3f  max %.3f\n", p, NR, v[1], v[int((NR + 1) / 2)], v[NR]}'
done
if [ -x "$test_dir/bench_cgroup" ]; then
  echo "== pure core ($test_dir/bench_cgroup)"
  "$test_dir/bench_cgroup" | sed 's/^/  /' || status=1
fi
cat "$res"
exit $status
