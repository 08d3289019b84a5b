#!/usr/bin/env bash
# kafkajs 2.2.4 transactions on one node (issue 9): commit + abort with
# sendOffsets, read_committed vs read_uncommitted consumers, group offsets
# visible only from the committed transaction (clients/kafkajs_txn.js);
# the admin port's GET /v1/transactions.
. "$(dirname "$0")/lib.sh"
NAME=t_txn_kafkajs
HERE=$(cd "$(dirname "$0")" && pwd)
JS=$SK_ROOT/test/js/node_modules
[ -d "$JS/kafkajs" ] || (cd "$SK_ROOT/test/js" && npm ci --silent --no-audit --no-fund) ||
  sk_fail "kafkajs not installed (npm ci in test/js)"

sk_start_cluster 1 --set group.initial.rebalance.delay.ms=0
sk_check_lines < <(NODE_PATH=$JS timeout 300 node "$HERE/clients/kafkajs_txn.js" "$SK_BOOTSTRAP" 2>"$SK_TMP/js.err")
sk_check "kafkajs_txn ran all its checks" test $((SK_PASS + SK_FAILS)) -ge 6
# admin port: GET /v1/transactions shows the id, its last outcome, no partitions left
tx=$(curl -s --max-time 5 "127.0.0.1:${SK_ADMIN_PORT[1]}/v1/transactions")
sk_check "admin /v1/transactions: js-txn-1 CompleteAbort, complete list ($tx)" test "$(echo "$tx" | jq -r \
  '[.complete, (.transactions[] | select(.transactional_id == "js-txn-1") | .state, (.partitions | length))] | map(tostring) | join(" ")')" = "true CompleteAbort 0"
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { tail -n 30 "$SK_TMP/js.err"; sk_dump_logs; }
sk_summary "$NAME"
