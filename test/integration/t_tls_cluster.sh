#!/usr/bin/env bash
# A 3-node cluster whose controller listener is SSL with
# listener.name.controller.ssl.client.auth=required (mutual TLS between the
# voters) and whose inter-broker listener INTERNAL is SSL too (replica
# fetches, forwarding, markers go over TLS with the node's certificate);
# clients use the SSL listener EXTERNAL. Checked: the quorum forms (raft,
# registration and heartbeats over mutual TLS), a topic with replication
# factor 3 gets all three replicas in sync, the cluster survives a kill -9
# of the quorum leader (new leader, produce and consume go on), and a Vote
# sent over TLS with a certificate of an untrusted CA (or none) is refused
# at the handshake.
. "$(dirname "$0")/lib.sh"
NAME=t_tls_cluster
PROBE="$SK_PY $SK_ROOT/test/integration/clients/tls_probe.py"
command -v kcat >/dev/null || { echo "$NAME: kcat missing"; exit 1; }
command -v jq >/dev/null || { echo "$NAME: jq missing"; exit 1; }
C=$SK_TMP/certs
bash "$SK_ROOT/etc/gen-certs.sh" "$C" >/dev/null || sk_fail "gen-certs.sh"

voters=""; boot=""
for i in 1 2 3; do
  EXT[i]=$(sk_free_port); INT[i]=$(sk_free_port); CTL[i]=$(sk_free_port); ADM[i]=$(sk_free_port)
  voters+="${voters:+,}$i@127.0.0.1:${CTL[i]}"; boot+="${boot:+,}127.0.0.1:${EXT[i]}"
  SK_ADMIN_PORT[i]=${ADM[i]}
done
{
  echo "cluster.id=skiff-tls-cluster"
  echo "process.roles=broker,controller"
  echo "controller.quorum.voters=$voters"
  echo "controller.listener.names=CONTROLLER"
  echo "inter.broker.listener.name=INTERNAL"
  echo "listener.security.protocol.map=EXTERNAL:SSL,INTERNAL:SSL,CONTROLLER:SSL"
  echo "ssl.truststore.location=$C/ca.crt"
  echo "listener.name.controller.ssl.client.auth=required"
  echo "listener.name.internal.ssl.client.auth=required"
  echo "default.replication.factor=3"
  echo "min.insync.replicas=2"
  echo "offsets.topic.replication.factor=3"
  echo "controller.quorum.election.timeout.ms=500"
  echo "controller.quorum.fetch.timeout.ms=1500"
  echo "broker.heartbeat.interval.ms=500"
  echo "broker.session.timeout.ms=3000"
  echo "replica.lag.time.max.ms=5000"
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
for i in 1 2 3; do sk_start_node "$i"; done
for i in 1 2 3; do sk_wait_port "${EXT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i not up"; done

adm() { curl -s --max-time 2 "127.0.0.1:${ADM[$1]}$2"; }
# every live node names the same leader and sees `want` unfenced brokers
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
sk_check "quorum over mutual TLS: 3 nodes agree on leader ${L:-none} with 3 brokers" test -n "$L"

SSL=(-X security.protocol=ssl -X ssl.ca.location="$C/ca.crt")
kc() { kcat -b "$boot" "${SSL[@]}" "$@"; }
seq -f 'r-%05g' 1 1000 > "$SK_TMP/in.txt"
kc -P -t rf3 -X acks=all -l "$SK_TMP/in.txt" 2> "$SK_TMP/kcat.err"
isr_full() { kc -L -t rf3 2>/dev/null | grep -q 'isrs: [0-9],[0-9],[0-9]'; }
t=0; until isr_full; do sleep 0.3; t=$((t + 1)); [ "$t" -lt 60 ] && continue; break; done
sk_check "replication factor 3, all in sync (fetchers over TLS)" isr_full
kc -L -t rf3 2>/dev/null | grep 'partition 0'
got=$(kc -C -t rf3 -o beginning -e -q 2>>"$SK_TMP/kcat.err" | wc -l)
sk_check "1000 records read back ($got)" test "$got" -eq 1000

# forged Votes over TLS: untrusted certificate, no certificate
E1=$(adm "$L" /v1/quorum | jq -r '.leader_epoch // .epoch // -1')
other=$(( L % 3 + 1 ))
sk_check_lines < <($PROBE vote 127.0.0.1 "${CTL[$L]}" "$C/ca.crt" skiff-tls-cluster "$other" "$C/rogue.crt" "$C/rogue.key" | sed 's/over TLS refused/over TLS with a certificate of an untrusted CA refused/')
sk_check_lines < <($PROBE vote 127.0.0.1 "${CTL[$L]}" "$C/ca.crt" skiff-tls-cluster "$other" | sed 's/over TLS refused/over TLS without a client certificate refused/')
E2=$(adm "$L" /v1/quorum | jq -r '.leader_epoch // .epoch // -1')
L1=$(agree 3 1 2 3)
sk_check "leader $L and epoch ($E1 -> $E2) unchanged by the forged Votes" test "$L1" = "$L" -a "$E1" = "$E2"
sk_check "the refusal is logged" grep -q "listener CONTROLLER: TLS handshake failed: client certificate refused: unable to get local issuer certificate" "$SK_TMP/node-$L.log"

sk_kill9_node "$L"
rest=(); for i in 1 2 3; do [ "$i" != "$L" ] && rest+=("$i"); done
L2=$(wait_agree 2 "${rest[@]}")
sk_check "after kill -9 of leader $L a new leader (${L2:-none}) over TLS" test -n "$L2" -a "${L2:-$L}" != "$L"
boot2="127.0.0.1:${EXT[${rest[0]}]},127.0.0.1:${EXT[${rest[1]}]}"
seq -f 's-%05g' 1 500 > "$SK_TMP/in2.txt"
kcat -b "$boot2" "${SSL[@]}" -P -t rf3 -X acks=all -X message.timeout.ms=20000 -l "$SK_TMP/in2.txt" 2>> "$SK_TMP/kcat.err"
got=$(kcat -b "$boot2" "${SSL[@]}" -C -t rf3 -o beginning -e -q 2>>"$SK_TMP/kcat.err" | wc -l)
sk_check "produce and consume go on after the kill (1500 records: $got)" test "$got" -eq 1500
for i in "${rest[@]}"; do sk_check "node $i running" kill -0 "${SK_NODE_PID[i]}"; done
[ "$SK_FAILS" -eq 0 ] || { sk_dump_logs; tail -5 "$SK_TMP/kcat.err"; }
sk_summary "$NAME"
