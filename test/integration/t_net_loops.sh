#!/usr/bin/env bash
# num.network.threads=4 (issue 19): one node whose sockets are spread over
# four network loops while all broker state stays on the state loop.
# Checked:
# - the node logs "4 network loops";
# - 8 clients at once (4 kcat producers, 2 confluent-kafka producers, 2
#   kcat consumers) plus a producer and a consumer over a TLS listener:
#   every record delivered exactly as sent, per partition in order;
# - the metrics show connections on more than one loop and frames handed
#   off by the network loops;
# - SIGTERM while clients are connected: the node exits 0.
. "$(dirname "$0")/lib.sh"
NAME=t_net_loops
command -v kcat >/dev/null || { echo "$NAME: kcat missing"; exit 1; }
C=$SK_TMP/certs
bash "$SK_ROOT/etc/gen-certs.sh" "$C" >/dev/null || sk_fail "gen-certs.sh"

P_PLAIN=$(sk_free_port); P_SSL=$(sk_free_port); P_CTL=$(sk_free_port); P_ADM=$(sk_free_port)
cat > "$SK_TMP/cluster.conf" <<CONF
node.id=1
cluster.id=skiff-loops-cluster
process.roles=broker,controller
controller.quorum.voters=1@127.0.0.1:$P_CTL
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:$P_PLAIN,SSL://127.0.0.1:$P_SSL,CONTROLLER://127.0.0.1:$P_CTL
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT
ssl.keystore.type=PEM
ssl.keystore.location=$C/node-1-enc.pem
ssl.key.password=$(cat "$C/key-password.txt")
ssl.truststore.location=$C/ca.crt
num.network.threads=4
num.partitions=4
admin.listener=127.0.0.1:$P_ADM
log.dirs=$SK_TMP/data/node-1
CONF
LOG=$SK_TMP/node-1.log
sk_start_node 1
for p in $P_PLAIN $P_SSL $P_ADM; do sk_wait_port "$p" 30 "${SK_NODE_PID[1]}" || sk_fail "port $p not up"; done
ready() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$P_ADM/readyz" | grep -qx 200; }
t=0; until ready; do sleep 0.2; t=$((t + 1)); [ "$t" -lt 100 ] || sk_fail "node not ready"; done
sk_check "the node logs 4 network loops" grep -q "4 network loops" "$LOG"

B=127.0.0.1:$P_PLAIN
SSL=(-X security.protocol=ssl -X ssl.ca.location="$C/ca.crt")
N=5000
# kcat producers: each its own topic (4 partitions, keyed), in the background
pids=()
for i in 1 2 3 4; do
  awk -v i="$i" -v n="$N" 'BEGIN { for (k = 1; k <= n; k++) printf "k%d:p%d-%06d\n", k % 7, i, k }' > "$SK_TMP/in-$i.txt"
  kcat -P -b "$B" -t "loops-$i" -K: -X topic.request.required.acks=all -l "$SK_TMP/in-$i.txt" 2> "$SK_TMP/kcat-p$i.err" &
  pids+=($!)
done
# confluent-kafka producers
for i in 5 6; do
  "$SK_PY" - "$B" "loops-$i" "$N" > "$SK_TMP/ck-$i.out" 2>&1 <<'PY' &
import sys
from confluent_kafka import Producer
b, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = Producer({"bootstrap.servers": b, "acks": "all", "linger.ms": 5})
errs = []
for k in range(1, n + 1):
    p.produce(topic, key=b"k%d" % (k % 7), value=b"%s-%06d" % (topic.encode(), k),
              on_delivery=lambda e, m: errs.append(e) if e else None)
    p.poll(0)
left = p.flush(30)
print("OK" if not errs and left == 0 else "ERR %s left=%d" % (errs[:3], left))
PY
  pids+=($!)
done
# TLS producer (kcat over the SSL listener)
awk -v n="$N" 'BEGIN { for (k = 1; k <= n; k++) printf "tls-%06d\n", k }' > "$SK_TMP/in-tls.txt"
kcat -P -b "127.0.0.1:$P_SSL" "${SSL[@]}" -t loops-tls -p 0 -X topic.request.required.acks=all \
  -l "$SK_TMP/in-tls.txt" 2> "$SK_TMP/kcat-tls.err" &
pids+=($!)
ok=1
for p in "${pids[@]}"; do wait "$p" || ok=0; done
sk_check "all producers finished without error" test "$ok" = 1
for i in 5 6; do sk_check "confluent-kafka producer $i delivered all" grep -qx OK "$SK_TMP/ck-$i.out"; done

