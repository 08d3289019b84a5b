#!/usr/bin/env bash
# A node that is the active controller is killed -9 and restarted at once,
# ROUNDS times: each time it must register with the new controller and be
# unfenced within a few seconds, in its own view and another node's
# (issue 5). The heartbeat interval is long (6 s) on purpose: a broker must
# send its first heartbeat right after registering, and heartbeat fast while
# the controller still reports it fenced, not wait an interval — the
# restarted node used to stay fenced (partitions leaderless) that long.
. "$(dirname "$0")/lib.sh"
NAME=t_quorum_restart
ROUNDS=${SK_ROUNDS:-6}
UNFENCE_S=5
ARGS=(--set default.replication.factor=1 --set offsets.topic.replication.factor=1
  --set transaction.state.log.replication.factor=1
  --set broker.heartbeat.interval.ms=6000 --set broker.session.timeout.ms=20000)
sk_start_cluster 3 "${ARGS[@]}"
adm() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
# unfenced N OBSERVER: OBSERVER's view has node N registered and unfenced
unfenced() { [ "$(adm "$2" /v1/cluster | jq "[.brokers[] | select(.node_id == $1 and .fenced == false)] | length" 2>/dev/null)" = 1 ]; }
all_unfenced() { [ "$(adm "$1" /v1/cluster | jq '[.brokers[] | select(.fenced == false)] | length' 2>/dev/null)" = 3 ]; }
controller() { adm "$1" /v1/quorum | jq -r '.leader_id // -1' 2>/dev/null; }
t=0; until all_unfenced 1; do sleep 0.2; t=$((t + 1)); [ $t -lt 150 ] || sk_fail "3 unfenced brokers not seen"; done
for ((r = 1; r <= ROUNDS; r++)); do
  C=-1
  for i in 1 2 3; do c=$(controller "$i"); [ -n "$c" ] && [ "$c" -ge 1 ] 2>/dev/null && { C=$c; break; }; done
  [ "$C" -ge 1 ] || sk_fail "round $r: no controller"
  S=$(( C % 3 + 1 ))
  sk_kill9_node "$C"
  sk_start_node "$C" "${ARGS[@]}"
  sk_wait_port "${SK_KAFKA_PORT[C]}" 30 "${SK_NODE_PID[C]}" || sk_fail "round $r: node $C did not restart"
  # its new incarnation's registration fences the old one; the first
  # heartbeat after it (offset past the registration) unfences it
  t0=$(date +%s%N); ok=1
  until unfenced "$C" "$S" && all_unfenced "$C" && all_unfenced "$S"; do
    sleep 0.1
    [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt $((UNFENCE_S * 1000)) ] || { ok=0; break; }
  done
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  sk_log "round $r: node $C (controller) restarted; unfenced everywhere $ms ms after its port opened"
  sk_check "round $r: restarted controller node $C unfenced within $UNFENCE_S s (heartbeat interval 6 s)" test "$ok" = 1
  [ "$ok" = 1 ] || { for i in 1 2 3; do echo "node $i: $(adm "$i" /v1/cluster | jq -c '[.controller_id, [.brokers[] | [.node_id, .fenced]]]' 2>/dev/null)"; done; sk_dump_logs; break; }
done
sk_summary "$NAME"
