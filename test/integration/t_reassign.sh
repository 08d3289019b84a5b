#!/usr/bin/env bash
# Partition reassignment and leader elections on 3 nodes (issue 5):
#  - kafkajs alterPartitionReassignments moves mv-0 from [1,2] (leader 1) to
#    [2,3]: listed in progress or done, completes once 3 is in the ISR, the
#    leader leaves broker 1, every acks=all record is readable from the new
#    leader, more acks=all produce works, broker 1 drops its copy;
#  - a reassignment of cx-0 to a stopped broker stays in progress and a
#    cancel (raw frame: kafkajs cannot send null replicas) restores [1,2];
#    wire errors: unknown broker 39, no reassignment 85, unknown partition 3;
#  - ElectLeaders (raw frame, through a non-controller node): after kill -9 of
#    el-0's preferred leader and its return to the ISR, leadership moves back
#    (0), then 84 ELECTION_NOT_NEEDED; unknown type -> 42;
#  - auto.leader.rebalance.enable with a 2 s check interval: after a restart
#    the preferred replica leads again by itself.
. "$(dirname "$0")/lib.sh"
NAME=t_reassign
HERE=$(cd "$(dirname "$0")" && pwd)
JS=$SK_ROOT/test/js/node_modules
RAW="$SK_PY $HERE/clients/reassign_raw.py"
command -v jq >/dev/null || { echo "$NAME: jq missing"; exit 1; }
command -v kcat >/dev/null || { echo "$NAME: kcat missing"; exit 1; }
[ -d "$JS/kafkajs" ] || (cd "$SK_ROOT/test/js" && npm ci --silent --no-audit --no-fund) ||
  sk_fail "kafkajs not installed (npm ci in test/js)"
kjs() { NODE_PATH=$JS timeout 60 node "$HERE/clients/kafkajs_reassign.js" "$SK_BOOTSTRAP" "$@" 2>>"$SK_TMP/js.err"; }

OPTS=(--set controller.quorum.fetch.timeout.ms=500 --set controller.quorum.election.timeout.ms=200
      --set broker.heartbeat.interval.ms=500 --set broker.session.timeout.ms=3000
      --set replica.fetch.wait.max.ms=100)
NO_REBALANCE=(--set auto.leader.rebalance.enable=false)
sk_write_cluster_conf 3
for i in 1 2 3; do sk_start_node "$i" "${OPTS[@]}" "${NO_REBALANCE[@]}"; done
for i in 1 2 3; do sk_wait_port "${SK_KAFKA_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i not up"; done

