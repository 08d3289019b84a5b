#!/usr/bin/env bash
# Transactions v2 (KIP-890, issue 20) by raw frames on one node
# (clients/txn_v2_raw.py): AddPartitionsToTxn v4-5 (VerifyOnly and adding
# batches, unknown partitions / ids, wrong producer id / epoch) and EndTxn
# v5 (epoch bumped per transaction, retry, fencing of the old epoch). The
# v1 clients' transaction tests (t_txn_kafkajs.sh, t_txn_confluent.sh, ...)
# show that nothing changed for them. Then KIP-890 part 1 on 3 nodes
# (clients/txn_verify_raw.py): a transactional batch before
# AddPartitionsToTxn, or after the transaction ended, or of a fenced epoch,
# is refused by a leader that is not the coordinator (it asks the
# coordinator with AddPartitionsToTxn v4 VerifyOnly); nothing is appended.
. "$(dirname "$0")/lib.sh"
NAME=t_txn_v2
HERE=$(cd "$(dirname "$0")" && pwd)

sk_start_cluster 1 --set transaction.state.log.num.partitions=4
sk_check_lines < <(cd "$HERE/clients" && timeout 120 "$SK_PY" txn_v2_raw.py "$SK_BOOTSTRAP" 2>"$SK_TMP/raw.err")
sk_check "txn_v2_raw ran all its checks" test "$((SK_PASS + SK_FAILS))" -ge 20
[ -s "$SK_TMP/raw.err" ] && tail -n 20 "$SK_TMP/raw.err"
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || sk_dump_logs

# KIP-890 part 1 across brokers (clients/txn_verify_raw.py): a partition led
# by another node than the coordinator appends a transactional batch only
# once the coordinator verifies the transaction is open with it.
sk_stop_node 1
rm -rf "$SK_TMP/data"   # a new 3-node cluster
sk_start_cluster 3 --set transaction.state.log.num.partitions=3 --set transaction.state.log.replication.factor=1
ready() { [ "$(curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[1]}/v1/cluster" | jq '[.brokers[] | select(.fenced == false)] | length' 2>/dev/null)" = 3 ]; }
t=0; until ready; do sleep 0.2; t=$((t + 1)); [ $t -lt 150 ] || sk_fail "3 unfenced brokers not seen"; done
sk_check_lines < <(cd "$HERE/clients" && timeout 120 "$SK_PY" txn_verify_raw.py "$SK_BOOTSTRAP" 2>"$SK_TMP/verify.err")
[ -s "$SK_TMP/verify.err" ] && tail -n 20 "$SK_TMP/verify.err"
sk_check "txn_verify_raw ran all its checks" test "$((SK_PASS + SK_FAILS))" -ge 40
for ((i = 1; i <= 3; i++)); do sk_check "node $i still running" kill -0 "${SK_NODE_PID[i]}"; done
[ "$SK_FAILS" -eq 0 ] || sk_dump_logs
sk_summary "$NAME"
