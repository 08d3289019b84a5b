#!/usr/bin/env bash
# Transactions v2 (KIP-890, issue 20) by raw frames on one node
# (clients/txn_v2_raw.py): AddPartitionsToTxn v4-5 (VerifyOnly and adding
# batches, unknown partitions / ids, wrong producer id / epoch) and EndTxn
# v5 (epoch bumped per transaction, retry, fencing of the old epoch). The
# v1 clients' transaction tests (t_txn_kafkajs.sh, t_txn_confluent.sh, ...)
# show that nothing changed for them.
. "$(dirname "$0")/lib.sh"
NAME=t_txn_v2
HERE=$(cd "$(dirname "$0")" && pwd)

sk_start_cluster 1 --set transaction.state.log.num.partitions=4
sk_check_lines < <(cd "$HERE/clients" && timeout 120 "$SK_PY" txn_v2_raw.py "$SK_BOOTSTRAP" 2>"$SK_TMP/raw.err")
sk_check "txn_v2_raw ran all its checks" test "$((SK_PASS + SK_FAILS))" -ge 20
[ -s "$SK_TMP/raw.err" ] && tail -n 20 "$SK_TMP/raw.err"
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || sk_dump_logs
sk_summary "$NAME"
