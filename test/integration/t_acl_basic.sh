#!/usr/bin/env bash
# ACLs (issue 18) on one SASL_PLAINTEXT node with
# authorizer.class.name=StandardAuthorizer: kafka-python
# create_acls/describe_acls/delete_acls (incl. refusals for a user without
# rights on the cluster), confluent-kafka producers and group consumers as
# PLAIN users allowed and denied per operation (literal vs prefixed, DENY
# over ALLOW, host, a group readable without its topic and the reverse,
# idempotent and transactional producers), Metadata filtering, no
# auto-creation without CREATE, the super user; ACLs survive a restart
# (metadata log + snapshot).
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
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-pw" user_bob="bob-pw" user_carol="carol-pw" user_dave="dave-pw";
sasl.mechanism.inter.broker.protocol=PLAIN
super.users=User:admin
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
auto.create.topics.enable=true
admin.listener=127.0.0.1:$A
admin.authentication=basic
log.dirs=$SK_TMP/data/node-1
CONF

sk_log "an authorizer class skiff does not implement is refused"
sed 's/^authorizer.class.name=.*/authorizer.class.name=com.example.MyAuthorizer/' "$SK_TMP/cluster.conf" > "$SK_TMP/bad.conf"
"$SK_BIN/skiff" --config "$SK_TMP/bad.conf" > "$SK_TMP/bad.out" 2>&1; rc=$?
sk_check "unknown authorizer class: exit 2" test $rc -eq 2
sk_check "unknown authorizer class: key named" grep -q 'authorizer.class.name' "$SK_TMP/bad.out"

sk_start_node 1
sk_wait_port "$P" 30 "${SK_NODE_PID[1]}" || sk_fail "node not up"

sk_check_lines < <(timeout 120 "$SK_PY" "$HERE/clients/acl_check.py" "$B" main 2>&1)

sk_log "skiffctl acl add|list|remove --command-config"
printf 'security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=admin\nsasl.password=admin-secret\n' > "$SK_TMP/admin.props"
printf 'security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=alice\nsasl.password=alice-pw\n' > "$SK_TMP/alice.props"
ctl() { local c=$1 s=$2; shift 2; timeout 20 "$SK_BIN/skiffctl" "$c" "$s" --brokers "$B" "$@"; }
out=$(ctl acl add --command-config "$SK_TMP/admin.props" --principal User:erin --producer --topic erin- --prefixed 2>&1)
sk_check "skiffctl acl add --producer: 4 bindings ($out)" grep -q "created 4 ACL bindings" <<<"$out"
out=$(ctl acl add --command-config "$SK_TMP/admin.props" --principal User:erin --consumer --topic erin- --prefixed --group erin-g 2>&1)
sk_check "skiffctl acl add --consumer: 3 bindings ($out)" grep -q "created 3 ACL bindings" <<<"$out"
out=$(ctl acl add --command-config "$SK_TMP/admin.props" --principal User:erin --operation ALTER --cluster --deny --host 127.0.0.1 2>&1)
sk_check "skiffctl acl add --deny --host --cluster ($out)" grep -q "created 1 ACL binding" <<<"$out"
ctl acl list --command-config "$SK_TMP/admin.props" --principal User:erin > "$SK_TMP/list.out" 2>&1
sk_check "skiffctl acl list --principal: 7 rows for erin, the DESCRIBE of --consumer already there ($(grep -c erin "$SK_TMP/list.out"))" test "$(grep -c 'User:erin' "$SK_TMP/list.out")" -eq 7
sk_check "list shows the PREFIXED WRITE" grep -Eq 'TOPIC +erin- +PREFIXED +User:erin +\* +WRITE +ALLOW' "$SK_TMP/list.out"
sk_check "list shows the DENY on the cluster for the host" grep -Eq 'CLUSTER +kafka-cluster +LITERAL +User:erin +127.0.0.1 +ALTER +DENY' "$SK_TMP/list.out"
ctl acl list --command-config "$SK_TMP/alice.props" > "$SK_TMP/alice.out" 2>&1; rc=$?
sk_check "skiffctl acl list as alice: exit 1, CLUSTER_AUTHORIZATION_FAILED" bash -c "test $rc -eq 1 && grep -q CLUSTER_AUTHORIZATION_FAILED '$SK_TMP/alice.out'"
out=$(ctl acl remove --command-config "$SK_TMP/admin.props" --principal User:erin --topic erin- --prefixed 2>&1)
sk_check "skiffctl acl remove --topic --prefixed (every operation): 4 ($out)" grep -q "removed 4 ACL bindings" <<<"$out"
out=$(ctl acl remove --command-config "$SK_TMP/admin.props" --principal User:erin --group erin-g --prefixed 2>&1)
sk_check "skiffctl acl remove --group --prefixed: 1 ($out)" grep -q "removed 1 ACL binding" <<<"$out"
out=$(ctl acl remove --command-config "$SK_TMP/admin.props" --principal User:erin --cluster 2>&1)
sk_check "skiffctl acl remove --cluster: 2 ($out)" grep -q "removed 2 ACL bindings" <<<"$out"

sk_log "admin port: GET needs DESCRIBE on the cluster, POST ALTER (super users pass)"
code() { curl -s -o "$SK_TMP/body" -w '%{http_code}' --max-time 10 "$@"; }
sk_check "admin GET /v1/cluster as the super user: 200" test "$(code -u admin:admin-secret "http://127.0.0.1:$A/v1/cluster")" = 200
sk_check "admin GET /v1/cluster as alice (no ACL): 403" test "$(code -u alice:alice-pw "http://127.0.0.1:$A/v1/cluster")" = 403
sk_check "the 403 says what is missing" grep -q "DESCRIBE on the cluster" "$SK_TMP/body"
st=$(code -u alice:alice-pw -X POST -H 'Content-Type: application/json' -d '{"name":"via-admin","partitions":1}' "http://127.0.0.1:$A/v1/topics")
sk_check "admin POST /v1/topics as alice (no ALTER): 403 ($st)" test "$st" = 403
out=$(ctl acl add --command-config "$SK_TMP/admin.props" --principal User:alice --operation ALTER --cluster 2>&1)
sk_check "grant alice ALTER on the cluster ($out)" grep -q "created 1 ACL binding" <<<"$out"
sleep 0.5
sk_check "admin GET /v1/cluster as alice with ALTER (implies DESCRIBE): 200" test "$(code -u alice:alice-pw "http://127.0.0.1:$A/v1/cluster")" = 200
st=$(code -u alice:alice-pw -X POST -H 'Content-Type: application/json' -d '{"name":"via-admin","partitions":1}' "http://127.0.0.1:$A/v1/topics")
sk_check "admin POST /v1/topics as alice with ALTER: not 403 ($st)" test "$st" != 403
out=$(ctl acl remove --command-config "$SK_TMP/admin.props" --principal User:alice --operation ALTER --cluster 2>&1)
sk_check "revoke alice ALTER on the cluster ($out)" grep -q "removed 1 ACL binding" <<<"$out"

sk_log "restart: the ACLs are in the metadata log"
sk_stop_node 1
sk_start_node 1
sk_wait_port "$P" 30 "${SK_NODE_PID[1]}" || sk_fail "node not up after restart"
sk_check_lines < <(timeout 60 "$SK_PY" "$HERE/clients/acl_check.py" "$B" after_restart 2>&1)
sk_check "node alive at the end" kill -0 "${SK_NODE_PID[1]}"
sk_summary t_acl_basic
