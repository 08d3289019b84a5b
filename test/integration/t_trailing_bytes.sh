#!/usr/bin/env bash
# Requests with bytes after their body (issue 22). Kafka reads a request by
# its schema and ignores the rest of the frame; librdkafka 2.0.2 sends
# ListGroups v4 with one extra byte and OffsetFetch v7 (null topics) with
# three, so a broker that refuses them fails rd_kafka_ListConsumerGroups and
# rd_kafka_ListConsumerGroupOffsets with a transport error.
#  1. librdkafka's own admin calls (test/tools/rk_groups) list the group and
#     its committed offset;
#  2. clients/trailing_bytes.py: every advertised API x version, default body
#     with and without extra bytes, answered alike; hand-built requests with
#     content answered byte for byte as without the bytes; bodies cut short
#     still close the connection.
. "$(dirname "$0")/lib.sh"
NAME=t_trailing_bytes
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools
[ -x "$TOOLS/rk_groups" ] && [ -x "$TOOLS/kpdump" ] || sk_fail "build the test programs first (make test-programs)"
TOPIC=trail-t
GROUP=trail-g

sk_start_cluster 1 --set num.partitions=1 --set auto.create.topics.enable=true
BOOT=$SK_BOOTSTRAP
printf 'a\nb\nc\nd\n' | timeout 30 kcat -q -b "$BOOT" -P -t "$TOPIC" -p 0 2>"$SK_TMP/kcat.err"

timeout 90 "$TOOLS/rk_groups" "$BOOT" "$GROUP" "$TOPIC" 3 >"$SK_TMP/rk.out" 2>"$SK_TMP/rk.err"; rc=$?
cat "$SK_TMP/rk.out" "$SK_TMP/rk.err"
sk_check "librdkafka ListConsumerGroups + ListConsumerGroupOffsets succeed (exit $rc)" test "$rc" -eq 0
sk_check "ListConsumerGroups lists $GROUP" grep -q "^group $GROUP " "$SK_TMP/rk.out"
sk_check "ListConsumerGroupOffsets gives $TOPIC/0 at 3" grep -qx "offset $TOPIC 0 3" "$SK_TMP/rk.out"
sk_check "no librdkafka request was refused as malformed" bash -c "! grep -q 'malformed request' '$SK_TMP'/node-1.log"

timeout 600 "$SK_PY" "$HERE/clients/trailing_bytes.py" "$BOOT" "$TOOLS/kpdump" "$TOPIC" "$GROUP" \
  >"$SK_TMP/trail.out" 2>&1
echo "trailing_bytes.py: $(grep -c '^PASS ' "$SK_TMP/trail.out") cases passed"
before=$((SK_PASS + SK_FAILS))
# PASS lines count silently, FAIL lines are printed by sk_check, others shown
sk_check_lines < "$SK_TMP/trail.out"
sk_check "trailing_bytes.py ran all its cases" test $((SK_PASS + SK_FAILS - before)) -ge 100
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { cat "$SK_TMP/kcat.err"; sk_dump_logs; }
sk_summary "$NAME"
