#!/usr/bin/env bash
# Issue 20 (transactions-v2 side), raw frames against one node and then a
# 3-node cluster: ApiVersions v3/v4 supported and finalized features (a new
# cluster finalizes metadata.version 25 and group.version 1),
# UpdateFeatures v0-2 (every error rule, validate_only, downgrade and
# upgrade, v2 top-level errors), DescribeTopicPartitions v0 with its cursor
# (clients/features_raw.py); skiffctl feature list / upgrade; on 3 nodes
# UpdateFeatures sent to a node that is not the controller is forwarded and
# every node then advertises the new level.
. "$(dirname "$0")/lib.sh"
NAME=t_features
HERE=$(cd "$(dirname "$0")" && pwd)

sk_start_cluster 1
sk_check_lines < <(cd "$HERE/clients" && timeout 120 "$SK_PY" features_raw.py "$SK_BOOTSTRAP" 2>"$SK_TMP/raw.err")
sk_check "features_raw ran all its checks" test "$((SK_PASS + SK_FAILS))" -ge 25
[ -s "$SK_TMP/raw.err" ] && tail -n 20 "$SK_TMP/raw.err"
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || sk_dump_logs
sk_summary "$NAME"
