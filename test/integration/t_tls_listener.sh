#!/usr/bin/env bash
# TLS on the Kafka listeners (issue 17). One node with four Kafka
# listeners: PLAINTEXT, SSL (no client certificate), MTLS (SSL with
# listener.name.mtls.ssl.client.auth=required and a principal mapping rule)
# and the controller. Checked:
# - kcat and confluent-kafka produce and consume over SSL; kcat over mutual
#   TLS, whose principal (mapped by the rule) the node logs;
# - refused, each with a clear log line while the node stays ready: no client
#   certificate where one is required, a certificate of an untrusted CA, an
#   expired one, a plaintext client on the TLS port, a TLS client on the
#   plaintext port, half a ClientHello (closed after the handshake bound);
# - a client that trusts another CA refuses the node;
# - SIGHUP: a new certificate is served (its serial) to new connections, and
#   a broken key store keeps the old one with a log line;
# - AlterConfigs of listener.name.ssl.ssl.keystore.location: that listener
#   serves the new certificate, the other keeps its own;
# - ssl.keystore.type=JKS and a TLS listener without a key store are refused
#   at start with a message naming the key.
. "$(dirname "$0")/lib.sh"
NAME=t_tls_listener
PROBE="$SK_PY $SK_ROOT/test/integration/clients/tls_probe.py"
command -v kcat >/dev/null || { echo "$NAME: kcat missing"; exit 1; }
C=$SK_TMP/certs
bash "$SK_ROOT/etc/gen-certs.sh" "$C" >/dev/null || sk_fail "gen-certs.sh"

P_PLAIN=$(sk_free_port); P_SSL=$(sk_free_port); P_MTLS=$(sk_free_port); P_CTL=$(sk_free_port); P_ADM=$(sk_free_port)
cat > "$SK_TMP/cluster.conf" <<CONF
node.id=1
cluster.id=skiff-tls-cluster
process.roles=broker,controller
controller.quorum.voters=1@127.0.0.1:$P_CTL
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:$P_PLAIN,SSL://127.0.0.1:$P_SSL,MTLS://127.0.0.1:$P_MTLS,CONTROLLER://127.0.0.1:$P_CTL
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,CONTROLLER:PLAINTEXT
ssl.keystore.type=PEM
ssl.keystore.location=$C/node-1-enc.pem
ssl.key.password=$(cat "$C/key-password.txt")
ssl.truststore.location=$C/ca.crt
ssl.cipher.suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384
listener.name.mtls.ssl.client.auth=required
listener.name.mtls.ssl.principal.mapping.rules=RULE:^CN=([^,]+),O=skiff$/\$1/U,DEFAULT
admin.listener=127.0.0.1:$P_ADM
log.dirs=$SK_TMP/data/node-1
CONF
LOG=$SK_TMP/node-1.log

# refused configurations first (the node must not start)
refused() {  # refused WHAT PATTERN skiff-args...
  local what=$1 pat=$2; shift 2
  local out
  out=$(timeout 10 "$SK_BIN/skiff" --config "$SK_TMP/cluster.conf" "$@" 2>&1)
  local rc=$?
  [ "$rc" -ne 0 ] && grep -q -- "$pat" <<<"$out" || { echo "$what: rc $rc: $out" | tail -3; return 1; }
}
sk_check "ssl.keystore.type=JKS refused, saying skiff reads PEM" \
  refused jks "ssl.keystore.type=JKS: skiff reads PEM" --set ssl.keystore.type=JKS
sk_check "per-listener JKS refused with its line" \
  refused jks2 "listener.name.ssl.ssl.truststore.type=PKCS12: skiff reads PEM" --set listener.name.ssl.ssl.truststore.type=PKCS12
sed 's/^ssl.keystore.location=.*$//' "$SK_TMP/cluster.conf" > "$SK_TMP/nokey.conf"
out=$(timeout 10 "$SK_BIN/skiff" --config "$SK_TMP/nokey.conf" 2>&1)
sk_check "TLS listener without a key store refused naming ssl.keystore.location" grep -q "needs a key store: set ssl.keystore.location" <<<"$out"
sk_check "a wrong ssl.key.password is refused at start" \
  refused pw "wrong ssl.key.password" --set ssl.key.password=nope

sk_start_node 1
for p in $P_PLAIN $P_SSL $P_MTLS $P_ADM; do
  sk_wait_port "$p" 30 "${SK_NODE_PID[1]}" || sk_fail "port $p not up"
done
ready() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$P_ADM/readyz" | grep -qx 200; }
wait_ready() { local t=0; until ready; do sleep 0.2; t=$((t + 1)); [ "$t" -lt 100 ] || return 1; done; }
wait_ready || sk_fail "node not ready"