# consumers at once: kcat on topics 1..4 (2 at a time while the others
# read too), confluent-kafka for 5 and 6, kcat over TLS
consume() {  # consume I -> $SK_TMP/out-I.txt (key:value)
  kcat -C -b "$B" -t "loops-$1" -o beginning -e -q -K: > "$SK_TMP/out-$1.txt" 2> "$SK_TMP/kcat-c$1.err"
}
cpids=()
for i in 1 2 3 4; do consume "$i" & cpids+=($!); done
for i in 5 6; do
  "$SK_PY" - "$B" "loops-$i" "$N" > "$SK_TMP/out-$i.txt" 2>&1 <<'PY' &
import sys
from confluent_kafka import Consumer, TopicPartition
b, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = Consumer({"bootstrap.servers": b, "group.id": "g-" + topic, "auto.offset.reset": "earliest",
              "enable.auto.commit": False})
c.subscribe([topic])
got = []
import time
end = time.time() + 30
while len(got) < n and time.time() < end:
    m = c.poll(0.5)
    if m is None or m.error():
        continue
    got.append((m.partition(), m.value().decode()))
c.close()
for p, v in got:
    print("%d %s" % (p, v))
PY
  cpids+=($!)
done
kcat -C -b "127.0.0.1:$P_SSL" "${SSL[@]}" -t loops-tls -o beginning -e -q > "$SK_TMP/out-tls.txt" 2> "$SK_TMP/kcat-ctls.err" &
cpids+=($!)
for p in "${cpids[@]}"; do wait "$p"; done

for i in 1 2 3 4; do
  sk_check "kcat topic $i: every record back exactly once" cmp -s <(sort "$SK_TMP/in-$i.txt") <(sort "$SK_TMP/out-$i.txt")
done
# per key (one partition each) the order is the order sent
in_order() {  # in_order FILE(key:value) -> values of each key ascending
  awk -F: '{ if (($1 in last) && $2 <= last[$1]) bad = 1; last[$1] = $2 } END { exit bad }' "$1"
}
for i in 1 2 3 4; do sk_check "kcat topic $i: records of a key in the order sent" in_order "$SK_TMP/out-$i.txt"; done
for i in 5 6; do
  sk_check "confluent topic $i: all $N records back" test "$(awk '{print $2}' "$SK_TMP/out-$i.txt" | sort -u | wc -l)" -eq "$N"
done
sk_check "TLS topic: every record back in order" cmp -s "$SK_TMP/in-tls.txt" "$SK_TMP/out-tls.txt"

metrics=$(curl -s --max-time 5 "http://127.0.0.1:$P_ADM/metrics")
loops_with_frames=$(awk '$1 ~ /^skiff_net_loop_frames_total\{loop="[1-9]/ && $2 > 0 {n++} END {print n+0}' <<<"$metrics")
sk_check "frames handed off by more than one network loop ($loops_with_frames)" test "$loops_with_frames" -ge 2
sk_check "the loop gauges exist for loops 0..3" \
  test "$(grep -c '^skiff_net_loop_connections{loop="[0-3]"}' <<<"$metrics")" -eq 4
health=$(curl -s --max-time 5 "http://127.0.0.1:$P_ADM/v1/health")
sk_check "/v1/health lists the 4 network loops" \
  "$SK_PY" -c 'import json, sys; l = json.loads(sys.argv[1])["network_loops"]; sys.exit(0 if [x["loop"] for x in l] == [0, 1, 2, 3] and sum(x["frames_handed_off"] for x in l) > 0 else 1)' "$health"

# SIGTERM with clients connected: a consumer waiting on a long fetch on
# every loop (one per connection) must not keep the node from exiting 0
hold=()
for i in 1 2 3 4 5 6; do
  kcat -C -b "$B" -t "loops-1" -o end -q > /dev/null 2>&1 &
  hold+=($!)
done
sleep 2
conns=$(curl -s --max-time 5 "http://127.0.0.1:$P_ADM/metrics" | awk '$1 ~ /^skiff_net_loop_connections\{/ && $2 > 0 {n++} END {print n+0}')
sk_check "connections held on several loops ($conns)" test "$conns" -ge 2
kill -TERM "${SK_NODE_PID[1]}"
t=0; while kill -0 "${SK_NODE_PID[1]}" 2>/dev/null && [ "$t" -lt 200 ]; do sleep 0.1; t=$((t + 1)); done
wait "${SK_NODE_PID[1]}"; rc=$?
sk_check "SIGTERM with clients connected: exit 0 (got $rc)" test "$rc" -eq 0
for p in "${hold[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
[ "$SK_FAILS" -eq 0 ] || sk_dump_logs
sk_summary "$NAME"
