#!/usr/bin/env bash
# Issue 17, the admin port: TLS (curl with the cluster CA), HTTP Basic
# against the SASL credentials (PLAIN users of the jaas config), client
# certificates as principals, 401 / 403 / 200 by route and principal, POST
# only for super users, open probes, the failure delay, what a wrong CA, an
# untrusted client certificate, a cross-origin POST, plain HTTP on the TLS port and a stalled
# handshake get, and the refusal to start on 0.0.0.0 without
# authentication (with its file:line). The node stays ready throughout.
. "$(dirname "$0")/lib.sh"

command -v curl >/dev/null || { echo "t_sec_admin: curl missing"; exit 1; }
command -v openssl >/dev/null || { echo "t_sec_admin: openssl missing"; exit 1; }
C=$SK_TMP/certs
bash "$SK_ROOT/etc/gen-certs.sh" "$C" >/dev/null || sk_fail "gen-certs.sh"

# principals of the certificates as skiff maps them (Kafka's DEFAULT rule:
# "User:" + the subject in RFC 2253 form)
subj() { openssl x509 -noout -subject -nameopt RFC2253 -in "$C/$1.crt" | sed 's/^subject=//'; }
P_ADMIN="User:$(subj admin)"; P_CLIENT="User:$(subj client)"
KP=$(sk_free_port); SASLP=$(sk_free_port); CP=$(sk_free_port); AP=$(sk_free_port)
SK_ADMIN_PORT[1]=$AP
cat > "$SK_TMP/cluster.conf" <<CONF
node.id=1
process.roles=broker,controller
cluster.id=skiff-test-cluster
listeners=PLAINTEXT://127.0.0.1:$KP,SASL_PLAINTEXT://127.0.0.1:$SASLP,CONTROLLER://127.0.0.1:$CP
advertised.listeners=PLAINTEXT://127.0.0.1:$KP,SASL_PLAINTEXT://127.0.0.1:$SASLP
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
controller.quorum.voters=1@127.0.0.1:$CP
log.dirs=$SK_TMP/data/node-1
offsets.topic.replication.factor=1
listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";
super.users=User:admin;$P_ADMIN
admin.listener=127.0.0.1:$AP
admin.security.protocol=SSL
admin.authentication=basic
listener.name.admin.ssl.keystore.location=$C/node-1.pem
listener.name.admin.ssl.truststore.location=$C/ca.crt
listener.name.admin.ssl.client.auth=requested
connection.failed.authentication.delay.ms=300
CONF
sk_start_node 1
sk_wait_port "${SK_ADMIN_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "admin port not up"
A=https://127.0.0.1:${SK_ADMIN_PORT[1]}

# code METHOD PATH [curl args...] -> the HTTP status (000: no HTTP answer)
code() {
  local m=$1 p=$2; shift 2
  curl -s -o "$SK_TMP/body" -D "$SK_TMP/head" -w '%{http_code}' --max-time 10 -X "$m" --cacert "$C/ca.crt" "$@" "$A$p"
}
ready() { [ "$(code GET /readyz)" = 200 ]; }
for _ in $(seq 1 100); do ready && break; sleep 0.2; done

sk_check "probes open: /healthz 200 without credentials" test "$(code GET /healthz)" = 200
sk_check "probes open: /readyz 200 without credentials" ready
sk_check "GET /v1/cluster without credentials: 401" test "$(code GET /v1/cluster)" = 401
sk_check "401 carries WWW-Authenticate: Basic realm=\"skiff\"" grep -qi '^WWW-Authenticate: Basic realm="skiff"' "$SK_TMP/head"
sk_check "/metrics is not a probe: 401" test "$(code GET /metrics)" = 401
sk_check "malformed Authorization: 401" test "$(code GET /v1/cluster -H 'Authorization: Basic !!!')" = 401

t0=$(date +%s%N)
st=$(code GET /v1/cluster -u admin:wrong)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
sk_check "wrong password: 401" test "$st" = 401
sk_check "wrong password answered after the failure delay (${ms} ms >= 300)" test "$ms" -ge 290
sk_check "the 401 does not say which part was wrong" sh -c "! grep -qiE 'password|unknown|admin' '$SK_TMP/body'"
sk_check "unknown user: 401" test "$(code GET /v1/cluster -u mallory:x)" = 401
sk_check "the failure is logged" grep -q "admin: authentication failed for user 'admin'" "$SK_TMP/node-1.log"

sk_check "alice (PLAIN user) GET /v1/cluster: 200" test "$(code GET /v1/cluster -u alice:alice-secret)" = 200
sk_check "the 200 is the cluster document" grep -q '"cluster_id":"skiff-test-cluster"' "$SK_TMP/body"
sk_check "alice GET /metrics: 200" test "$(code GET /metrics -u alice:alice-secret)" = 200
sk_check "alice (not a super user) POST /v1/quorum/resign: 403" \
  test "$(code POST /v1/quorum/resign -u alice:alice-secret)" = 403