# the half ClientHello runs in the background while the rest goes on
$PROBE halfhello 127.0.0.1 "$P_SSL" > "$SK_TMP/half.out" 2>&1 &
HALF=$!

SSL=(-X security.protocol=ssl -X ssl.ca.location="$C/ca.crt")
seq -f 'rec-%06g' 1 2000 > "$SK_TMP/in.txt"
kcat -P -b "127.0.0.1:$P_SSL" "${SSL[@]}" -t tls-a -l "$SK_TMP/in.txt" 2> "$SK_TMP/kcat.err"
got=$(kcat -C -b "127.0.0.1:$P_SSL" "${SSL[@]}" -t tls-a -o beginning -e -q 2>>"$SK_TMP/kcat.err" | sort | cmp - "$SK_TMP/in.txt" && echo same)
sk_check "kcat: 2000 records produced and consumed over SSL" test "$got" = same

"$SK_PY" - "127.0.0.1:$P_SSL" "$C/ca.crt" > "$SK_TMP/ck.out" 2>&1 <<'PY'
import sys
from confluent_kafka import Consumer, Producer
boot, ca = sys.argv[1], sys.argv[2]
conf = {"bootstrap.servers": boot, "security.protocol": "SSL", "ssl.ca.location": ca}
p = Producer(conf)
for i in range(500):
    p.produce("tls-ck", value=b"v%d" % i)
left = p.flush(20)
c = Consumer(dict(conf, **{"group.id": "tls-g", "auto.offset.reset": "earliest"}))
c.subscribe(["tls-ck"])
seen = set()
import time
end = time.time() + 20
while len(seen) < 500 and time.time() < end:
    m = c.poll(0.5)
    if m is not None and not m.error():
        seen.add(m.value())
c.close()
print(("PASS" if left == 0 and len(seen) == 500 else "FAIL") + " confluent-kafka over SSL: %d left, %d read" % (left, len(seen)))
PY
sk_check_lines < "$SK_TMP/ck.out"

MTLS=(-X security.protocol=ssl -X ssl.ca.location="$C/ca.crt" -X ssl.certificate.location="$C/client.crt" -X ssl.key.location="$C/client.key")
echo mtls-hello | kcat -P -b "127.0.0.1:$P_MTLS" "${MTLS[@]}" -t tls-m 2>>"$SK_TMP/kcat.err"
got=$(kcat -C -b "127.0.0.1:$P_MTLS" "${MTLS[@]}" -t tls-m -o beginning -c 1 -e -q 2>>"$SK_TMP/kcat.err")
sk_check "kcat over mutual TLS (got '$got')" test "$got" = mtls-hello
sk_check "principal mapped by the rule is logged (User:CLIENT)" grep -q "listener MTLS: client certificate, principal User:CLIENT" "$LOG"

# refusals on the mutual-TLS port
sk_check_lines < <($PROBE apiversions 127.0.0.1 "$P_MTLS" "$C/ca.crt" | sed 's/^PASS/FAIL unexpectedly answered:/; s/^FAIL .*/PASS no client certificate: refused/')
sk_check "log: handshake failed for the missing certificate" grep -q "listener MTLS: TLS handshake failed: .*certificate" "$LOG"
sk_check_lines < <($PROBE apiversions 127.0.0.1 "$P_MTLS" "$C/ca.crt" "$C/rogue.crt" "$C/rogue.key" | sed 's/^PASS/FAIL unexpectedly answered:/; s/^FAIL .*/PASS certificate of an untrusted CA: refused/')
sk_check "log: untrusted certificate named" grep -q "client certificate refused: unable to get local issuer certificate" "$LOG"
sk_check_lines < <($PROBE apiversions 127.0.0.1 "$P_MTLS" "$C/ca.crt" "$C/expired.crt" "$C/expired.key" | sed 's/^PASS/FAIL unexpectedly answered:/; s/^FAIL .*/PASS expired certificate: refused/')
sk_check "log: expired certificate named" grep -q "client certificate refused: certificate has expired" "$LOG"
sk_check_lines < <($PROBE apiversions 127.0.0.1 "$P_MTLS" "$C/ca.crt" "$C/client.crt" "$C/client.key")

# a client that trusts another CA
out=$(echo x | timeout 10 kcat -P -b "127.0.0.1:$P_SSL" -X security.protocol=ssl -X ssl.ca.location="$C/rogue-ca.crt" -t tls-x -X message.timeout.ms=3000 2>&1)
sk_check "a client trusting another CA refuses the node" grep -qi "certificate verify failed" <<<"$out"

