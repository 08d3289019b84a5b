#!/usr/bin/env bash
# Metadata's controller_id always names a broker listed in the same answer
# (or -1): clients send CreateTopics & co. to that id, and librdkafka's
# admin client waits ("waiting for controller") while it is not among the
# brokers — which happened right after a 3-node start, while the raft
# leader had not registered as a broker yet. Any listed broker forwards to
# the controller. Polls Metadata on every node from the moment the ports
# open, then creates a topic at once through confluent-kafka's AdminClient.
. "$(dirname "$0")/lib.sh"
NAME=t_metadata_controller_listed

sk_write_cluster_conf 3
for i in 1 2 3; do sk_start_node "$i"; done
for i in 1 2 3; do sk_wait_port "${SK_KAFKA_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i not up"; done

"$SK_PY" - "${SK_KAFKA_PORT[1]}" "${SK_KAFKA_PORT[2]}" "${SK_KAFKA_PORT[3]}" "$SK_BOOTSTRAP" <<'PY' > "$SK_TMP/meta.txt" 2>&1
import sys, time
from kafka.protocol.metadata import MetadataRequest
from kafka.conn import BrokerConnection
import socket
from confluent_kafka.admin import AdminClient, NewTopic
ports = [int(p) for p in sys.argv[1:4]]
bad = seen = 0
deadline = time.time() + 8
conns = {}
while time.time() < deadline:
    for p in ports:
        c = conns.get(p)
        if c is None:
            c = BrokerConnection("127.0.0.1", p, socket.AF_INET, api_version=(2, 8, 0))
            conns[p] = c
        if not c.connected():
            c.connect_blocking(1)
            if not c.connected():
                continue
        f = c.send(MetadataRequest[1]([]))
        while not f.is_done:
            for resp, fut in c.recv():
                fut.success(resp)
            time.sleep(0.005)
        if f.failed():
            conns.pop(p, None)
            continue
        r = f.value
        ids = [b[0] for b in r.brokers]
        seen += 1
        if r.controller_id != -1 and r.controller_id not in ids:
            bad += 1
            print("unlisted controller", p, r.controller_id, ids)
    time.sleep(0.05)
print("answers", seen, "unlisted", bad)
a = AdminClient({"bootstrap.servers": sys.argv[4]})
t0 = time.time()
try:
    a.create_topics([NewTopic("early", 3, 3)], request_timeout=20)["early"].result(25)
    print("created after %.1f s" % (time.time() - t0))
except Exception as e:
    print("create failed:", e)
PY
cat "$SK_TMP/meta.txt" | tail -n 5
sk_check "Metadata answers seen" grep -q '^answers [1-9]' "$SK_TMP/meta.txt"
sk_check "every controller_id is a listed broker or -1" grep -q 'unlisted 0$' "$SK_TMP/meta.txt"
sk_check "a topic created at once through AdminClient" grep -q '^created after' "$SK_TMP/meta.txt"
sk_summary "$NAME"
