#!/usr/bin/env bash
# Client quotas for SASL users (issue 18): on a SASL_PLAINTEXT listener the
# principal User:alice (PLAIN) is held to her user quota while User:bob,
# under the default user quota, gets his own allowance of the default's
# size; skiffctl sets the quotas as the super user through --command-config.
# One node, ~20 s.
# test-solo: measures byte rates within 10 % over a few seconds (as t_quota.sh)
. "$(dirname "$0")/lib.sh"
CL=$SK_ROOT/test/integration/clients
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
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";
sasl.mechanism.inter.broker.protocol=PLAIN
super.users=User:admin
admin.listener=127.0.0.1:$A
log.dirs=$SK_TMP/data/node-1
CONF
printf 'security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=admin\nsasl.password=admin-secret\n' > "$SK_TMP/admin.props"
sk_start_node 1
sk_wait_port "$P" 30 "${SK_NODE_PID[1]}" || sk_fail "node not up"
CTL() { "$SK_BIN/skiffctl" "$@" -b "$B" --command-config "$SK_TMP/admin.props"; }
ok=0
for _ in $(seq 50); do CTL topic create qs -p 1 -r 1 > /dev/null 2>&1 && { ok=1; break; }; sleep 0.2; done
[ $ok = 1 ] || sk_fail "create qs"

A_RATE=150000; D_RATE=250000
sk_check "quota set --user alice" CTL quota set --user alice --producer-byte-rate $A_RATE
sk_check "quota set --default" CTL quota set --default --producer-byte-rate $D_RATE
out=$(CTL quota list); echo "$out"
sk_check "list shows alice" grep -Eq "^alice +- +producer_byte_rate +$A_RATE" <<< "$out"

within() { awk -v m="$1" -v g="$2" 'BEGIN { r = m / g; exit !(r >= 0.90 && r <= 1.10) }'; }
sk_log "alice (user quota $A_RATE B/s) and bob (default user quota $D_RATE B/s) at the same time"
(cd "$CL" && QUOTA_SASL=alice:alice-secret "$SK_PY" quota_rate.py produce "$B" qs a1 6 > "$SK_TMP/alice.out" 2>&1) &
ap=$!
(cd "$CL" && QUOTA_SASL=bob:bob-secret "$SK_PY" quota_rate.py produce "$B" qs b1 6 > "$SK_TMP/bob.out" 2>&1) &
bp=$!
wait $ap; wait $bp
cat "$SK_TMP/alice.out" "$SK_TMP/bob.out"
ar=$(awk '/^rate /{print $2}' "$SK_TMP/alice.out"); br=$(awk '/^rate /{print $2}' "$SK_TMP/bob.out")
sk_check "alice's rate ${ar:-?} within 10% of $A_RATE" within "${ar:-0}" $A_RATE
sk_check "bob's rate ${br:-?} within 10% of $D_RATE (his own default allowance)" within "${br:-0}" $D_RATE
m=$(curl -s "http://127.0.0.1:$A/metrics" | grep '^skiff_quota_limit')
echo "$m"
sk_check "metrics: alice's series" grep -q "user=\"alice\",client_id=\"\"} $A_RATE" <<< "$m"
sk_check "metrics: bob's series of the default quota" grep -q "user=\"bob\",client_id=\"\"} $D_RATE" <<< "$m"

sk_stop_node 1
sk_summary t_quota_sasl