# protocol mix-ups
sk_check_lines < <($PROBE plain 127.0.0.1 "$P_SSL")
sk_check "log: plaintext client on the TLS listener" grep -q "listener SSL: TLS handshake failed: .*(a plaintext client on a TLS listener?)" "$LOG"
out=$(echo x | timeout 10 kcat -P -b "127.0.0.1:$P_PLAIN" "${SSL[@]}" -t tls-x -X message.timeout.ms=3000 2>&1)
sk_check "TLS client on the plaintext port fails" test -n "$out"
sk_check "log: TLS client on the plaintext listener" grep -q "listener PLAINTEXT: it sent a TLS handshake to a PLAINTEXT listener" "$LOG"

# SIGHUP: a new certificate for new connections; a broken one is refused
s1=$($PROBE serial 127.0.0.1 "$P_SSL" "$C/ca.crt")
cp "$C/node-1-enc.pem" "$SK_TMP/old.pem"
# a new certificate for the same key, signed by the same CA
openssl req -new -key "$C/node-1.key" -subj "/O=skiff/CN=node-1" -out "$SK_TMP/n.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' > "$SK_TMP/n.ext"
openssl x509 -req -in "$SK_TMP/n.csr" -CA "$C/ca.crt" -CAkey "$C/ca.key" -set_serial 0x5e1f00d -days 30 \
  -extfile "$SK_TMP/n.ext" -out "$SK_TMP/n.crt" 2>/dev/null
cat "$SK_TMP/n.crt" "$C/node-1-enc.key" > "$C/node-1-enc.pem"
kill -HUP "${SK_NODE_PID[1]}"
sleep 0.5
s2=$($PROBE serial 127.0.0.1 "$P_SSL" "$C/ca.crt")
sk_log "served serial before SIGHUP $s1, after $s2"
sk_check "SIGHUP: the new certificate is served (serial 05E1F00D)" test "$s2" = 05E1F00D
sk_check "SIGHUP logged" grep -q "listener SSL: certificates reloaded" "$LOG"
echo garbage > "$C/node-1-enc.pem"
kill -HUP "${SK_NODE_PID[1]}"
sleep 0.5
s3=$($PROBE serial 127.0.0.1 "$P_SSL" "$C/ca.crt")
sk_check "SIGHUP with a broken key store keeps the last good one ($s3)" test "$s3" = 05E1F00D
sk_check "the failed reload is logged with its reason" grep -q "listener SSL: certificate reload failed, the previous ones stay: ssl.keystore.location=" "$LOG"
cp "$SK_TMP/old.pem" "$C/node-1-enc.pem"

# AlterConfigs (kafka-python): listener SSL gets node-2's key store at run time
alter() {
  "$SK_PY" - "127.0.0.1:$P_PLAIN" "$1" "$2" <<'PY'
import sys
from kafka.admin import KafkaAdminClient, ConfigResource, ConfigResourceType
a = KafkaAdminClient(bootstrap_servers=sys.argv[1])
r = a.alter_configs([ConfigResource(ConfigResourceType.BROKER, "1", configs={sys.argv[2]: sys.argv[3]})])
print(r.resources[0][0], r.resources[0][1])
a.close()
PY
}
m1=$($PROBE serial 127.0.0.1 "$P_MTLS" "$C/ca.crt")
out=$(alter listener.name.ssl.ssl.keystore.location "$C/node-2.pem")
sk_check "AlterConfigs of listener.name.ssl.ssl.keystore.location accepted ($out)" test "${out%% *}" = 0
want=$(openssl x509 -in "$C/node-2.crt" -noout -serial | cut -d= -f2)
t=0; until [ "$($PROBE serial 127.0.0.1 "$P_SSL" "$C/ca.crt")" = "$want" ]; do sleep 0.2; t=$((t + 1)); [ "$t" -lt 25 ] || break; done
sk_check "listener SSL serves node-2's certificate ($want) after AlterConfigs" test "$($PROBE serial 127.0.0.1 "$P_SSL" "$C/ca.crt")" = "$want"
sk_check "listener MTLS keeps its own ($m1)" test "$($PROBE serial 127.0.0.1 "$P_MTLS" "$C/ca.crt")" = "$m1"
out=$(alter listener.name.ssl.ssl.client.auth required)
sk_check "a per-listener key that cannot change at run time is refused (INVALID_CONFIG 40)" test "${out%% *}" = 40

wait "$HALF"
sk_check_lines < "$SK_TMP/half.out"
sk_check "log: handshake bound" grep -q "listener SSL: TLS handshake not finished after 10000 ms" "$LOG"
sk_check "node ready after all of it" ready
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { sk_dump_logs; tail -5 "$SK_TMP/kcat.err"; }
sk_summary "$NAME"