sk_check "the 403 names the principal" grep -q 'User:alice is not a super user' "$SK_TMP/body"
# a quorum of one cannot resign: 400 from the handler proves the request passed authorization
sk_check "admin (super user) POST /v1/quorum/resign reaches the handler (400 quorum of one)" \
  test "$(code POST /v1/quorum/resign -u admin:admin-secret)" = 400
sk_check "POST without credentials: 401" test "$(code POST /v1/quorum/resign)" = 401
sk_check "super user POST with a foreign Origin (cross-site request forgery): 403" \
  test "$(code POST /v1/quorum/resign -u admin:admin-secret -H 'Origin: https://evil.example')" = 403
sk_check "the 403 says cross-origin" grep -q 'cross-origin POST refused' "$SK_TMP/body"
sk_check "super user POST with its own Origin reaches the handler (400)" \
  test "$(code POST /v1/quorum/resign -u admin:admin-secret -H "Origin: $A")" = 400

sk_check "client certificate ($P_CLIENT) GET: 200" \
  test "$(code GET /v1/topics --cert "$C/client.pem")" = 200
sk_check "client certificate POST: 403" test "$(code POST /v1/quorum/resign --cert "$C/client.pem")" = 403
sk_check "the 403 names the certificate's principal" grep -qF "$P_CLIENT is not a super user" "$SK_TMP/body"
sk_check "admin certificate (super user) POST reaches the handler (400)" \
  test "$(code POST /v1/quorum/resign --cert "$C/admin.pem")" = 400

st=$(code GET /v1/cluster --cert "$C/rogue.pem")
sk_check "certificate of an untrusted CA: refused in the handshake (got $st)" test "$st" = 000
st=$(code GET /v1/cluster --cert "$C/expired.pem")
sk_check "expired client certificate: refused in the handshake (got $st)" test "$st" = 000
st=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$C/rogue-ca.crt" "$A/healthz")
sk_check "client trusting another CA does not accept the server (got $st)" test "$st" = 000
st=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:${SK_ADMIN_PORT[1]}/healthz")
sk_check "plain HTTP on the TLS port gets no HTTP answer (got $st)" test "$st" = 000

# a handshake that stalls half way: a TCP connection that sends the first
# bytes of a ClientHello and then nothing; the port keeps serving
exec 7<>"/dev/tcp/127.0.0.1/${SK_ADMIN_PORT[1]}"
printf '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03' >&7
exec 8<>"/dev/tcp/127.0.0.1/${SK_ADMIN_PORT[1]}"
sk_check "with two stalled handshakes open, GET /v1/cluster still 200" \
  test "$(code GET /v1/cluster --cert "$C/client.pem")" = 200
exec 7>&- 8>&-
sk_check "node still ready after all of the above" ready

# start-up refusal: a second node config binding 0.0.0.0 without authentication
P2=$(sk_free_port)
cat > "$SK_TMP/open.conf" <<CONF
node.id=1
process.roles=broker,controller
cluster.id=skiff-test-open
listeners=PLAINTEXT://127.0.0.1:$(sk_free_port),CONTROLLER://127.0.0.1:$(sk_free_port)
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$SK_TMP/data/open
admin.listener=0.0.0.0:$P2
CONF
cq=$(grep -o 'CONTROLLER://127.0.0.1:[0-9]*' "$SK_TMP/open.conf" | cut -d: -f3)
echo "controller.quorum.voters=1@127.0.0.1:$cq" >> "$SK_TMP/open.conf"
timeout 20 "$SK_BIN/skiff" --config "$SK_TMP/open.conf" > "$SK_TMP/open.log" 2>&1
rc=$?
sk_check "0.0.0.0 without authentication: refuses to start (exit $rc)" test "$rc" -ne 0 -a "$rc" -ne 124
sk_check "the refusal names file:line and the keys to set" \
  grep -q "open.conf:8: admin.listener=0.0.0.0:$P2 .*admin.authentication=basic.*admin.allow.insecure=true" "$SK_TMP/open.log"
"$SK_BIN/skiff" --config "$SK_TMP/open.conf" "${SK_NET_ARGS[@]}" --set admin.allow.insecure=true > "$SK_TMP/open2.log" 2>&1 &
p=$!; SK_PIDS+=("$p")
sk_wait_port "$P2" 30 "$p"
sk_check "with admin.allow.insecure=true it starts and serves" \
  test "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$P2/healthz")" = 200
kill -TERM "$p"; wait "$p" 2>/dev/null

sk_stop_node 1
sk_summary t_sec_admin
