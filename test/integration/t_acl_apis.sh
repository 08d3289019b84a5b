#!/usr/bin/env bash
# ACL checks of the APIs that answer their own authorization errors (issue
# 18): UpdateFeatures (ALTER cluster), DescribeClientQuotas /
# AlterClientQuotas (DESCRIBE_CONFIGS / ALTER_CONFIGS cluster),
# ConsumerGroupHeartbeat (READ group, DESCRIBE subscribed topics),
# ConsumerGroupDescribe (DESCRIBE group), DescribeTopicPartitions (DESCRIBE
# topic; unauthorized named topics TOPIC_AUTHORIZATION_FAILED, left out of a
# full listing). One SASL_PLAINTEXT node with the StandardAuthorizer; raw
# frames (clients/acl_apis.py).
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
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-pw" user_bob="bob-pw";
sasl.mechanism.inter.broker.protocol=PLAIN
super.users=User:admin
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
admin.listener=127.0.0.1:$A
log.dirs=$SK_TMP/data/node-1
CONF

sk_start_node 1
sk_wait_port "$P" 30 "${SK_NODE_PID[1]}" || sk_fail "node not up"
out=$(timeout 60 "$SK_PY" "$HERE/clients/acl_apis.py" "$B" 2>&1)
sk_check_lines <<<"$out"
sk_check "acl_apis.py ran to its end" grep -q "^PASS acl_apis.py ran to its end" <<<"$out"
sk_check "node alive at the end" kill -0 "${SK_NODE_PID[1]}"
sk_summary t_acl_apis
