#!/usr/bin/env bash
# FOUND (2026-12-02): the restarted node is started without the test's
# --set offsets.topic.num.partitions=3, and its group coordinator placed
# groups by the default 50 instead of the topic's 3 partitions, so it
# answered NOT_COORDINATOR for every group FindCoordinator sent it. Fixed in
# broker/group/group_driver.c (start_core: the image's partition count);
# regression test t_groups_partitions_restart.sh. Kept as a Java scenario.
#
# NOT part of `make test` (not a t_*.sh): the reproduction of a stall found
# while testing issue 20, kept for whoever fixes it. In about 1 run in 3 the
# producer's next transaction after the restart makes no progress until
# transaction.timeout.ms (60 s) aborts it, then the producer is fenced
# (ProducerFencedException) and the run fails. It happens with
# transactions v1 and v2 alike, and also with the partition leaders'
# KIP-890 verification switched off (tried): not caused by issue 20's
# changes. Seen with v2: the restarted node (transaction and group
# coordinator) answered the retried TxnOffsetCommit NOT_COORDINATOR for
# the whole 60 s.
# usage: SKIFF_BIN_DIR=$PWD/bin SKIFF_TEST_DIR=$PWD/build/test bash test/integration/repro_java_txn_failover.sh
#
# A coordinator crash under the Java client of Apache Kafka 4.x
# (test/java/src/TxnProducer.java): 30 transactions (every third aborted,
# each with sendOffsetsToTransaction, 300 ms apart) on 3 nodes; after the
# 5th the node that coordinates its transactional id is killed -9 and
# restarted (its __transaction_state partition has one replica: the
# restarted node replays it). The producer carries on: read_committed sees
# exactly the committed transactions' records and the group's offset is
# the last committed one's. transaction.version 0 (transactions v1: downgraded
# from a new cluster's 2; t_java_txn_failover.sh is the v2 failover test).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/txn_lib.sh"
NAME=repro_java_txn_failover
CP=$("$SK_ROOT/test/java/build.sh" 2>"$SK_TMP/java-build.err") ||
  { cat "$SK_TMP/java-build.err"; sk_fail "java harness not built (test/java/build.sh)"; }
CTL="$SK_BIN/skiffctl"
TID=java-txn-ft
TXNS=30

sk_start_cluster 3 --set transaction.state.log.replication.factor=1 --set transaction.state.log.num.partitions=3 \
  --set offsets.topic.replication.factor=1 --set offsets.topic.num.partitions=3
ready() { [ "$(curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[1]}/v1/cluster" | jq '[.brokers[] | select(.fenced == false)] | length' 2>/dev/null)" = 3 ]; }
t=0; until ready; do sleep 0.2; t=$((t + 1)); [ $t -lt 150 ] || sk_fail "3 unfenced brokers not seen"; done
"$CTL" feature downgrade --feature transaction.version=0 -b "$SK_BOOTSTRAP" >/dev/null
lvl=$("$CTL" feature list --json -b "$SK_BOOTSTRAP" | jq '.features[] | select(.feature == "transaction.version") | .finalized')
sk_check "transaction.version downgraded to 0 ($lvl)" test "$lvl" = 0

SKIFF_JAVA_OPTS="-Dtxn.progress=$SK_TMP/progress" timeout 240 "$SK_ROOT/test/java/run.sh" TxnProducer \
  "$SK_BOOTSTRAP" jft 3 "$TXNS" "$TID" jgft 300 >"$SK_TMP/java.out" 2>"$SK_TMP/java.err" &
JPID=$!
SK_PIDS+=("$JPID")
done_txns() { cat "$SK_TMP/progress" 2>/dev/null || echo 0; }
t=0; until [ "$(done_txns)" -ge 5 ]; do sleep 0.2; t=$((t + 1)); [ $t -lt 300 ] || break; done
sk_check "5 transactions done before the crash ($(done_txns))" test "$(done_txns)" -ge 5
coord=$(txn_coord_node 1 __transaction_state "$TID" 3)
sk_check "coordinator of $TID found ($coord)" test -n "$coord" -a "$coord" -ge 1 2>/dev/null
sk_log "kill -9 node $coord (coordinator of $TID) after $(done_txns) transactions"
sk_kill9_node "$coord"
sleep 1
sk_start_node "$coord"
sk_wait_port "${SK_KAFKA_PORT[coord]}" 30 "${SK_NODE_PID[coord]}" || sk_fail "node $coord did not come back"
wait "$JPID"; rc=$?
sk_check_lines <"$SK_TMP/java.out"
sk_check "the producer finished all $TXNS transactions (exit $rc, progress $(done_txns))" \
  bash -c '[ "$1" = 0 ] && [ "$2" = "$3" ]' _ "$rc" "$(done_txns)" "$TXNS"
for ((i = 1; i <= 3; i++)); do sk_check "node $i running" kill -0 "${SK_NODE_PID[i]}"; done
[ "$SK_FAILS" -eq 0 ] || { tail -n 40 "$SK_TMP/java.err"; sk_dump_logs; }
sk_summary "$NAME"
