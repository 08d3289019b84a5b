#!/usr/bin/env bash
# The Java client of Apache Kafka 4.x (test/java, kafka-clients pinned): a
# transactional KafkaProducer on 3 nodes (test/java/src/TxnProducer.java):
# 4 committed and 2 aborted transactions over 3 partitions led by different
# nodes, each with sendOffsetsToTransaction; read_committed /
# read_uncommitted consumers and the group's offset check the outcome.
# 1. transaction.version 0 (`skiffctl feature downgrade --feature
#    transaction.version=0`; a new cluster finalizes 2): the client runs
#    transactions v1 (AddPartitionsToTxn / AddOffsetsToTxn from
#    the client); first batches on a leader that is not the coordinator are
#    verified there (KIP-890 part 1); the producer epoch stays 0.
# 2. `skiffctl feature upgrade --feature transaction.version=2`: the same
#    client runs transactions v2 (Produce v12 and
#    TxnOffsetCommit v5 add the partitions through their leaders, EndTxn v5
#    bumps the epoch): the epoch is 6 after 6 transactions, and the client
#    sent no AddOffsetsToTxn at all.
. "$(dirname "$0")/lib.sh"
NAME=t_java_txn
CP=$("$SK_ROOT/test/java/build.sh" 2>"$SK_TMP/java-build.err") ||
  { cat "$SK_TMP/java-build.err"; sk_fail "java harness not built (test/java/build.sh)"; }
CTL="$SK_BIN/skiffctl"

sk_start_cluster 3 --set transaction.state.log.replication.factor=1 --set offsets.topic.replication.factor=1
ready() { [ "$(curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[1]}/v1/cluster" | jq '[.brokers[] | select(.fenced == false)] | length' 2>/dev/null)" = 3 ]; }
t=0; until ready; do sleep 0.2; t=$((t + 1)); [ $t -lt 150 ] || sk_fail "3 unfenced brokers not seen"; done
epoch() { "$CTL" txn describe "$1" --json -b "$SK_BOOTSTRAP" 2>/dev/null | jq -r .producer_epoch; }
# client-sent requests of one API, summed over the nodes (brokers' own
# AddPartitionsToTxn come with client id skiff-txn: counted apart below)
count() {
  local i n=0 c
  for ((i = 1; i <= 3; i++)); do
    c=$(curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[i]}/metrics" | awk -v a="$1" '$1 == "skiff_requests_total{api=\"" a "\"}" {print $2}')
    n=$((n + ${c:-0}))
  done
  echo "$n"
}

"$CTL" feature downgrade --feature transaction.version=0 -b "$SK_BOOTSTRAP" >/dev/null
out=$(timeout 180 "$SK_ROOT/test/java/run.sh" TxnProducer "$SK_BOOTSTRAP" jtxn1 3 6 java-txn-v1 jgroup1 2>"$SK_TMP/java1.err")
sk_check_lines <<<"$out"
sk_check "v1: the client saw transaction.version 0" grep -q "^transaction.version finalized: 0$" <<<"$out"
sk_check "v1: producer epoch still 0 after 6 transactions ($(epoch java-txn-v1))" test "$(epoch java-txn-v1)" = 0
v1_add=$(count AddPartitionsToTxn)
sk_check "v1: the client sent AddPartitionsToTxn ($v1_add)" test "$v1_add" -gt 0

"$CTL" feature upgrade --feature transaction.version=2 -b "$SK_BOOTSTRAP" >/dev/null
sk_check "transaction.version upgraded to 2" bash -c '"$1" feature list --json -b "$2" | jq -e ".features[] | select(.feature == \"transaction.version\") | .finalized == 2" >/dev/null' _ "$CTL" "$SK_BOOTSTRAP"
offs_before=$(count AddOffsetsToTxn)
out=$(timeout 180 "$SK_ROOT/test/java/run.sh" TxnProducer "$SK_BOOTSTRAP" jtxn2 3 6 java-txn-v2 jgroup2 2>"$SK_TMP/java2.err")
sk_check_lines <<<"$out"
sk_check "v2: the client saw transaction.version 2" grep -q "^transaction.version finalized: 2$" <<<"$out"
sk_check "v2: producer epoch 6 after 6 transactions: EndTxn v5 bumped it each time ($(epoch java-txn-v2))" test "$(epoch java-txn-v2)" = 6
sk_check "v2: the client sent no AddOffsetsToTxn (TxnOffsetCommit v5 added the partition)" test "$(count AddOffsetsToTxn)" = "$offs_before"
sk_check "TxnProducer ran all its checks" test "$((SK_PASS + SK_FAILS))" -ge 17
for ((i = 1; i <= 3; i++)); do sk_check "node $i still running" kill -0 "${SK_NODE_PID[i]}"; done
[ "$SK_FAILS" -eq 0 ] || { tail -n 30 "$SK_TMP/java1.err" "$SK_TMP/java2.err"; sk_dump_logs; }
sk_summary "$NAME"
