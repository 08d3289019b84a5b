#!/usr/bin/env bash
# A transactional batch is never appended unverified (issue 19 review,
# KIP-890 part 1; clients/txn_unverified_raw.py on one node): no
# __transaction_state yet -> NOT_ENOUGH_REPLICAS (retriable), an id the
# local coordinator never saw -> INVALID_TXN_STATE, nothing appended;
# idempotent producers and a real transaction unaffected.
. "$(dirname "$0")/lib.sh"
NAME=t_txn_unverified
HERE=$(cd "$(dirname "$0")" && pwd)

sk_start_cluster 1 --set transaction.state.log.num.partitions=2
sk_check_lines < <(cd "$HERE/clients" && timeout 90 "$SK_PY" txn_unverified_raw.py "$SK_BOOTSTRAP" 2>"$SK_TMP/raw.err")
[ -s "$SK_TMP/raw.err" ] && tail -n 20 "$SK_TMP/raw.err"
sk_check "txn_unverified_raw ran all its checks" test "$((SK_PASS + SK_FAILS))" -ge 9
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || sk_dump_logs
sk_summary "$NAME"
