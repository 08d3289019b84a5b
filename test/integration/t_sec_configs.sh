#!/usr/bin/env bash
# Issue 17, the shipped secure configurations stay startable: etc/secure-
# single-node.conf (SASL_SSL clients, mutual-TLS controller listener) and
# etc/secure-cluster.conf (3 nodes: SASL_SSL clients, mutual TLS between
# nodes and on the raft port, HTTPS + Basic admin port), each formatted with
# its documented `skiff format --add-scram` line and run from a directory
# holding ./data/certs made by etc/gen-certs.sh, exactly as the files say;
# only ports (free ones) and data directories are overridden with --set.
# Checks: kcat SCRAM-SHA-512 produce/consume, the admin port over HTTPS as
# the admin user, replication factor 3 with a full ISR over the mutual-TLS
# inter-broker listener, every node healthy.
. "$(dirname "$0")/lib.sh"
command -v kcat >/dev/null || { echo "t_sec_configs: kcat missing"; exit 1; }
cd "$SK_TMP" || exit 1
bash "$SK_ROOT/etc/gen-certs.sh" data/certs > /dev/null || sk_fail "gen-certs.sh"
SCRAM='SCRAM-SHA-512=[name=admin,password=admin-secret]'
KC=(-X security.protocol=SASL_SSL -X sasl.mechanisms=SCRAM-SHA-512 -X sasl.username=admin
    -X sasl.password=admin-secret -X ssl.ca.location=data/certs/ca.crt)
admin_get() { curl -s -o "$SK_TMP/body" -w '%{http_code}' --max-time 5 --cacert data/certs/ca.crt -u admin:admin-secret "https://127.0.0.1:$1$2"; }
wait_scram() {  # the bootstrap credential is committed by the first controller
  local t=0
  until kcat -b "$1" "${KC[@]}" -L -m 3 > /dev/null 2>&1; do
    sleep 0.2; t=$((t + 1)); [ $t -lt 150 ] || return 1
  done
}

# ---- one node
P=$(sk_free_port); C=$(sk_free_port); A=$(sk_free_port)
SETS=(--set "listeners=SASL_SSL://127.0.0.1:$P,CONTROLLER://127.0.0.1:$C" --set "advertised.listeners=SASL_SSL://127.0.0.1:$P"
      --set "controller.quorum.voters=1@127.0.0.1:$C" --set "admin.listener=127.0.0.1:$A" --set log.dirs=./data/single)
"$SK_BIN/skiff" format --config "$SK_ROOT/etc/secure-single-node.conf" "${SETS[@]}" --add-scram "$SCRAM" > format1.log 2>&1 ||
  { cat format1.log; sk_fail "format of secure-single-node.conf"; }
"$SK_BIN/skiff" --config "$SK_ROOT/etc/secure-single-node.conf" "${SK_NET_ARGS[@]}" "${SETS[@]}" > "$SK_TMP/node-1.log" 2>&1 &
SK_NODE_PID[1]=$!; SK_PIDS+=("$!")
sk_wait_port "$A" 30 "${SK_NODE_PID[1]}" || sk_fail "secure-single-node.conf: node did not start"
sk_check "single node: admin user logs in over SASL_SSL SCRAM-SHA-512" wait_scram "127.0.0.1:$P"
seq 1 100 > in.txt
kcat -b "127.0.0.1:$P" "${KC[@]}" -P -t s1 -l in.txt 2> /dev/null
kcat -b "127.0.0.1:$P" "${KC[@]}" -C -t s1 -o beginning -e -q > out.txt 2> /dev/null
sk_check "single node: produce + consume 100 over SASL_SSL" cmp -s in.txt out.txt
alice_ok() {
  kcat -b "127.0.0.1:$P" -X security.protocol=SASL_SSL -X sasl.mechanisms=PLAIN -X sasl.username=alice \
    -X sasl.password=alice-secret -X ssl.ca.location=data/certs/ca.crt -L -m 5 > /dev/null 2>&1
}
sk_check "single node: PLAIN user alice of the jaas config" alice_ok
sk_check "single node: HTTPS admin port answers the admin user" test "$(admin_get "$A" /v1/cluster)" = 200
st=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$A/v1/cluster")
sk_check "single node: no plain HTTP on the admin port (got $st)" test "$st" = 000
sk_check "single node: ready" test "$(admin_get "$A" /readyz)" = 200
sk_stop_node 1

