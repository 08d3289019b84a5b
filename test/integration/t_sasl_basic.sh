#!/usr/bin/env bash
# SASL on a SASL_PLAINTEXT listener of one node (issue 17): the first admin
# credential from `skiff format --add-scram`, PLAIN users from the jaas
# config, SCRAM users made with AlterUserScramCredentials (raw frames: no
# client here has that call); kcat and confluent-kafka produce, consume and
# join a group over PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; then the
# refusals through raw frames (clients/sasl_check.py): wrong password and
# unknown user (one error, one message, after the delay, then closed),
# mechanism not enabled, garbage tokens, requests before authentication,
# the v0 handshake's bare tokens, Describe/Alter error codes; credentials
# survive a restart; re-authentication and session expiry
# (connections.max.reauth.ms) on a second start.
. "$(dirname "$0")/lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
P=$(sk_free_port); C=$(sk_free_port); A=$(sk_free_port)
SK_KAFKA_PORT[1]=$P; SK_ADMIN_PORT[1]=$A
B=127.0.0.1:$P
cat > "$SK_TMP/cluster.conf" <<CONF
node.id=1
process.roles=broker,controller
controller.quorum.voters=1@127.0.0.1:$C
controller.listener.names=CONTROLLER
listeners=SASL_PLAINTEXT://127.0.0.1:$P,CONTROLLER://127.0.0.1:$C
listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT
# the per-listener value wins over the top-level one
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,GSSAPI
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";
# the node's own connections to itself (inter-broker = this SASL listener)
sasl.mechanism.inter.broker.protocol=PLAIN
super.users=User:admin
admin.listener=127.0.0.1:$A
log.dirs=$SK_TMP/data/node-1
CONF

sk_log "format with a bootstrap SCRAM credential"
sk_check "format exit 0" "$SK_BIN/skiff" format --config "$SK_TMP/cluster.conf" \
  --add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]'
sk_check "bootstrap file holds no password" bash -c "! grep -q admin-secret '$SK_TMP/data/node-1/bootstrap.scram'"
"$SK_BIN/skiff" format --config "$SK_TMP/cluster.conf" --add-scram 'SCRAM-SHA-1=[name=a,password=b]' 2>/dev/null
sk_check "format refuses an unknown mechanism (exit 2)" test $? -eq 2

sk_log "config errors (exit 2, key named)"
sed 's/^listener.name.sasl_plaintext.sasl.enabled.mechanisms=.*/listener.name.sasl_plaintext.sasl.enabled.mechanisms=GSSAPI/' "$SK_TMP/cluster.conf" > "$SK_TMP/bad1.conf"
"$SK_BIN/skiff" --config "$SK_TMP/bad1.conf" > "$SK_TMP/bad1.out" 2>&1; rc=$?
sk_check "only GSSAPI enabled: exit 2" test $rc -eq 2
sk_check "only GSSAPI enabled: names the key" grep -q 'listener.name.sasl_plaintext.sasl.enabled.mechanisms' "$SK_TMP/bad1.out"
sed 's/user_alice="alice-secret";/user_alice="alice-secret"/' "$SK_TMP/cluster.conf" > "$SK_TMP/bad2.conf"
"$SK_BIN/skiff" --config "$SK_TMP/bad2.conf" > "$SK_TMP/bad2.out" 2>&1; rc=$?
sk_check "jaas without the final ';': exit 2" test $rc -eq 2
sk_check "jaas error names the key and position" grep -q 'plain.sasl.jaas.config.*at character' "$SK_TMP/bad2.out"
sed 's/^super.users=.*/super.users=admin/' "$SK_TMP/cluster.conf" > "$SK_TMP/bad3.conf"
"$SK_BIN/skiff" --config "$SK_TMP/bad3.conf" >/dev/null 2>&1
sk_check "super.users without User: exit 2" test $? -eq 2

# group.initial.rebalance.delay.ms=0: the group consumers below would each
# wait 3 s for more members (not under test)
sk_start_node 1 --set group.initial.rebalance.delay.ms=0
sk_wait_port "$P" 30 "${SK_NODE_PID[1]}" || sk_fail "node not up"
sk_check "GSSAPI in the list is logged and ignored" grep -q "GSSAPI is not served" "$SK_TMP/node-1.log"
for i in $(seq 1 50); do grep -q "appended 1 bootstrap SCRAM" "$SK_TMP/node-1.log" && break; sleep 0.1; done
sk_check "bootstrap credential appended" grep -q "appended 1 bootstrap SCRAM" "$SK_TMP/node-1.log"

sk_log "raw-frame checks"
sk_check_lines < <("$SK_PY" "$HERE/clients/sasl_check.py" "$B" main 2>&1)

sk_check "failed authentications logged" grep -q "SASL authentication failed for user" "$SK_TMP/node-1.log"
n_fail_lines=$(grep -c "SASL authentication failed for user" "$SK_TMP/node-1.log")
sk_check "failure log lines rate-limited (5 per 10 s, $n_fail_lines seen)" test "$n_fail_lines" -le 5

kc() {  # kc MECH USER PW kcat-args...
  local m=$1 u=$2 pw=$3; shift 3
  timeout 20 kcat -b "$B" -X security.protocol=SASL_PLAINTEXT -X "sasl.mechanisms=$m" \
    -X "sasl.username=$u" -X "sasl.password=$pw" "$@"
}
sk_log "kcat over PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"
for spec in "PLAIN alice alice-secret" "SCRAM-SHA-256 admin admin-secret" "SCRAM-SHA-512 carol carol-pw"; do
  set -- $spec
  t="t-${1,,}"
  seq 1 200 | sed "s/^/$2-/" | kc "$1" "$2" "$3" -P -t "$t" 2>>"$SK_TMP/kcat.err"
  got=$(kc "$1" "$2" "$3" -C -t "$t" -o beginning -e -q 2>>"$SK_TMP/kcat.err" | wc -l)
  sk_check "kcat $1 produce+consume 200 ($got)" test "$got" -eq 200
