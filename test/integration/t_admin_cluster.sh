#!/usr/bin/env bash
# Issue 8 admin endpoints on a live 3-node cluster (jq): /v1/health and
# /readyz on every node, raft metrics agree with /v1/quorum, a stopped node
# shows in /v1/health (nodes_down, under-replicated), POST
# /v1/partitions/../elect names why not on the controller while the
# preferred replica is down, and elects it from a node that is not the
# controller (forwarded as ElectLeaders, as Kafka brokers do), POST /v1/quorum/resign
# is 409 on a follower and makes the leader step down (a new epoch).
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "t_admin_cluster: jq missing"; exit 1; }

OPTS=(--set controller.quorum.fetch.timeout.ms=500 --set controller.quorum.election.timeout.ms=200
      --set broker.heartbeat.interval.ms=500 --set broker.session.timeout.ms=3000)
sk_start_cluster 3 "${OPTS[@]}"
adm() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
code() { curl -s --max-time 5 -o /dev/null -w '%{http_code}' "${@:3}" "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
mval() { adm "$1" /metrics | awk -v k="$2" 'index($0, k" ") == 1 { v = $2 } END { print v + 0 }'; }
waitfor() {  # waitfor SECONDS command... (polls every 0.2 s)
  local t=0
  until "${@:2}" >/dev/null 2>&1; do sleep 0.2; t=$((t + 1)); [ "$t" -lt $(($1 * 5)) ] || return 1; done
}
healthy() { [ "$(adm "$1" /v1/health | jq -r .healthy)" = true ]; }
all_healthy() { healthy 1 && healthy 2 && healthy 3; }

sk_check "all three healthy within 20 s" waitfor 20 all_healthy
for i in 1 2 3; do
  sk_check "node $i /readyz 200" test "$(code "$i" /readyz)" = 200
  sk_check "node $i raft metrics = /v1/quorum" test "$(mval "$i" skiff_raft_leader_id) $(mval "$i" skiff_raft_epoch)" = \
    "$(adm "$i" /v1/quorum | jq -r '"\(.leader_id) \(.leader_epoch)"')"
done
elections() { echo $(( $(mval 1 skiff_raft_elections_total) + $(mval 2 skiff_raft_elections_total) + $(mval 3 skiff_raft_elections_total) )); }
sk_check "the first leader was elected: elections counted ($(elections))" test "$(elections)" -ge 1
L=$(adm 1 /v1/quorum | jq -r .leader_id)
sk_check "controller_id in /v1/health is the raft leader" test "$(adm 2 /v1/health | jq .controller_id)" = "$L"
sk_check "/v1/brokers lists 3 unfenced" test "$(adm 3 /v1/brokers | jq '[.brokers[] | select(.fenced == false)] | length')" = 3

# a replicated topic; its preferred leader (replicas[0]) is stopped
SKIFF_BROKERS="127.0.0.1:${SK_KAFKA_PORT[1]}" "$SK_BIN/skiffctl" topic create adm3 -p 1 -r 3 > "$SK_TMP/create.out" 2>&1
isr3() { [ "$(adm 1 /v1/topics/adm3 | jq '.partitions[0].isr | length')" = 3 ]; }
waitfor 10 isr3 || sk_fail "topic adm3 not created with a full ISR: $(cat "$SK_TMP/create.out")"
P=$(adm 1 /v1/topics/adm3 | jq '.partitions[0].replicas[0]')
O=$(( P % 3 + 1 ))   # a node that stays up
sk_stop_node "$P"
down() { adm "$O" /v1/health | jq -e --argjson p "$P" '.healthy == false and (.nodes_down | index($p)) != null and .under_replicated_partitions >= 1'; }
sk_check "node $P stopped: node $O reports it down, under-replicated" waitfor 15 down
moved() { l=$(adm "$O" /v1/topics/adm3 | jq '.partitions[0].leader'); [ "$l" != "$P" ] && [ "$l" -ge 0 ]; }
sk_check "adm3 leader moved off node $P" waitfor 10 moved
# while node $P is down it cannot be in the ISR: the controller refuses
C=$(adm "$O" /v1/quorum | jq -r .leader_id)
curl -s --max-time 5 -X POST -o "$SK_TMP/elect0.json" "127.0.0.1:${SK_ADMIN_PORT[C]}/v1/partitions/adm3/0/elect"
sk_check "elect with the preferred replica down -> PREFERRED_LEADER_NOT_AVAILABLE ($(cat "$SK_TMP/elect0.json"))" \
  test "$(jq -r .error "$SK_TMP/elect0.json")" = PREFERRED_LEADER_NOT_AVAILABLE
sk_start_node "$P" "${OPTS[@]}"
sk_wait_port "${SK_ADMIN_PORT[P]}" 30 "${SK_NODE_PID[P]}" || sk_fail "node $P not back"
ready() { [ "$(code "$1" /readyz)" = 200 ]; }
sk_check "node $P /readyz 200 again" waitfor 20 ready "$P"
C=$(adm "$O" /v1/quorum | jq -r .leader_id)
F=$(( C % 3 + 1 ))
# replication brings node $P back into the ISR; then the election succeeds
inisr() { adm "$C" /v1/topics/adm3 | jq -e --argjson p "$P" '.partitions[0].isr | index($p) != null' >/dev/null; }
sk_check "node $P back in the ISR of adm3" waitfor 30 inisr
curl -s --max-time 10 -X POST -o "$SK_TMP/elect.json" "127.0.0.1:${SK_ADMIN_PORT[F]}/v1/partitions/adm3/0/elect"
sk_check "elect on node $F, not the controller (forwarded) -> preferred leader $P ($(cat "$SK_TMP/elect.json"))" \
  test "$(jq .leader "$SK_TMP/elect.json")" = "$P"
sees() { [ "$(adm "$F" /v1/topics/adm3 | jq '.partitions[0].leader')" = "$P" ]; }
sk_check "node $F sees leader $P" waitfor 10 sees

# quorum resign
C=$(adm 1 /v1/quorum | jq -r .leader_id)
E=$(adm 1 /v1/quorum | jq -r .leader_epoch)
F=$(( C % 3 + 1 ))
sk_check "resign on follower $F -> 409" test "$(code "$F" /v1/quorum/resign -X POST)" = 409
EL=$(elections)
sk_check "resign on leader $C -> 200" test "$(code "$C" /v1/quorum/resign -X POST)" = 200
newer() { [ "$(adm "$F" /v1/quorum | jq -r '.leader_epoch')" -gt "$E" ] && [ "$(adm "$F" /v1/quorum | jq -r '.leader_id')" -ge 1 ]; }
sk_check "a new epoch with a leader after the resignation" waitfor 10 newer
sk_check "the resignation's election counted ($EL -> $(elections))" test "$(elections)" -gt "$EL"
ctrl_agree() { [ "$(adm 1 /v1/health | jq .controller_id)" = "$(adm "$F" /v1/quorum | jq .leader_id)" ] && [ "$(adm 1 /v1/health | jq .controller_id)" -ge 1 ]; }
sk_check "/v1/health names the new controller" waitfor 10 ctrl_agree

for i in 1 2 3; do sk_stop_node "$i"; done
sk_summary t_admin_cluster
