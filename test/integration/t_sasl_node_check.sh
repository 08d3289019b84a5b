#!/usr/bin/env bash
# The node check (issue 17): a 3-node cluster whose controller listener is
# SASL_PLAINTEXT (PLAIN; the nodes log in as User:node, the only super
# user). A raft Vote forged by an authenticated User:alice with an epoch
# near INT32_MAX, an unauthenticated one, and a BrokerHeartbeat from alice
# are refused before raft or the controller sees them: every node keeps
# its epoch and leader, and the quorum still commits (a user created
# afterwards logs in). DescribeQuorum stays open; the super user's Vote is
# answered (so the refusal is what the check sees).
# Needs the node's outgoing SASL (the tls branch); a build without it says
# so and skips.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "t_sasl_node_check: jq missing"; exit 1; }
HERE=$(cd "$(dirname "$0")" && pwd)
CHK="$SK_PY $HERE/clients/sasl_check.py"
if "$SK_BIN/skiff" --describe-config sasl.mechanism.controller.protocol | grep -qi "stored only"; then
  echo "t_sasl_node_check: skipped: this build's nodes cannot log in to a SASL controller listener"
  exit 0
fi

voters=""
for i in 1 2 3; do
  SASLP[i]=$(sk_free_port); SK_CTRL_PORT[i]=$(sk_free_port); SK_ADMIN_PORT[i]=$(sk_free_port)
  voters+="${voters:+,}$i@127.0.0.1:${SK_CTRL_PORT[i]}"
done
JAAS='org.apache.kafka.common.security.plain.PlainLoginModule required username="node" password="node-pw" user_node="node-pw" user_alice="alice-pw";'
{
  echo "cluster.id=skiff-sasl-nodecheck"
  echo "process.roles=broker,controller"
  echo "controller.quorum.voters=$voters"
  echo "controller.listener.names=CONTROLLER"
  echo "listener.security.protocol.map=CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
  echo "inter.broker.listener.name=CLIENT"
  echo "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512"
  echo "sasl.mechanism.controller.protocol=PLAIN"
  echo "sasl.mechanism.inter.broker.protocol=PLAIN"
  echo "listener.name.controller.plain.sasl.jaas.config=$JAAS"
  echo "listener.name.client.plain.sasl.jaas.config=$JAAS"
  echo "super.users=User:node"
  for i in 1 2 3; do
    echo "[node.$i]"
    echo "listeners=CLIENT://127.0.0.1:${SASLP[i]},CONTROLLER://127.0.0.1:${SK_CTRL_PORT[i]}"
    echo "admin.listener=127.0.0.1:${SK_ADMIN_PORT[i]}"
    echo "log.dirs=$SK_TMP/data/node-$i"
  done
} > "$SK_TMP/cluster.conf"
OPTS=(--set controller.quorum.fetch.timeout.ms=500 --set controller.quorum.election.timeout.ms=200
      --set broker.heartbeat.interval.ms=500 --set broker.session.timeout.ms=3000)
for i in 1 2 3; do sk_start_node "$i" "${OPTS[@]}"; done
for i in 1 2 3; do sk_wait_port "${SK_ADMIN_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i admin port not up"; done
adm() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
state() {  # state NODE -> "leader epoch"
  adm "$1" /v1/quorum | jq -r '"\(.leader_id) \(.epoch // .leader_epoch)"' 2>/dev/null
}
t=0
until s1=$(state 1) && [ "${s1%% *}" != -1 ] && [ "${s1%% *}" != null ] && [ "$(state 2)" = "$s1" ] && [ "$(state 3)" = "$s1" ]; do
  sleep 0.2; t=$((t + 1)); [ "$t" -lt 100 ] || sk_fail "no agreed raft leader over the SASL controller listener ($(state 1) / $(state 2) / $(state 3))"
done
sk_log "raft leader and epoch: $s1 (nodes logged in to each other over SASL)"
sk_check "no node refused a peer" bash -c "! grep -q 'refused: not in super.users' '$SK_TMP'/node-*.log"
for i in 1 2 3; do
  sk_check_lines < <($CHK "127.0.0.1:${SK_CTRL_PORT[i]}" forge skiff-sasl-nodecheck $((i % 3 + 1)) 2>&1)
done
sleep 1
for i in 1 2 3; do sk_check "node $i keeps leader and epoch ($(state "$i"))" test "$(state "$i")" = "$s1"; done
sk_check "refusals logged" grep -q "not in super.users" "$SK_TMP/node-1.log"
# the quorum still commits: create a SCRAM user as the super user and log in with it
ok=0
for i in $(seq 1 30); do
  if $CHK "127.0.0.1:${SASLP[1]}" alter_plain erin erin-pw >/dev/null 2>&1; then ok=1; break; fi
  sleep 0.3
done
sk_check "the quorum still commits (AlterUserScramCredentials as User:node)" test "$ok" -eq 1
sk_check "the new user logs in on node 3" $CHK "127.0.0.1:${SASLP[3]}" login erin erin-pw
for i in 1 2 3; do sk_check "node $i alive" kill -0 "${SK_NODE_PID[i]}"; done
sk_summary t_sasl_node_check
