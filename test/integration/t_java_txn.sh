#!/usr/bin/env bash
# The Java client of Apache Kafka 4.x (test/java, kafka-clients pinned):
# a transactional KafkaProducer on 3 nodes (committed and aborted
# transactions across 3 partitions; read_committed / read_uncommitted
# consumers check the outcome; test/java/src/TxnProducer.java). The
# partitions' leaders are spread, so most first batches are verified by a
# coordinator on another node (KIP-890 part 1, broker/txn/txn_verify.c).
# transaction.version is not finalized at 2 (broker/meta/features.h), so the
# client runs transactions v1.
. "$(dirname "$0")/lib.sh"
NAME=t_java_txn
CP=$("$SK_ROOT/test/java/build.sh" 2>"$SK_TMP/java-build.err") ||
  { cat "$SK_TMP/java-build.err"; sk_fail "java harness not built (test/java/build.sh)"; }

sk_start_cluster 3 --set transaction.state.log.replication.factor=1 --set offsets.topic.replication.factor=1
ready() { [ "$(curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[1]}/v1/cluster" | jq '[.brokers[] | select(.fenced == false)] | length' 2>/dev/null)" = 3 ]; }
t=0; until ready; do sleep 0.2; t=$((t + 1)); [ $t -lt 150 ] || sk_fail "3 unfenced brokers not seen"; done
sk_check_lines < <(timeout 180 "$SK_ROOT/test/java/run.sh" TxnProducer "$SK_BOOTSTRAP" jtxn 3 6 2>"$SK_TMP/java.err")
sk_check "TxnProducer ran all its checks" test "$((SK_PASS + SK_FAILS))" -ge 4
for ((i = 1; i <= 3; i++)); do sk_check "node $i still running" kill -0 "${SK_NODE_PID[i]}"; done
[ "$SK_FAILS" -eq 0 ] || { tail -n 30 "$SK_TMP/java.err"; sk_dump_logs; }
sk_summary "$NAME"
