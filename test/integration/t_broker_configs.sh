#!/usr/bin/env bash
# Configs through real clients (kafka-python admin + producer) and a raw
# DescribeCluster v0 frame: topic overrides at creation, AlterConfigs taking
# effect without restart (max.message.bytes -> MESSAGE_TOO_LARGE), a bad
# value -> INVALID_CONFIG (40) changing nothing, a dynamic broker config
# (DescribeConfigs source 2 = DYNAMIC_BROKER_CONFIG) kept across a restart,
# unknown topic -> UNKNOWN_TOPIC_OR_PARTITION (3); DescribeCluster names the
# cluster, the controller and this broker.
. "$(dirname "$0")/lib.sh"

sk_start_cluster 1
PORT=${SK_KAFKA_PORT[1]}
B=127.0.0.1:$PORT

py() {
PYTHONPATH="$(dirname "$0")/clients" "$SK_PY" - "$B" "$1" <<'PY'
import sys, socket, struct
from kwire import recv_exact  # clients/kwire.py: an answer read to its end
def recv_all(s, n):
    return recv_exact(s, n) or b""
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic, ConfigResource, ConfigResourceType as T
from kafka.errors import KafkaError
b, phase = sys.argv[1], sys.argv[2]
a = KafkaAdminClient(bootstrap_servers=b)
def check(name, cond, info=""):
    print(name, "ok" if cond else "FAIL %r" % (info,))
def describe(kind, name, key):
    r = a.describe_configs([ConfigResource(kind, name, {key: None})])[0].resources[0]
    return r[0], {e[0]: (e[1], e[3]) for e in r[4]}
if phase == "1":
    a.create_topics([NewTopic("cfg", 1, 1, topic_configs={"retention.ms": "3600000"})])
    err, rows = describe(T.TOPIC, "cfg", "retention.ms")
    check("create_override", err == 0 and rows.get("retention.ms") == ("3600000", 1), rows)
    r = a.alter_configs([ConfigResource(T.TOPIC, "cfg", {"max.message.bytes": "300"})]).resources[0]
    check("alter_ok", r[0] == 0, r)
    p = KafkaProducer(bootstrap_servers=b, retries=0)
    try:
        p.send("cfg", value=b"x" * 2000).get(timeout=10); check("too_large_refused", False, "accepted")
    except KafkaError as e:
        check("too_large_refused", type(e).__name__ == "MessageSizeTooLargeError", type(e).__name__)
    check("small_still_ok", p.send("cfg", value=b"y").get(timeout=10).offset == 0)
    r = a.alter_configs([ConfigResource(T.TOPIC, "cfg", {"retention.ms": "abc"})]).resources[0]
    err, rows = describe(T.TOPIC, "cfg", "max.message.bytes")
    check("bad_value_invalid_config", r[0] == 40 and rows.get("max.message.bytes") == ("300", 1), (r, rows))
    r = a.alter_configs([ConfigResource(T.TOPIC, "nope", {"retention.ms": "1"})]).resources[0]
    check("unknown_topic", r[0] == 3, r)
    r = a.alter_configs([ConfigResource(T.BROKER, "1", {"log.retention.ms": "123456"})]).resources[0]
    check("broker_alter", r[0] == 0, r)
    # DescribeCluster v0 (flexible): header v2, body: bool + empty tags
    s = socket.create_connection(tuple(b.split(":")[:1]) + (int(b.split(":")[1]),), timeout=10)
    body = struct.pack(">hhih", 60, 0, 9, 1) + b"t" + b"\x00" + b"\x00" + b"\x00"
    s.sendall(struct.pack(">i", len(body)) + body)
    n = struct.unpack(">i", recv_all(s, 4))[0]
    d = recv_all(s, n)
    pos = 5                                        # corr + header tags
    throttle, err = struct.unpack(">ih", d[pos:pos + 6]); pos += 6
    l = d[pos]; pos += 1 + max(l - 1, 0)           # error message (compact nullable, short)
    l = d[pos] - 1; cid = d[pos + 1:pos + 1 + l]; pos += 1 + l
    ctrl = struct.unpack(">i", d[pos:pos + 4])[0]; pos += 4
    nb = d[pos] - 1; pos += 1
    bid = struct.unpack(">i", d[pos:pos + 4])[0]; pos += 4
    l = d[pos] - 1; pos += 1 + l
    port = struct.unpack(">i", d[pos:pos + 4])[0]
    check("describe_cluster", err == 0 and cid == b"skiff-test-cluster" and ctrl == 1 and nb == 1 and bid == 1 and port == int(b.split(":")[1]), (err, cid, ctrl, nb, bid, port))
else:
    err, rows = describe(T.BROKER, "1", "log.retention.ms")
    check("broker_dynamic_after_restart", rows.get("log.retention.ms") == ("123456", 2), rows)
    err, rows = describe(T.TOPIC, "cfg", "max.message.bytes")
    check("topic_override_after_restart", rows.get("max.message.bytes") == ("300", 1), rows)
PY
}
py 1 > "$SK_TMP/cfg.out" 2>&1
sk_stop_node 1
sk_start_node 1
sk_wait_port "$PORT" 30 || sk_fail "restart"
py 2 >> "$SK_TMP/cfg.out" 2>&1
cat "$SK_TMP/cfg.out"
for what in create_override alter_ok too_large_refused small_still_ok bad_value_invalid_config unknown_topic broker_alter describe_cluster broker_dynamic_after_restart topic_override_after_restart; do
  sk_check "$what" grep -q "^$what ok" "$SK_TMP/cfg.out"
done
sk_stop_node 1
sk_summary t_broker_configs
