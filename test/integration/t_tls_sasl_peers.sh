#!/usr/bin/env bash
# The peer connections' SASL login (issue 17): a 3-node cluster whose
# controller listener is SASL_SSL with PLAIN (the nodes' login from
# listener.name.controller.plain.sasl.jaas.config, username/password) and
# whose inter-broker listener is SASL_SSL with SCRAM-SHA-512 (the credential
# made by `skiff format --add-scram` before the first start); clients use
# SSL. super.users names only the nodes' login, so a node that did not log
# in would be refused. Checked: the quorum forms and registers every broker,
# a topic with replication factor 3 gets all replicas in sync, records go
# through; and a node whose own password is wrong is logged ("SASL login
# failed") and stays out while the others carry on.
# Needs the SASL server side (SaslHandshake in ApiVersions): without it the
# test says so and stops (a build of the TLS branch alone).
. "$(dirname "$0")/lib.sh"
NAME=t_tls_sasl_peers
command -v kcat >/dev/null || { echo "$NAME: kcat missing"; exit 1; }
command -v jq >/dev/null || { echo "$NAME: jq missing"; exit 1; }
C=$SK_TMP/certs
bash "$SK_ROOT/etc/gen-certs.sh" "$C" >/dev/null || sk_fail "gen-certs.sh"

voters=""; boot=""
for i in 1 2 3; do
  EXT[i]=$(sk_free_port); INT[i]=$(sk_free_port); CTL[i]=$(sk_free_port); ADM[i]=$(sk_free_port)
  voters+="${voters:+,}$i@127.0.0.1:${CTL[i]}"; boot+="${boot:+,}127.0.0.1:${EXT[i]}"
done
{
  echo "cluster.id=skiff-sasl-peers-cl"
  echo "process.roles=broker,controller"
  echo "controller.quorum.voters=$voters"
  echo "controller.listener.names=CONTROLLER"
  echo "inter.broker.listener.name=INTERNAL"
  echo "listener.security.protocol.map=EXTERNAL:SSL,INTERNAL:SASL_SSL,CONTROLLER:SASL_SSL"
  echo "ssl.truststore.location=$C/ca.crt"
  echo "sasl.mechanism.controller.protocol=PLAIN"
  echo "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512"
  echo "listener.name.controller.sasl.enabled.mechanisms=PLAIN"
  echo "listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"node\" password=\"node-secret\" user_node=\"node-secret\";"
  echo "listener.name.internal.sasl.enabled.mechanisms=SCRAM-SHA-512"
  echo "listener.name.internal.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"node\" password=\"node-secret\";"
  echo "super.users=User:node"
  echo "default.replication.factor=3"
  echo "offsets.topic.replication.factor=3"
  echo "controller.quorum.election.timeout.ms=500"
  echo "broker.heartbeat.interval.ms=500"
  echo "broker.session.timeout.ms=3000"
  for i in 1 2 3; do
    echo
    echo "[node.$i]"
    echo "listeners=EXTERNAL://127.0.0.1:${EXT[i]},INTERNAL://127.0.0.1:${INT[i]},CONTROLLER://127.0.0.1:${CTL[i]}"
    echo "advertised.listeners=EXTERNAL://127.0.0.1:${EXT[i]},INTERNAL://127.0.0.1:${INT[i]}"
    echo "ssl.keystore.location=$C/node-$i.pem"
    echo "admin.listener=127.0.0.1:${ADM[i]}"
    echo "log.dirs=$SK_TMP/data/node-$i"
  done
} > "$SK_TMP/cluster.conf"
for i in 1 2 3; do
  "$SK_BIN/skiff" format --config "$SK_TMP/cluster.conf" --node "$i" \
    --add-scram 'SCRAM-SHA-512=[name=node,password=node-secret]' > "$SK_TMP/format-$i.log" 2>&1 || {
    echo "$NAME: skipped: this build has no 'skiff format --add-scram' (the SASL server side is not in it)"
    exit 0
  }
done
for i in 1 2 3; do sk_start_node "$i"; done
for i in 1 2 3; do sk_wait_port "${EXT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i not up"; done

adm() { curl -s --max-time 2 "127.0.0.1:${ADM[$1]}$2"; }
agree() {
  local want=$1 i l="" x; shift
  for i in "$@"; do
    x=$(adm "$i" /v1/cluster | jq -r '"\(.controller_id) \([.brokers[] | select(.fenced == false)] | length)"' 2>/dev/null)
    [ -n "$x" ] && [ "${x%% *}" != -1 ] && [ "${x%% *}" != null ] && [ "${x##* }" = "$want" ] || return 1
    [ -z "$l" ] && l=${x%% *}
    [ "${x%% *}" = "$l" ] || return 1
  done
  echo "$l"
}
wait_agree() { local t=0 l; while ! l=$(agree "$@"); do sleep 0.2; t=$((t + 1)); [ "$t" -lt 150 ] || return 1; done; echo "$l"; }
L=$(wait_agree 3 1 2 3)
sk_check "quorum and registrations over SASL_SSL (PLAIN): leader ${L:-none}, 3 brokers" test -n "$L"
sk_check "the nodes logged in as node" grep -q "controller connections go to listener CONTROLLER over SASL_SSL as node" "$SK_TMP/node-1.log"

SSL=(-X security.protocol=ssl -X ssl.ca.location="$C/ca.crt")
seq -f 'p-%05g' 1 500 > "$SK_TMP/in.txt"
kcat -b "$boot" "${SSL[@]}" -P -t rf3 -X acks=all -l "$SK_TMP/in.txt" 2> "$SK_TMP/kcat.err"
isr_full() { kcat -b "$boot" "${SSL[@]}" -L -t rf3 2>/dev/null | grep -q 'isrs: [0-9],[0-9],[0-9]'; }
t=0; until isr_full; do sleep 0.3; t=$((t + 1)); [ "$t" -lt 60 ] || break; done
sk_check "RF 3 in sync: replica fetchers logged in with SCRAM-SHA-512" isr_full
got=$(kcat -b "$boot" "${SSL[@]}" -C -t rf3 -o beginning -e -q 2>>"$SK_TMP/kcat.err" | wc -l)
sk_check "500 records read back ($got)" test "$got" -eq 500

# node 3 restarts with a wrong password for its own inter-broker login
sk_stop_node 3
sk_start_node 3 --set 'listener.name.internal.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="node" password="wrong";'
t=0; until grep -q "SASL login failed" "$SK_TMP/node-3.log"; do sleep 0.3; t=$((t + 1)); [ "$t" -lt 60 ] || break; done
sk_check "a wrong password of the node's own login is logged" grep -q "SASL login failed: SASL SCRAM-SHA-512 login of 'node' refused" "$SK_TMP/node-3.log"
echo more | kcat -b "127.0.0.1:${EXT[1]},127.0.0.1:${EXT[2]}" "${SSL[@]}" -P -t rf3 -X acks=1 2>>"$SK_TMP/kcat.err"
got=$(kcat -b "127.0.0.1:${EXT[1]},127.0.0.1:${EXT[2]}" "${SSL[@]}" -C -t rf3 -o beginning -e -q 2>>"$SK_TMP/kcat.err" | wc -l)
sk_check "the other nodes carry on (501 records: $got)" test "$got" -eq 501
for i in 1 2 3; do sk_check "node $i running" kill -0 "${SK_NODE_PID[i]}"; done
[ "$SK_FAILS" -eq 0 ] || { sk_dump_logs; tail -5 "$SK_TMP/kcat.err"; }
sk_summary "$NAME"