# ---- three nodes
voters=""; boot=""
for i in 1 2 3; do
  KP[i]=$(sk_free_port); IP[i]=$(sk_free_port); CP[i]=$(sk_free_port); AP[i]=$(sk_free_port)
  voters+="${voters:+,}$i@127.0.0.1:${CP[i]}"; boot+="${boot:+,}127.0.0.1:${KP[i]}"
done
nsets() {  # nsets I -> the --set arguments of node I
  local i=$1
  NS=(--set "listeners=SASL_SSL://127.0.0.1:${KP[i]},INTERNAL://127.0.0.1:${IP[i]},CONTROLLER://127.0.0.1:${CP[i]}"
      --set "advertised.listeners=SASL_SSL://127.0.0.1:${KP[i]},INTERNAL://127.0.0.1:${IP[i]}"
      --set "controller.quorum.voters=$voters" --set "admin.listener=127.0.0.1:${AP[i]}"
      --set "log.dirs=./data/secure/node-$i")
}
for i in 1 2 3; do
  nsets "$i"
  "$SK_BIN/skiff" format --config "$SK_ROOT/etc/secure-cluster.conf" --node "$i" "${NS[@]}" --add-scram "$SCRAM" \
    > "format-$i.log" 2>&1 || { cat "format-$i.log"; sk_fail "format of secure-cluster.conf node $i"; }
done
for i in 1 2 3; do
  nsets "$i"
  "$SK_BIN/skiff" --config "$SK_ROOT/etc/secure-cluster.conf" --node "$i" "${SK_NET_ARGS[@]}" "${NS[@]}" >> "$SK_TMP/node-$i.log" 2>&1 &
  SK_NODE_PID[i]=$!; SK_PIDS+=("$!")
done
for i in 1 2 3; do sk_wait_port "${AP[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "secure-cluster.conf: node $i did not start"; done
healthy() { admin_get "${AP[$1]}" /v1/health > /dev/null; grep -q '"healthy":true' "$SK_TMP/body" && grep -q '"nodes_down":\[\]' "$SK_TMP/body"; }
t=0; until healthy 1 && healthy 2 && healthy 3; do sleep 0.2; t=$((t + 1)); [ $t -lt 200 ] && continue; break; done
for i in 1 2 3; do sk_check "cluster: node $i healthy over HTTPS, no node down" healthy "$i"; done
sk_check "cluster: admin user logs in" wait_scram "$boot"
# /v1/cluster lists every advertised listener of each node, not just the first
admin_get "${AP[1]}" /v1/cluster > /dev/null
eps=$(jq -c '[.brokers[] | select(.node_id == 2) | .listeners[] | "\(.name):\(.port)"] | sort' "$SK_TMP/body")
sk_check "cluster: /v1/cluster shows node 2's SASL_SSL and INTERNAL endpoints ($eps)" \
  test "$eps" = "$(jq -cn --arg a "INTERNAL:${IP[2]}" --arg b "SASL_SSL:${KP[2]}" '[$a, $b] | sort')"
"$SK_PY" - "$boot" <<'PY' > rf3.txt 2>&1
import sys, time
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1], "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
                 "sasl.username": "admin", "sasl.password": "admin-secret", "ssl.ca.location": "data/certs/ca.crt"})
a.create_topics([NewTopic("rf3", 3, 3)])["rf3"].result(20)
for _ in range(100):
    parts = a.list_topics(timeout=10).topics["rf3"].partitions.values()
    if all(len(p.isrs) == 3 for p in parts):
        print("isr-full")
        break
    time.sleep(0.2)
PY
sk_check "cluster: RF 3 topic created over SASL_SSL, every ISR full ($(tail -n 1 rf3.txt))" grep -qx isr-full rf3.txt
seq 1 1000 > in3.txt
kcat -b "$boot" "${KC[@]}" -X acks=all -P -t rf3 -l in3.txt 2> /dev/null
kcat -b "$boot" "${KC[@]}" -C -t rf3 -o beginning -e -q 2> /dev/null | sort -n > out3.txt
sk_check "cluster: 1000 messages acks=all in, all out" cmp -s in3.txt out3.txt
for i in 1 2 3; do sk_stop_node "$i"; done
sk_summary t_sec_configs