done
# kcat -L retries until its metadata timeout (-m; a SIGTERM waits that
# out too); the error is logged at the first refusal, so kcat is killed as
# soon as that line is there (or after 15 s)
kcat -b "$B" -X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=SCRAM-SHA-512 \
  -X sasl.username=carol -X sasl.password=wrong -L -m 15 > "$SK_TMP/wrong.out" 2>&1 &
wrong_pid=$!; SK_PIDS+=("$wrong_pid")
for _ in $(seq 1 150); do
  grep -q "SASL authentication error" "$SK_TMP/wrong.out" && break
  kill -0 "$wrong_pid" 2>/dev/null || break
  sleep 0.1
done
kill -KILL "$wrong_pid" 2>/dev/null; wait "$wrong_pid" 2>/dev/null
sk_check "kcat wrong password: authentication error" grep -q "SASL authentication error" "$SK_TMP/wrong.out"

sk_log "confluent-kafka: producer and a group consumer over SCRAM-SHA-512"
cat > "$SK_TMP/ck.py" <<'PY'
import sys, time
from confluent_kafka import Producer, Consumer
b = sys.argv[1]
conf = {"bootstrap.servers": b, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "carol", "sasl.password": "carol-pw"}
p = Producer(dict(conf))
for i in range(100):
    p.produce("ck", value=b"v%d" % i)
left = p.flush(20)
print("PASS confluent produce 100" if left == 0 else "FAIL confluent produce: %d left" % left)
c = Consumer(dict(conf, **{"group.id": "g1", "auto.offset.reset": "earliest"}))
c.subscribe(["ck"])
n, t0 = 0, time.time()
while n < 100 and time.time() - t0 < 30:
    m = c.poll(1.0)
    if m is not None and m.error() is None:
        n += 1
c.commit(asynchronous=False)
c.close()
print("PASS confluent group consume 100" if n == 100 else "FAIL confluent group consume: %d" % n)
PY
sk_check_lines < <("$SK_PY" "$SK_TMP/ck.py" "$B" 2>&1)
sk_log "kafka-python: producer and a group consumer over SCRAM-SHA-256"
cat > "$SK_TMP/kp.py" <<'PY'
import sys, time
from kafka import KafkaProducer, KafkaConsumer
b = sys.argv[1]
conf = dict(bootstrap_servers=b, security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="admin", sasl_plain_password="admin-secret")
p = KafkaProducer(**conf)
for i in range(50):
    p.send("kp", b"m%d" % i)
p.flush(20)
c = KafkaConsumer("kp", auto_offset_reset="earliest", group_id="kpg", **conf)
# read until 50 arrived and the position is at the end of every assigned
# partition (a duplicate or a stray record would be counted by then)
n, deadline = 0, time.time() + 30
while time.time() < deadline:
    n += sum(len(recs) for recs in c.poll(timeout_ms=200).values())
    tps = c.assignment()
    if n >= 50 and tps and all(c.position(tp) >= off for tp, off in c.end_offsets(list(tps)).items()):
        break
c.close()
print("PASS kafka-python SCRAM-SHA-256 produce+group consume 50" if n == 50 else "FAIL kafka-python consume: %d" % n)
PY
out=$("$SK_PY" "$SK_TMP/kp.py" "$B" 2>"$SK_TMP/kp.err")
sk_check "kafka-python SCRAM-SHA-256 produce + group consume 50" grep -q '^PASS' <<<"$out"

sk_log "restart: credentials are in the metadata log"
sk_stop_node 1
sk_start_node 1
sk_wait_port "$P" 30 "${SK_NODE_PID[1]}" || sk_fail "node not up after restart"
sk_check_lines < <("$SK_PY" "$HERE/clients/sasl_check.py" "$B" after_restart 2>&1)
sk_check "bootstrap not appended twice" test "$(grep -c 'appended 1 bootstrap SCRAM' "$SK_TMP/node-1.log")" -eq 1

sk_log "re-authentication (connections.max.reauth.ms=1500)"
sk_stop_node 1
sk_start_node 1 --set connections.max.reauth.ms=1500
sk_wait_port "$P" 30 "${SK_NODE_PID[1]}" || sk_fail "node not up with reauth"
sk_check_lines < <("$SK_PY" "$HERE/clients/sasl_check.py" "$B" reauth 2>&1)
# a client that does not re-authenticate (librdkafka 2.0) is closed after
# its session and reconnects: a producer spread over 4 sessions loses nothing
cat > "$SK_TMP/rp.py" <<'PY'
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "security.protocol": "SASL_PLAINTEXT",
              "sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": "admin", "sasl.password": "admin-secret"})
errs = []
for i in range(12):
    p.produce("reauth", value=b"%d" % i, on_delivery=lambda e, m: e and errs.append(e))
    p.poll(0.5)
left = p.flush(20)
print("PASS producer across session expiries" if left == 0 and not errs else "FAIL producer across expiries: %d %r" % (left, errs[:2]))
PY
sk_check_lines < <("$SK_PY" "$SK_TMP/rp.py" "$B" 2>&1)
sk_check "expired sessions were closed by the node" grep -q "SASL session expired" "$SK_TMP/node-1.log"
sk_check "node alive at the end" kill -0 "${SK_NODE_PID[1]}"
sk_summary t_sasl_basic
