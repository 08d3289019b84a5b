#!/usr/bin/env bash
# kafkajs 2.2.4 (pinned in test/js) against one node: admin (create, list,
# metadata, cluster, configs, partitions, delete), idempotent gzip producer,
# offsets by time, a fetch through kafkajs's own broker client, and its group
# consumer once the node serves groups (until then one SKIP line says so).
. "$(dirname "$0")/lib.sh"
NAME=t_kafkajs
HERE=$(cd "$(dirname "$0")" && pwd)
JS=$SK_ROOT/test/js/node_modules
[ -d "$JS/kafkajs" ] || (cd "$SK_ROOT/test/js" && npm ci --silent --no-audit --no-fund) ||
  sk_fail "kafkajs not installed (npm ci in test/js)"

sk_start_cluster 1
sk_check_lines < <(NODE_PATH=$JS timeout 240 node "$HERE/clients/kafkajs_check.js" "$SK_BOOTSTRAP" 2>"$SK_TMP/js.err")
sk_check "kafkajs_check ran all its checks" test $((SK_PASS + SK_FAILS)) -ge 16
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { tail -n 30 "$SK_TMP/js.err"; sk_dump_logs; }
sk_summary "$NAME"
