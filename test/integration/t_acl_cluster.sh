#!/usr/bin/env bash
# ACLs in a 3-node cluster (issue 18): CreateAcls through a node that is not
# the controller (forwarded after the client's own rights were checked
# there) reaches every node's image; a user without CREATE is refused
# CreateTopics through a non-controller node (checked before forwarding);
# the controller is killed: the survivors keep the ACLs and enforce them,
# ACLs created under the new controller reach the old one when it restarts.
# Clients use SASL_PLAINTEXT (PLAIN); nodes talk over PLAINTEXT listeners.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "t_acl_cluster: jq missing"; exit 1; }
HERE=$(cd "$(dirname "$0")" && pwd)
CHK="$SK_PY $HERE/clients/acl_cluster.py"

voters=""
for i in 1 2 3; do
  SK_KAFKA_PORT[i]=$(sk_free_port); SASLP[i]=$(sk_free_port); SK_CTRL_PORT[i]=$(sk_free_port); SK_ADMIN_PORT[i]=$(sk_free_port)
  voters+="${voters:+,}$i@127.0.0.1:${SK_CTRL_PORT[i]}"
done
{
  echo "cluster.id=skiff-acl-cluster"
  echo "process.roles=broker,controller"
  echo "controller.quorum.voters=$voters"
  echo "controller.listener.names=CONTROLLER"
  echo "listener.security.protocol.map=INTERNAL:PLAINTEXT,CLIENT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"
  echo "inter.broker.listener.name=INTERNAL"
  echo "sasl.enabled.mechanisms=PLAIN"
  echo 'listener.name.client.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-pw" user_bob="bob-pw" user_carol="carol-pw";'
  echo "super.users=User:admin"
  echo "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
  for i in 1 2 3; do
    echo "[node.$i]"
    echo "listeners=INTERNAL://127.0.0.1:${SK_KAFKA_PORT[i]},CLIENT://127.0.0.1:${SASLP[i]},CONTROLLER://127.0.0.1:${SK_CTRL_PORT[i]}"
    echo "admin.listener=127.0.0.1:${SK_ADMIN_PORT[i]}"
    echo "log.dirs=$SK_TMP/data/node-$i"
  done
} > "$SK_TMP/cluster.conf"
OPTS=(--set controller.quorum.fetch.timeout.ms=500 --set controller.quorum.election.timeout.ms=200
      --set broker.heartbeat.interval.ms=500 --set broker.session.timeout.ms=3000)
for i in 1 2 3; do sk_start_node "$i" "${OPTS[@]}"; done
for i in 1 2 3; do sk_wait_port "${SASLP[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i SASL port not up"; done

adm() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
L=""; t=0
while [ "$t" -lt 100 ]; do
  L=$(adm 1 /v1/cluster | jq -r '.controller_id' 2>/dev/null)
  [ -n "$L" ] && [ "$L" != -1 ] && [ "$L" != null ] && break
  sleep 0.2; t=$((t + 1))
done
[ -n "$L" ] && [ "$L" != -1 ] || sk_fail "no controller"
sk_log "controller: node $L"
F=$(( L % 3 + 1 ))
sk_check_lines < <($CHK "127.0.0.1:${SASLP[F]}" grant t-one alice 2>&1)
for i in 1 2 3; do sk_check_lines < <($CHK "127.0.0.1:${SASLP[i]}" count 2 2>&1); done
sk_check_lines < <($CHK "127.0.0.1:${SASLP[F]}" produce alice t-one 2>&1)
sk_check_lines < <($CHK "127.0.0.1:${SASLP[F]}" create_denied alice t-nope 2>&1)
# skiffctl sends CreateAcls to the node it names (not the controller): the
# request is forwarded, and the controller trusts the forwarding node
printf 'security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=admin\nsasl.password=admin-secret\n' > "$SK_TMP/admin.props"
out=$(timeout 20 "$SK_BIN/skiffctl" acl add --brokers "127.0.0.1:${SASLP[F]}" --command-config "$SK_TMP/admin.props" \
      --principal User:bob --producer --topic bob- --prefixed 2>&1)
sk_check "skiffctl acl add through node $F (forwarded): 4 bindings ($out)" grep -q "created 4 ACL bindings" <<<"$out"
for i in 1 2 3; do sk_check_lines < <($CHK "127.0.0.1:${SASLP[i]}" count 6 2>&1); done
sk_check_lines < <($CHK "127.0.0.1:${SASLP[F]}" produce bob bob-auto 2>&1)

sk_log "kill -9 the controller (node $L)"
sk_kill9_node "$L"
others=(); for i in 1 2 3; do [ "$i" = "$L" ] || others+=("$i"); done
L2=""; t=0
while [ "$t" -lt 50 ]; do
  L2=$(adm "${others[0]}" /v1/cluster | jq -r '.controller_id' 2>/dev/null)
  [ -n "$L2" ] && [ "$L2" != -1 ] && [ "$L2" != "$L" ] && [ "$L2" != null ] && break
  sleep 0.2; t=$((t + 1))
done
sk_check "a new controller ($L2)" test -n "$L2" -a "$L2" != "$L" -a "$L2" != -1
for i in "${others[@]}"; do sk_check_lines < <($CHK "127.0.0.1:${SASLP[i]}" count 6 2>&1); done
# replication factor 2: the killed node is fenced broker.session.timeout.ms
# (3 s) after the kill, and from then on only two brokers can take replicas
# (RF 3 was refused whenever the steps above took longer than that, as they
# do on a loaded machine)
sk_check_lines < <($CHK "127.0.0.1:${SASLP[${others[1]}]}" grant t-two carol 2 2>&1)
sk_check_lines < <($CHK "127.0.0.1:${SASLP[${others[0]}]}" create_denied carol t-nope2 2>&1)
sk_start_node "$L" "${OPTS[@]}"
sk_wait_port "${SASLP[L]}" 30 "${SK_NODE_PID[L]}" || sk_fail "node $L not back"
sk_check_lines < <($CHK "127.0.0.1:${SASLP[L]}" count 8 2>&1)
sk_summary t_acl_cluster
