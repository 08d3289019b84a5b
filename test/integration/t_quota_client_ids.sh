#!/usr/bin/env bash
# Client quotas compare client ids whole (issue 19 review;
# clients/quota_long_ids.py): two 256-byte ids sharing their first 255
# bytes have their own allowances, and neither takes the quota named by
# that prefix. One node, raw Produce frames.
. "$(dirname "$0")/lib.sh"
NAME=t_quota_client_ids
CL=$SK_ROOT/test/integration/clients

sk_start_cluster 1
B=127.0.0.1:${SK_KAFKA_PORT[1]}
sk_check_lines < <(cd "$CL" && timeout 60 "$SK_PY" quota_long_ids.py "$B" 2>&1)
sk_check "quota_long_ids ran all its checks" test "$((SK_PASS + SK_FAILS))" -ge 6
m=$(curl -s --max-time 5 "127.0.0.1:${SK_ADMIN_PORT[1]}/metrics")
sk_check "metrics: the long ids shown by digest" grep -q 'client_id="x\{64\}\.\.\.sha256:[0-9a-f]\{64\}"' <<< "$m"
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || sk_dump_logs
sk_summary "$NAME"