adm() { curl -s --max-time 3 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
# "leader replicas isr adding removing" of TOPIC-0 as node I sees it
pstate() {
  adm "$1" "/v1/topics/$2" | jq -r '.partitions[0] | "\(.leader) \(.replicas|map(tostring)|join(",")) \(.isr|sort|map(tostring)|join(",")) \(.adding_replicas|map(tostring)|join(",")) \(.removing_replicas|map(tostring)|join(","))"' 2>/dev/null
}
# wait_state SECONDS TOPIC WANT nodes... -> every node shows WANT (pstate format)
wait_state() {
  local limit=$1 topic=$2 want=$3 t=0 i ok; shift 3
  while :; do
    ok=1
    for i in "$@"; do [ "$(pstate "$i" "$topic")" = "$want" ] || ok=0; done
    [ "$ok" = 1 ] && return 0
    sleep 0.2; t=$((t + 1))
    [ "$t" -lt $((limit * 5)) ] || { for i in "$@"; do echo "node $i $topic: $(pstate "$i" "$topic")"; done; return 1; }
  done
}
unfenced() { adm "$1" /v1/cluster | jq -r '[.brokers[] | select(.fenced == false)] | length' 2>/dev/null; }
wait_unfenced() {  # wait_unfenced SECONDS COUNT NODE
  local t=0
  until [ "$(unfenced "$3")" = "$2" ]; do sleep 0.2; t=$((t + 1)); [ "$t" -lt $(($1 * 5)) ] || return 1; done
}
controller() { adm "$1" /v1/cluster | jq -r '.controller_id' 2>/dev/null; }
values() {  # all values of TOPIC-0, read from the current leader
  kcat -b "$SK_BOOTSTRAP" -C -t "$1" -p 0 -o beginning -e -q -f '%s\n' -X topic.metadata.refresh.interval.ms=500 2>/dev/null
}
same_values() {  # same_values TOPIC N -> exactly 1..N in order
  local t=0
  until [ "$(values "$1" | tr '\n' ' ')" = "$(seq 1 "$2" | tr '\n' ' ')" ]; do
    sleep 0.5; t=$((t + 1)); [ "$t" -lt 20 ] || { echo "got $(values "$1" | wc -l) values"; return 1; }
  done
}

wait_unfenced 30 3 1 || sk_fail "3 unfenced brokers not seen"
sk_log "controller: node $(controller 1)"

# ---- reassignment: [1,2] -> [2,3], the leader moves off broker 1 ----------
sk_check "create mv on [1,2]" test "$(kjs create mv 1,2)" = ok
sk_check "mv-0 led by 1, ISR [1,2]" wait_state 20 mv "1 1,2 1,2  " 1 2 3
sk_check "produce 1..100 acks=all" test "$(kjs produce mv 1 100)" = ok
sk_check "kafkajs alterPartitionReassignments mv-0 -> [2,3]" test "$(kjs alter mv 0 2,3)" = ok
l=$(kjs list mv)
sk_log "listPartitionReassignments right after: $l"
sk_check "listed in progress (adding 3, removing 1) or already done" test \
  "$(echo "$l" | jq -c '[.topics[] | .partitions[] | [.replicas, .addingReplicas, .removingReplicas]]' 2>/dev/null)" \
  = '[[[2,3,1],[3],[1]]]' -o "$(echo "$l" | jq -c '.topics' 2>/dev/null)" = '[]'
sk_check "mv-0 completes on every node: replicas [2,3], ISR [2,3], leader 2" wait_state 30 mv "2 2,3 2,3  " 1 2 3
sk_check "nothing listed once complete" test "$(kjs list | jq -c '.topics' 2>/dev/null)" = '[]'
sk_check "all 100 acks=all records readable from the new leader" same_values mv 100
sk_check "produce 101..150 acks=all after the move" test "$(kjs produce mv 101 50)" = ok
sk_check "all 150 records readable" same_values mv 150
gone() { local t=0; while ls -d "$SK_TMP/data/node-1"/mv-0 >/dev/null 2>&1; do sleep 0.2; t=$((t + 1)); [ "$t" -lt 50 ] || return 1; done; }
sk_check "broker 1 deleted its copy of mv-0" gone
sk_check "node 3 holds mv-0 with every record (HW 150)" \
  test "$(adm 3 /v1/topics/mv | jq -r '.partitions[0].high_watermark')" = 150

# ---- cancel: a reassignment to a stopped broker never completes ----------
sk_check "create cx on [1,2]" test "$(kjs create cx 1,2)" = ok
sk_check "cx-0 led by 1" wait_state 20 cx "1 1,2 1,2  " 1 2 3
sk_check "produce 1..20 to cx" test "$(kjs produce cx 1 20)" = ok
sk_stop_node 3
ANY="127.0.0.1:${SK_KAFKA_PORT[1]}"
sk_check "raw alter cx-0 -> [1,3] (3 is down): 0" test "$($RAW alter "$ANY" cx 0 1,3 | tail -1)" = "cx 0 0"
sk_check "cx-0 in progress: replicas [1,3,2], adding 3, removing 2" wait_state 20 cx "1 1,3,2 1,2 3 2" 1 2
t_prog=$SECONDS
# the session timeout runs out meanwhile (no waiting for it before the alter)
sk_check "broker 3 fenced after its stop" wait_unfenced 30 2 1
# 3 cannot catch up while down: still in progress at least 2 s later
# (SECONDS counts whole seconds: 3 ticks make sure 2 s have passed)
while [ $((SECONDS - t_prog)) -lt 3 ]; do sleep 0.2; done
sk_check "still in progress 2 s later (and across 3's fencing)" wait_state 1 cx "1 1,3,2 1,2 3 2" 1 2
sk_check "kafkajs list shows cx-0 adding [3] removing [2]" test \
  "$(kjs list cx | jq -c '[.topics[].partitions[] | [.addingReplicas, .removingReplicas]]' 2>/dev/null)" = '[[[3],[2]]]'
sk_check "raw cancel (null replicas): 0" test "$($RAW alter "$ANY" cx 0 null | tail -1)" = "cx 0 0"
sk_check "cancel restores [1,2] (leader 1, no reassignment)" wait_state 20 cx "1 1,2 1,2  " 1 2
sk_check "second cancel: 85 NO_REASSIGNMENT_IN_PROGRESS" test "$($RAW alter "$ANY" cx 0 null | tail -1)" = "cx 0 85"
sk_check "unknown broker 9: 39 INVALID_REPLICA_ASSIGNMENT" test "$($RAW alter "$ANY" cx 0 1,9 | tail -1)" = "cx 0 39"
sk_check "duplicate replicas: 39" test "$($RAW alter "$ANY" cx 0 1,1 | tail -1)" = "cx 0 39"
sk_check "empty replicas: 39" test "$($RAW alter "$ANY" cx 0 "" | tail -1)" = "cx 0 39"
sk_check "unknown partition: 3" test "$($RAW alter "$ANY" cx 5 1,2 | tail -1)" = "cx 5 3"
sk_check "cx keeps its 20 records" same_values cx 20
sk_start_node 3 "${OPTS[@]}" "${NO_REBALANCE[@]}"
sk_wait_port "${SK_KAFKA_PORT[3]}" 30 "${SK_NODE_PID[3]}" || sk_fail "node 3 did not restart"
sk_check "broker 3 back" wait_unfenced 30 3 1

# ---- ElectLeaders: preferred leader back after kill -9 + rejoin -----------
sk_check "create el on [1,2]" test "$(kjs create el 1,2)" = ok
sk_check "el-0 led by 1" wait_state 20 el "1 1,2 1,2  " 1 2 3
sk_check "produce 1..30 to el" test "$(kjs produce el 1 30)" = ok
sk_kill9_node 1
sk_check "el-0 led by 2 after kill -9 of 1" wait_state 30 el "2 1,2 2  " 2 3
sk_start_node 1 "${OPTS[@]}" "${NO_REBALANCE[@]}"
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node 1 did not restart"
sk_check "1 rejoins el-0's ISR (leader still 2)" wait_state 30 el "2 1,2 1,2  " 1 2 3
# through a node that is not the controller: the request is forwarded
C=$(controller 2); F=1; [ "$C" = 1 ] && F=2
EADDR="127.0.0.1:${SK_KAFKA_PORT[$F]}"
sk_log "ElectLeaders via node $F (controller $C)"
sk_check "ElectLeaders v2 preferred el-0 + unknown partition 7: 0 and 3" \
  test "$($RAW elect "$EADDR" 2 0 el 0,7 | tr '\n' ' ')" = "el 0 0 el 7 3 top 0 "
sk_check "el-0 led by its preferred replica 1 everywhere" wait_state 20 el "1 1,2 1,2  " 1 2 3
sk_check "second ElectLeaders v1: 84 ELECTION_NOT_NEEDED" test "$($RAW elect "$EADDR" 1 0 el 0 | head -1)" = "el 0 84"
sk_check "ElectLeaders v0 (preferred): 84" test "$($RAW elect "$EADDR" 0 0 el 0)" = "el 0 84"
sk_check "unclean on a led partition: 84" test "$($RAW elect "$EADDR" 2 1 el 0 | head -1)" = "el 0 84"
sk_check "unknown election type 5: 42 per partition and top-level" \
  test "$($RAW elect "$EADDR" 2 5 el 0 | tr '\n' ' ')" = "el 0 42 top 42 "
# cx-0 lost its leader 1 to the kill too: a null topic list elects it (only it)
sk_check "1 back in cx-0's ISR (leader 2)" wait_state 30 cx "2 1,2 1,2  " 1 2 3
sk_check "null topic list: only cx-0 answered, elected (0)" test "$($RAW elect "$EADDR" 2 0 all | tr '\n' ' ')" = "cx 0 0 top 0 "
sk_check "cx-0 led by 1 again" wait_state 20 cx "1 1,2 1,2  " 1 2 3
sk_check "null topic list again: empty answer" test "$($RAW elect "$EADDR" 2 0 all | tr '\n' ' ')" = "top 0 "
sk_check "el keeps its 30 records" same_values el 30

# ---- auto leader rebalance ---------------------------------------------------
for i in 1 2 3; do sk_stop_node "$i"; done
for i in 1 2 3; do
  sk_start_node "$i" "${OPTS[@]}" --set auto.leader.rebalance.enable=true --set leader.imbalance.check.interval.seconds=2
done
for i in 1 2 3; do sk_wait_port "${SK_KAFKA_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i not up after restart"; done
sk_check "3 brokers after the restart with auto rebalance" wait_unfenced 30 3 1
sk_check "el-0 led by 1 after the restart" wait_state 30 el "1 1,2 1,2  " 1 2 3
sk_kill9_node 1
sk_check "el-0 led by 2 after kill -9 of 1" wait_state 30 el "2 1,2 2  " 2 3
sk_start_node 1 "${OPTS[@]}" --set auto.leader.rebalance.enable=true --set leader.imbalance.check.interval.seconds=2
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node 1 did not restart"
sk_check "auto rebalance: el-0 led by 1 again without a request" wait_state 40 el "1 1,2 1,2  " 1 2 3
sk_check "cx-0 too (preferred 1)" wait_state 20 cx "1 1,2 1,2  " 1 2 3
sk_check "mv keeps its 150 records" same_values mv 150
for i in 1 2 3; do sk_check "node $i still running" kill -0 "${SK_NODE_PID[i]}"; done
[ "$SK_FAILS" -eq 0 ] || { tail -n 20 "$SK_TMP/js.err" 2>/dev/null; sk_dump_logs; }
sk_summary "$NAME"
