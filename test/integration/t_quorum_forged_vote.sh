#!/usr/bin/env bash
# Forged raft requests cannot wedge the quorum (issue 16, finding 1). A raw
# client (clients/forged_raft.py) sends every controller port of a 3-node
# cluster Votes and BeginQuorumEpochs naming another voter, for epochs
# INT32_MAX, INT32_MAX-1, far above and just above the current one, with
# another or no cluster id (taken from /v1/cluster), and from a non-voter.
# Each must be refused without a vote granted or an epoch moved; afterwards
# the cluster still has its leader, creates a topic and takes a produce, no
# quorum-state holds a forged epoch, and the same holds after a restart of
# every node.
. "$(dirname "$0")/lib.sh"
NAME=t_quorum_forged_vote
QM="$SK_PY $SK_ROOT/test/integration/quorum_meta.py"
FORGE="$SK_PY $SK_ROOT/test/integration/clients/forged_raft.py"
command -v jq >/dev/null || { echo "$NAME: jq missing"; exit 1; }
command -v kcat >/dev/null || { echo "$NAME: kcat missing"; exit 1; }

OPTS=(--set controller.quorum.fetch.timeout.ms=1000 --set controller.quorum.election.timeout.ms=300
      --set broker.heartbeat.interval.ms=500 --set broker.session.timeout.ms=3000)
sk_start_cluster 3 "${OPTS[@]}"
adm() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
leader_of() { adm "$1" /v1/quorum | jq -r '.leader_id // -1' 2>/dev/null || echo -1; }
# every node names the same leader and sees 3 unfenced brokers -> the leader
agree() {
  local i l="" x
  for i in 1 2 3; do
    x=$(adm "$i" /v1/cluster | jq -r '"\(.controller_id) \([.brokers[] | select(.fenced == false)] | length)"' 2>/dev/null)
    [ -n "$x" ] && [ "${x%% *}" != -1 ] && [ "${x%% *}" != null ] && [ "${x##* }" = 3 ] || return 1
    [ -z "$l" ] && l=${x%% *}
    [ "${x%% *}" = "$l" ] || return 1
  done
  echo "$l"
}
wait_agree() { local t=0 l; while ! l=$(agree); do sleep 0.2; t=$((t + 1)); [ "$t" -lt $(($1 * 5)) ] || return 1; done; echo "$l"; }
# the largest epoch in any node's quorum-state file
qs_epoch() {
  local i e max=0
  for i in 1 2 3; do
    e=$(jq -r '.leader_epoch' "$SK_TMP/data/node-$i/__cluster_metadata-0/quorum-state" 2>/dev/null) || e=-1
    [ "$e" -gt "$max" ] 2>/dev/null && max=$e
  done
  echo "$max"
}
produce_ok() {  # produce_ok TOPIC -> one record in, read back
  local v="v-$RANDOM-$1"
  echo "$v" | kcat -P -b "$SK_BOOTSTRAP" -t "$1" -X message.timeout.ms=15000 2>/dev/null || return 1
  kcat -C -b "$SK_BOOTSTRAP" -t "$1" -o beginning -c 1 -e -q -X socket.timeout.ms=10000 2>/dev/null | grep -qx "$v"
}

L=$(wait_agree 30) || sk_fail "no leader agreed by the 3 nodes"
CID=$(adm 1 /v1/cluster | jq -r '.cluster_id')
[ -n "$CID" ] && [ "$CID" != null ] || sk_fail "no cluster id on /v1/cluster"
E0=$(qs_epoch)
sk_log "leader node $L, cluster id $CID, quorum-state epoch $E0"

$FORGE "$CID" 1,2,3 "${SK_CTRL_PORT[1]}" "${SK_CTRL_PORT[2]}" "${SK_CTRL_PORT[3]}" > "$SK_TMP/forge.out" 2>&1
sk_check_lines < <(grep -v "^EPOCH" "$SK_TMP/forge.out")
sk_check "the forging client ran against all three nodes" test "$(grep -c '^EPOCH' "$SK_TMP/forge.out")" = 3
# a BrokerRegistration whose listener name holds a NUL (never cut and registered)
$SK_PY "$SK_ROOT/test/integration/clients/reg_nul.py" "${SK_CTRL_PORT[1]}" "${SK_CTRL_PORT[2]}" "${SK_CTRL_PORT[3]}" \
  > "$SK_TMP/regnul.out" 2>&1
sk_check_lines < "$SK_TMP/regnul.out"
sk_check "the registration client gave its two verdicts" test "$(grep -c '^PASS\|^FAIL' "$SK_TMP/regnul.out")" = 2

sleep 1   # a wrongly accepted request would show by now (election timeout 300 ms)
L2=$(wait_agree 10) || L2=none
sk_check "the leader is unchanged after the forged requests ($L -> $L2)" test "$L2" = "$L"
E1=$(qs_epoch)
sk_check "no quorum-state took a forged epoch ($E0 -> $E1)" test "$E1" -lt 1000
sk_check "create topic forged_a (3 partitions, RF 3)" $QM create "$SK_BOOTSTRAP" forged_a 3 3
sk_check "produce and consume on forged_a" produce_ok forged_a

# a restart of every node: the state on disk elects a leader again
for i in 1 2 3; do sk_stop_node "$i"; done
for i in 1 2 3; do sk_start_node "$i" "${OPTS[@]}"; done
for i in 1 2 3; do sk_wait_port "${SK_ADMIN_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i did not restart"; done
L3=$(wait_agree 30) || L3=none
sk_check "a leader is elected after restarting every node ($L3)" test "$L3" != none
E2=$(qs_epoch)
sk_check "quorum-state epoch after the restart is small ($E2)" test "$E2" -lt 1000
# the attack once more on the restarted cluster, then a write
$FORGE "$CID" 1,2,3 "${SK_CTRL_PORT[1]}" "${SK_CTRL_PORT[2]}" "${SK_CTRL_PORT[3]}" > "$SK_TMP/forge2.out" 2>&1
sk_check "forged requests refused after the restart too" test "$(grep -c '^FAIL' "$SK_TMP/forge2.out")" = 0
grep '^FAIL' "$SK_TMP/forge2.out" | head -5
sk_check "create topic forged_b after the restart" $QM create "$SK_BOOTSTRAP" forged_b 3 3
sk_check "produce and consume on forged_b" produce_ok forged_b
sk_check "quorum-state epoch still small ($(qs_epoch))" test "$(qs_epoch)" -lt 1000
sk_summary "$NAME" || { sk_dump_logs; exit 1; }
