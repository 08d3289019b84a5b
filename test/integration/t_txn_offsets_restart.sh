#!/usr/bin/env bash
# TxnOffsetCommit, then the group coordinator's node killed -9 and
# restarted, then commit: the offsets must become the group's (issue 9).
# The restarted leader answers the COMMIT marker UNKNOWN_TOPIC_OR_PARTITION
# until its metadata has caught up; the coordinator must retry it (it once
# took it as final: the offsets stayed unstable, ~1 run in 4).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/txn_lib.sh"
NAME=t_txn_offsets_restart
CL="$SK_PY $SK_ROOT/test/integration/clients"
ARGS=(--set default.replication.factor=1 --set offsets.topic.replication.factor=1
  --set transaction.state.log.replication.factor=1 --set group.initial.rebalance.delay.ms=0
  --set transaction.state.log.num.partitions=6 --set offsets.topic.num.partitions=6)
sk_start_cluster 3 "${ARGS[@]}"
adm() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
ready() { [ "$(adm 1 /v1/cluster | jq '[.brokers[] | select(.fenced == false)] | length' 2>/dev/null)" = 3 ]; }
t=0; until ready; do sleep 0.2; t=$((t + 1)); [ $t -lt 150 ] || sk_fail "3 unfenced brokers not seen"; done
$SK_PY - "$SK_BOOTSTRAP" <<'PY' || sk_fail "topic tfence not created"
import sys
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({'bootstrap.servers': sys.argv[1]})
for f in a.create_topics([NewTopic('tfence', 3, 1)], operation_timeout=20).values():
    f.result()
PY
# ---- TxnOffsetCommit survives a restart of the group coordinator -------------
# sendOffsets, then the node coordinating the group is killed -9 and
# restarted before the commit: the offsets are in __consumer_offsets as the
# producer's transactional batch, so the replay holds them and the COMMIT
# marker makes them the group's.
mkfifo "$SK_TMP/go"
$CL/txn_misc.py offsets_restart "$SK_BOOTSTRAP" tfence offs-group < "$SK_TMP/go" > "$SK_TMP/offs.log" 2>&1 &
OP=$!; SK_PIDS+=("$OP")
exec 7> "$SK_TMP/go"
t=0; until grep -q '^ready' "$SK_TMP/offs.log"; do sleep 0.1; t=$((t + 1)); [ $t -lt 600 ] || break; done
G=$(txn_coord_node 1 __consumer_offsets offs-group 6)
sk_log "group coordinator of offs-group: node $G"
if [ -n "$G" ] && [ "$G" -ge 1 ] 2>/dev/null; then
  sk_kill9_node "$G"
  sk_start_node "$G" "${ARGS[@]}"
  sk_wait_port "${SK_KAFKA_PORT[G]}" 30 "${SK_NODE_PID[G]}" || sk_fail "node $G did not restart"
fi
echo go >&7; exec 7>&-
t=0; while kill -0 "$OP" 2>/dev/null; do sleep 0.2; t=$((t + 1)); [ $t -lt 600 ] || { kill -KILL "$OP"; break; }; done
sk_check_lines < <(grep -E '^(PASS|FAIL) ' "$SK_TMP/offs.log")
# The restarted node unfences on its first heartbeat after registering
# (issue 5): poll for it, so a "still fenced" below means stuck, not early.
if [ -n "$G" ] && [ "$G" -ge 1 ] 2>/dev/null; then
  S=$(( G % 3 + 1 ))
  t=0
  until [ "$(adm "$S" /v1/cluster | jq "[.brokers[] | select(.node_id == $G and .fenced == false)] | length" 2>/dev/null)" = 1 ]; do
    sleep 0.2; t=$((t + 1)); [ $t -lt 100 ] || break
  done
  sk_check "restarted node $G unfenced (seen by node $S) within 20 s" test "$t" -lt 100
fi
off=$($CL/txn_misc.py committed "$SK_BOOTSTRAP" tfence offs-group 2>>"$SK_TMP/read.err")
sk_check "offsets sent in the transaction are the group's after the restart ($off)" test "$off" = 123
if [ "$off" != 123 ]; then
  # Once seen ~1 run in 10 (issue 5): the read came within a second of the
  # restart, before the node's first heartbeat unfenced it, and librdkafka
  # reported NOT_COORDINATOR at once. Say so if the node is fenced now.
  S=$(( ${G:-0} % 3 + 1 ))
  [ "$(adm "$S" /v1/cluster | jq "[.brokers[] | select(.node_id == ${G:-0} and .fenced == true)] | length" 2>/dev/null)" = 1 ] &&
    echo "NOTE: restarted node $G is still fenced (seen by node $S): broker lifecycle, see test/integration/README.md"
  tail -n 3 "$SK_TMP/read.err"
  $CL/txn_misc.py describe "$SK_BOOTSTRAP" offs-restart
  for i in 1 2 3; do
    echo "node $i: $(adm "$i" /v1/cluster | jq -c '[.controller_id, [.brokers[] | [.node_id, .fenced]]]' 2>/dev/null)"
    echo "  __consumer_offsets: $(adm "$i" /v1/topics/__consumer_offsets | jq -c '[.partitions[] | [.partition, .leader, .isr, .log_end_offset]]' 2>/dev/null)"
    echo "  transactions: $(adm "$i" /v1/transactions | jq -c . 2>/dev/null | cut -c1-600)"
  done
  sk_dump_logs
fi

sk_summary "$NAME"
