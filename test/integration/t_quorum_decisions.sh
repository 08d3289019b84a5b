#!/usr/bin/env bash
# Controller decisions on a 3-node quorum:
#  - decisions in flight are computed against the image plus what is
#    proposed but not committed: two CreateTopics of one name sent together
#    to the controller give exactly one success and one TOPIC_ALREADY_EXISTS
#    (36); two CreatePartitions to the same count give one success and one
#    INVALID_PARTITIONS (37) — never an error at apply;
#  - a cluster-wide dynamic broker config (AlterConfigs on BROKER "") sent
#    through node 2 reaches every node's running config: DescribeConfigs on
#    node 3 shows it as DYNAMIC_DEFAULT_BROKER_CONFIG (3) and a topic without
#    an override there takes the new value; removing it restores the default.
. "$(dirname "$0")/lib.sh"
QM="$SK_PY $SK_ROOT/test/integration/quorum_meta.py"
command -v jq >/dev/null || { echo "t_quorum_decisions: jq missing"; exit 1; }

sk_write_cluster_conf 3
OPTS=(--set controller.quorum.fetch.timeout.ms=1000 --set controller.quorum.election.timeout.ms=500
      --set broker.heartbeat.interval.ms=500 --set broker.session.timeout.ms=3000)
for i in 1 2 3; do sk_start_node "$i" "${OPTS[@]}"; done
for i in 1 2 3; do sk_wait_port "${SK_ADMIN_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i admin port not up"; done

adm() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
agree() {  # every node names the same controller and sees 3 unfenced brokers
  local i l="" x
  for i in 1 2 3; do
    x=$(adm "$i" /v1/cluster | jq -r '"\(.controller_id) \([.brokers[] | select(.fenced == false)] | length)"' 2>/dev/null)
    [ -n "$x" ] && [ "${x%% *}" != -1 ] && [ "${x##* }" = 3 ] || return 1
    [ -z "$l" ] && l=${x%% *}
    [ "${x%% *}" = "$l" ] || return 1
  done
  echo "$l"
}
t=0
while ! L=$(agree); do sleep 0.2; t=$((t + 1)); [ "$t" -lt 150 ] || sk_fail "no agreement on a controller"; done
ctl="127.0.0.1:${SK_KAFKA_PORT[$L]}"
sk_log "controller: node $L"

# ---- racing decisions -----------------------------------------------------------
for k in 1 2 3 4 5; do
  sk_check "racing CreateTopics #$k: one created, one TOPIC_ALREADY_EXISTS" \
    test "$($QM race-create "$ctl" "race-$k")" = "errors=0,36"
done
sk_check "create grow (1 partition)" $QM create "$ctl" grow 1 1
for n in 3 5; do
  sk_check "racing CreatePartitions to $n: one done, one INVALID_PARTITIONS" \
    test "$($QM race-partitions "$ctl" grow "$n")" = "errors=0,37"
done
parts_on() { $QM metadata "127.0.0.1:${SK_KAFKA_PORT[$1]}" >/dev/null && adm "$1" /v1/topics/grow | jq -r '.partitions | length' 2>/dev/null; }
wait_parts() { local i t=0; for i in 1 2 3; do while [ "$(parts_on "$i")" != "$1" ]; do sleep 0.2; t=$((t + 1)); [ "$t" -lt 50 ] || return 1; done; done; }
sk_check "every node sees grow with 5 partitions" wait_parts 5
sk_check "no record was refused at apply on any node" \
  bash -c "! grep -l 'does not apply' '$SK_TMP'/node-*.log"

# ---- dynamic broker config through node 2 ------------------------------------------
n3="127.0.0.1:${SK_KAFKA_PORT[3]}"
sk_check "create plain (no overrides)" $QM create "$ctl" plain 1 3
sk_check "AlterConfigs BROKER \"\" log.retention.ms=3600000 through node 2" \
  $QM alter-broker "127.0.0.1:${SK_KAFKA_PORT[2]}" "" log.retention.ms 3600000
wait_desc() {  # wait_desc EXPECTED TYPE NAME KEY (on node 3)
  local t=0
  while [ "$($QM describe "$n3" "$2" "$3" "$4")" != "$1" ]; do sleep 0.2; t=$((t + 1)); [ "$t" -lt 50 ] || return 1; done
}
sk_check "node 3: log.retention.ms is DYNAMIC_DEFAULT_BROKER_CONFIG 3600000" \
  wait_desc "value=3600000 source=3" 4 3 log.retention.ms
sk_check "node 3: topic plain takes retention.ms 3600000" \
  test "$($QM describe "$n3" 2 plain retention.ms | sed 's/ source=.*//')" = "value=3600000"
sk_check "node 1: log.retention.ms is DYNAMIC_DEFAULT_BROKER_CONFIG 3600000" \
  test "$($QM describe "127.0.0.1:${SK_KAFKA_PORT[1]}" 4 1 log.retention.ms)" = "value=3600000 source=3"
# AlterConfigs replaces the whole set of the resource: log.retention.ms goes
sk_check "AlterConfigs BROKER \"\" {log.roll.jitter.ms=0} through node 2" \
  $QM alter-broker "127.0.0.1:${SK_KAFKA_PORT[2]}" "" log.roll.jitter.ms 0
sk_check "node 3: log.retention.ms removed (default again)" wait_desc "value=None source=5" 4 3 log.retention.ms
sk_check "node 3: topic plain back to retention.ms 604800000" \
  test "$($QM describe "$n3" 2 plain retention.ms | sed 's/ source=.*//')" = "value=604800000"

sk_summary t_quorum_decisions
