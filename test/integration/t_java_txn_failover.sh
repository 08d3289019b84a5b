#!/usr/bin/env bash
# Transactions v2 (KIP-890 part 2) across kill -9 failovers, with the Java
# client of Apache Kafka 4.x (test/java/src/TxnProducer.java) on 3 nodes.
# A new cluster finalizes transaction.version 2 (as Kafka 4.0 does), so the
# client adds partitions through Produce v12 / TxnOffsetCommit v5 and bumps
# its epoch with EndTxn v5. __transaction_state, __consumer_offsets and the
# topic have replication factor 3 and min.insync.replicas=2.
# 30 transactions (every third aborted, each with sendOffsetsToTransaction);
# after the 5th the node coordinating the transactional id is killed -9 and
# kept down until the producer has done 4 more transactions (another node
# coordinates from its replica of the log), then restarted; once every
# replica is back in sync the coordinator of that moment is killed -9 too
# and restarted the same way. The producer must finish every transaction:
# read_committed then sees exactly the records of the committed ones (each
# once: nothing acknowledged lost, nothing doubled), read_uncommitted every
# record once, the group's offset is the last committed transaction's, and
# the producer epoch shows EndTxn v5 bumped it once per transaction.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/txn_lib.sh"
NAME=t_java_txn_failover
CP=$("$SK_ROOT/test/java/build.sh" 2>"$SK_TMP/java-build.err") ||
  { cat "$SK_TMP/java-build.err"; sk_fail "java harness not built (test/java/build.sh)"; }
CTL="$SK_BIN/skiffctl"
TID=java-txn-fo
TOPIC=jfo
TXNS=30
T0=$(date +%s)

OPTS=(--set controller.quorum.fetch.timeout.ms=500 --set controller.quorum.election.timeout.ms=300
      --set broker.heartbeat.interval.ms=300 --set broker.session.timeout.ms=2500
      --set replica.lag.time.max.ms=2000 --set group.initial.rebalance.delay.ms=0
      --set offsets.topic.replication.factor=3 --set transaction.state.log.replication.factor=3
      --set min.insync.replicas=2 --set transaction.state.log.num.partitions=3
      --set offsets.topic.num.partitions=3)
sk_start_cluster 3 "${OPTS[@]}"
adm() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
waitfor() {  # waitfor SECONDS command... (polls every 0.2 s)
  local lim=$(($1 * 5)) t=0; shift
  until "$@" >/dev/null 2>&1; do sleep 0.2; t=$((t + 1)); [ "$t" -lt "$lim" ] || return 1; done
}
unfenced() { [ "$(adm "$1" /v1/cluster | jq '[.brokers[] | select(.fenced == false)] | length' 2>/dev/null)" = "$2" ]; }
waitfor 30 unfenced 1 3 || sk_fail "3 unfenced brokers not seen"
lvl=$("$CTL" feature list --json -b "$SK_BOOTSTRAP" | jq '.features[] | select(.feature == "transaction.version") | .finalized')
sk_check "a new cluster has transaction.version 2 finalized ($lvl)" test "$lvl" = 2

# SKIFF_JAVA_OPTS from the caller is kept (e.g. the client's debug logs:
# -Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.producer.internals=debug)
SKIFF_JAVA_OPTS="-Dtxn.progress=$SK_TMP/progress -Dtxn.rf=3 ${SKIFF_JAVA_OPTS:-}" timeout 150 "$SK_ROOT/test/java/run.sh" TxnProducer \
  "$SK_BOOTSTRAP" "$TOPIC" 3 "$TXNS" "$TID" jgfo 200 >"$SK_TMP/java.out" 2>"$SK_TMP/java.err" &
JPID=$!
SK_PIDS+=("$JPID")
done_txns() { cat "$SK_TMP/progress" 2>/dev/null || echo 0; }
reached() { [ "$(done_txns)" -ge "$1" ]; }
# every partition of topic $2, seen by node $1, has its 3 replicas in sync
isr3() { [ "$(adm "$1" "/v1/topics/$2" | jq '[.partitions[] | select((.isr | length) < 3)] | length' 2>/dev/null)" = 0 ]; }
live_node() { local i; for ((i = 1; i <= 3; i++)); do [ "$i" = "$1" ] || { echo "$i"; return; }; done; }

# failover ROUND: kill -9 the coordinator of $TID, wait for 4 more
# transactions without it, restart it, wait until it is back in every ISR
failover() {
  local round=$1 ask coord at t1 t2
  ask=$(live_node 0)
  coord=$(txn_coord_node "$ask" __transaction_state "$TID" 3)
  sk_check "round $round: coordinator of $TID found ($coord)" test -n "$coord" -a "$coord" -ge 1 2>/dev/null
  [ -n "$coord" ] && [ "$coord" -ge 1 ] 2>/dev/null || return
  at=$(done_txns)
  sk_log "round $round: kill -9 node $coord (coordinator of $TID) after $at transactions"
  t1=$(date +%s%N)
  sk_kill9_node "$coord"
  waitfor 60 reached $((at + 4))
  t2=$(date +%s%N)
  sk_check "round $round: 4 transactions done with node $coord down ($(done_txns) after $(( (t2 - t1) / 1000000 )) ms)" \
    reached $((at + 4))
  sk_log "round $round: new coordinator node $(txn_coord_node "$(live_node "$coord")" __transaction_state "$TID" 3); restarting node $coord"
  sk_start_node "$coord" "${OPTS[@]}"
  sk_wait_port "${SK_KAFKA_PORT[coord]}" 30 "${SK_NODE_PID[coord]}" || sk_fail "node $coord did not come back"
  for t in __transaction_state __consumer_offsets "$TOPIC"; do
    waitfor 30 isr3 "$coord" "$t"
    sk_check "round $round: node $coord back in every ISR of $t" isr3 "$coord" "$t"
  done
}

waitfor 60 reached 5
sk_check "5 transactions done before the first kill ($(done_txns))" reached 5
failover 1
failover 2
wait "$JPID"; rc=$?
sk_check_lines <"$SK_TMP/java.out"
sk_check "the producer finished all $TXNS transactions (exit $rc, progress $(done_txns))" \
  bash -c '[ "$1" = 0 ] && [ "$2" = "$3" ]' _ "$rc" "$(done_txns)" "$TXNS"
sk_check "the client saw transaction.version 2" grep -q "^transaction.version finalized: 2$" "$SK_TMP/java.out"
sk_check "TxnProducer ran all its checks" test "$(grep -c '^PASS\|^FAIL' "$SK_TMP/java.out")" -ge 5
ep=$("$CTL" txn describe "$TID" --json -b "$SK_BOOTSTRAP" 2>/dev/null | jq -r .producer_epoch)
# transactions v1 keeps epoch 0; v2 bumps it once per EndTxn (an
# InitProducerId after a failure would bump it too, so at least TXNS)
sk_check "producer epoch >= $TXNS: EndTxn v5 bumped it per transaction ($ep)" test "${ep:-0}" -ge "$TXNS"
for ((i = 1; i <= 3; i++)); do sk_check "node $i running" kill -0 "${SK_NODE_PID[i]}"; done
sk_log "wall time $(( $(date +%s) - T0 )) s"
[ "$SK_FAILS" -eq 0 ] || { tail -n 40 "$SK_TMP/java.err"; sk_dump_logs; }
sk_summary "$NAME"
