#!/usr/bin/env bash
# Issue 8: every admin endpoint of a live 3-node cluster, parsed with jq,
# against what kafka-python reports for the same cluster: brokers and
# controller (Metadata), topics and partitions with leader, replicas, ISR
# (Metadata), log start / end offsets (KafkaConsumer beginning_offsets /
# end_offsets, i.e. ListOffsets to each leader), groups with state, members,
# assignments, committed offsets and lag (ListGroups, DescribeGroups,
# OffsetFetch; lag = end_offsets - committed), /v1/health controller_id,
# /metrics (partitions led, offline, log sizes, messages in) against the
# same Metadata / ListOffsets; skiffctl group describe's lag too.
# kafka-python's view is written as JSON by a member that stays in the group
# while the endpoints are read; both sides are compared with jq.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "t_admin_vs_kafka_python: jq missing"; exit 1; }

# no initial rebalance delay (default 3 s) before kafka-python's member gets
# its assignment: what is compared is the group's state once it has one
sk_start_cluster 3 --set controller.quorum.election.timeout.ms=300 --set broker.heartbeat.interval.ms=500 \
  --set group.initial.rebalance.delay.ms=0
adm() { curl -s --max-time 5 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
waitfor() {  # waitfor SECONDS command... (polls every 0.2 s)
  local t=0
  until "${@:2}" >/dev/null 2>&1; do sleep 0.2; t=$((t + 1)); [ "$t" -lt $(($1 * 5)) ] || return 1; done
}
healthy() { [ "$(adm "$1" /v1/health | jq -r .healthy)" = true ]; }
all_healthy() { healthy 1 && healthy 2 && healthy 3; }
waitfor 30 all_healthy || sk_fail "cluster not healthy within 30 s"

# kafka-python: a 3-partition topic (one replica each, so its leaders differ
# and its high watermarks move without follower fetching) with 30/20/10 records, group gk commits
# 12/5/- and stays a member until $SK_TMP/stop exists; its view -> kp.json.
cat > "$SK_TMP/kp.py" <<'PY'
import json, os, sys, time
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition, OffsetAndMetadata
from kafka.admin import NewTopic
boot, tmp = sys.argv[1], sys.argv[2]
a = KafkaAdminClient(bootstrap_servers=boot, request_timeout_ms=20000)
a.create_topics([NewTopic("kv", 3, 1), NewTopic("kv3", 1, 3)])
deadline = time.time() + 20
while True:   # every replica of every partition known to the client
    ts = a._get_cluster_metadata(topics=["kv", "kv3"]).to_object()["topics"]
    if all(t["error_code"] == 0 and t["partitions"] and all(q["leader"] >= 0 for q in t["partitions"]) for t in ts):
        break
    if time.time() > deadline: sys.exit("topics not ready: %r" % ts)
    time.sleep(0.2)
p = KafkaProducer(bootstrap_servers=boot, acks="all")
futs = []
for part, n in ((0, 30), (1, 20), (2, 10)):
    for i in range(n):
        futs.append(p.send("kv", key=b"k%d" % i, value=b"v%d-%d" % (part, i), partition=part))
for f in futs: f.get(timeout=20)
p.close()
c = KafkaConsumer(bootstrap_servers=boot, group_id="gk", client_id="kp-member", auto_offset_reset="earliest",
                  enable_auto_commit=False, session_timeout_ms=30000, heartbeat_interval_ms=1000)
c.subscribe(["kv"])
deadline = time.time() + 30
while not c.assignment() and time.time() < deadline:
    c.poll(timeout_ms=500)
tps = [TopicPartition("kv", i) for i in range(3)]
c.commit({tps[0]: OffsetAndMetadata(12, None), tps[1]: OffsetAndMetadata(5, None)})
md = a._get_cluster_metadata().to_object()
coord = a._find_coordinator_ids(["gk"])["gk"]
desc = a.describe_consumer_groups(["gk"])[0]
committed = a.list_consumer_group_offsets("gk")
begin, end = c.beginning_offsets(tps), c.end_offsets(tps)
view = {
    "cluster_id": md["cluster_id"], "controller_id": md["controller_id"],
    "brokers": sorted([{"node_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"]}
                       for b in md["brokers"]], key=lambda b: b["node_id"]),
    "topics": sorted([{"name": t["topic"], "internal": t["is_internal"], "partitions": sorted(
        [{"partition": q["partition"], "leader": q["leader"], "replicas": sorted(q["replicas"]),
          "isr": sorted(q["isr"]), "offline": sorted(q["offline_replicas"])} for q in t["partitions"]],
        key=lambda q: q["partition"])} for t in md["topics"]], key=lambda t: t["name"]),
    "begin": {str(tp.partition): o for tp, o in begin.items()},
    "end": {str(tp.partition): o for tp, o in end.items()},
    "groups": sorted([{"group_id": g, "protocol_type": pt} for g, pt in a.list_consumer_groups()],
                     key=lambda g: g["group_id"]),
    "coordinator": coord,
    "group": {"state": desc.state, "protocol_type": desc.protocol_type, "protocol": desc.protocol,
              "members": [{"member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
                           "assignment": sorted([{"topic": t, "partitions": sorted(ps)}
                                                 for t, ps in m.member_assignment.assignment],
                                                key=lambda x: x["topic"])} for m in desc.members]},
    "committed": {str(tp.partition): om.offset for tp, om in committed.items() if tp.topic == "kv"},
}
with open(os.path.join(tmp, "kp.json.tmp"), "w") as f: json.dump(view, f)
os.rename(os.path.join(tmp, "kp.json.tmp"), os.path.join(tmp, "kp.json"))
deadline = time.time() + 90
while not os.path.exists(os.path.join(tmp, "stop")) and time.time() < deadline:
    time.sleep(0.2)
c.close(autocommit=False); a.close()
PY
/usr/bin/python3 "$SK_TMP/kp.py" "$SK_BOOTSTRAP" "$SK_TMP" > "$SK_TMP/kp.out" 2>&1 & KP=$!
SK_PIDS+=("$KP")
kp_ready() { [ -f "$SK_TMP/kp.json" ]; }
waitfor 60 kp_ready || { cat "$SK_TMP/kp.out"; sk_fail "kafka-python view not written"; }
KPJ=$SK_TMP/kp.json
kq() { jq -c "$@" "$KPJ"; }

# /v1/cluster and /v1/brokers and /v1/health: every node, same answers
for i in 1 2 3; do
  c=$(adm "$i" /v1/cluster)
  sk_check "node $i /v1/cluster cluster_id = Metadata's" test "$(jq -r .cluster_id <<<"$c")" = "$(kq -r .cluster_id)"
  sk_check "node $i /v1/cluster controller_id = Metadata's" test "$(jq .controller_id <<<"$c")" = "$(kq .controller_id)"
  sk_check "node $i /v1/cluster brokers = Metadata's" test \
    "$(jq -c '[.brokers[] | {node_id, host, port, rack}] | sort_by(.node_id)' <<<"$c")" = "$(kq .brokers)"
  sk_check "node $i /v1/brokers = Metadata's brokers" test \
    "$(adm "$i" /v1/brokers | jq -c '[.brokers[] | {node_id, host: .listeners[0].host, port: .listeners[0].port, rack}] | sort_by(.node_id)')" = "$(kq .brokers)"
  sk_check "node $i /v1/health controller_id = Metadata's" test "$(adm "$i" /v1/health | jq .controller_id)" = "$(kq .controller_id)"
done

# /v1/topics and /v1/topics/{name}: names, internal flag, partitions with
# leader, replicas, ISR (all nodes); offsets from the partition's leader
sk_check "/v1/topics names and internal flags = Metadata's" test \
  "$(adm 1 /v1/topics | jq -c '[.topics[] | {name, internal}] | sort_by(.name)')" = "$(kq '[.topics[] | {name, internal}]')"
sk_check "/v1/topics partition counts = Metadata's" test \
  "$(adm 2 /v1/topics | jq -c '[.topics[] | {name, partitions}] | sort_by(.name)')" = "$(kq '[.topics[] | {name, partitions: (.partitions | length)}]')"
for tn in kv kv3; do
  want=$(kq --arg t "$tn" '.topics[] | select(.name == $t) | .partitions | map({partition, leader, replicas, isr})')
  for i in 1 2 3; do
    sk_check "node $i /v1/topics/$tn leader, replicas, ISR = Metadata's" test \
      "$(adm "$i" "/v1/topics/$tn" | jq -c '.partitions | map({partition, leader, replicas: (.replicas | sort), isr: (.isr | sort)}) | sort_by(.partition)')" = "$want"
  done
done
sk_check "kv3 has three replicas" test "$(kq '.topics[] | select(.name == "kv3") | .partitions[0].replicas | length')" = 3
want=$(kq '.topics[] | select(.name == "__consumer_offsets") | .partitions | map({partition, leader, replicas, isr})')
sk_check "/v1/topics/__consumer_offsets = Metadata's" test \
  "$(adm 3 /v1/topics/__consumer_offsets | jq -c '.partitions | map({partition, leader, replicas: (.replicas | sort), isr: (.isr | sort)}) | sort_by(.partition)')" = "$want"
for p in 0 1 2; do
  L=$(kq --argjson p "$p" '.topics[] | select(.name == "kv") | .partitions[$p].leader')
  t=$(adm "$L" /v1/topics/kv | jq -c --argjson p "$p" '.partitions[] | select(.partition == $p)')
  sk_check "kv/$p on leader $L: log_start_offset = beginning_offsets" test "$(jq .log_start_offset <<<"$t")" = "$(kq --arg p "$p" '.begin[$p]')"
  sk_check "kv/$p on leader $L: high_watermark = end_offsets" test "$(jq .high_watermark <<<"$t")" = "$(kq --arg p "$p" '.end[$p]')"
  sk_check "kv/$p on leader $L: log_end_offset >= high_watermark" test "$(jq '.log_end_offset >= .high_watermark' <<<"$t")" = true
done
sk_check "end_offsets are what was produced (30/20/10)" test "$(kq '[.end["0"], .end["1"], .end["2"]]')" = '[30,20,10]'

# /metrics against Metadata: every partition is led by exactly one node
mval() { adm "$1" /metrics | awk -v k="$2" 'index($0, k" ") == 1 { v = $2 } END { print v + 0 }'; }
led=$(( $(mval 1 skiff_partitions_leader) + $(mval 2 skiff_partitions_leader) + $(mval 3 skiff_partitions_leader) ))
sk_check "skiff_partitions_leader over the nodes ($led) = partitions in Metadata" \
  test "$led" = "$(kq '[.topics[].partitions | length] | add')"
sk_check "skiff_offline_partitions = 0 = Metadata's partitions without leader" \
  test "$(mval "$(kq .controller_id)" skiff_offline_partitions) $(kq '[.topics[].partitions[] | select(.leader < 0)] | length')" = "0 0"
for p in 0 1 2; do
  L=$(kq --argjson p "$p" '.topics[] | select(.name == "kv") | .partitions[$p].leader')
  sk_check "kv/$p: skiff_log_size_bytes on leader $L = /v1/topics size_bytes" test \
    "$(mval "$L" "skiff_log_size_bytes{topic=\"kv\",partition=\"$p\"}")" = \
    "$(adm "$L" /v1/topics/kv | jq --argjson p "$p" '.partitions[] | select(.partition == $p) | .size_bytes')"
done
sk_check "skiff_messages_in_total{kv} over the nodes = end_offsets sum (60)" test \
  "$(( $(mval 1 'skiff_messages_in_total{topic="kv"}') + $(mval 2 'skiff_messages_in_total{topic="kv"}') + $(mval 3 'skiff_messages_in_total{topic="kv"}') ))" = \
  "$(kq '[.end[]] | add')"

# /v1/groups: the union over the nodes = ListGroups; /v1/groups/{id} on the
# coordinator = DescribeGroups + OffsetFetch, lag = end_offsets - committed
all_groups=$(for i in 1 2 3; do adm "$i" /v1/groups; done | jq -sc '[.[].groups[] | {group_id, protocol_type}] | sort_by(.group_id)')
sk_check "/v1/groups over all nodes = ListGroups ($all_groups)" test "$all_groups" = "$(kq .groups)"
here=$(for i in 1 2 3; do adm "$i" /v1/groups | jq .coordinator_partitions_here; done | jq -s add)
sk_check "coordinator partitions over all nodes = __consumer_offsets partitions ($here)" test \
  "$here" = "$(kq '.topics[] | select(.name == "__consumer_offsets") | .partitions | length')"
C=$(kq .coordinator)
g=$(adm "$C" /v1/groups/gk)
sk_check "/v1/groups/gk on coordinator $C: coordinated here" test "$(jq .coordinated_here <<<"$g")" = true
sk_check "state, protocol type, protocol = DescribeGroups'" test \
  "$(jq -c '[.state, .protocol_type, .protocol]' <<<"$g")" = "$(kq '[.group.state, .group.protocol_type, .group.protocol]')"
sk_check "members with assignments = DescribeGroups'" test \
  "$(jq -c '[.members[] | {member_id, client_id, client_host, assignment: (.assignment | map({topic, partitions: (.partitions | sort)}) | sort_by(.topic))}]' <<<"$g")" = \
  "$(kq '.group.members')"
sk_check "the member is assigned all of kv" test "$(kq '[.group.members[].assignment[].partitions[]] | sort')" = '[0,1,2]'
sk_check "committed offsets = OffsetFetch's (12, 5)" test \
  "$(jq -c '[.offsets[] | select(.topic == "kv") | {key: (.partition | tostring), value: .committed_offset}] | from_entries' <<<"$g")" = "$(kq .committed)"
sk_check "log end per committed partition = end_offsets" test \
  "$(jq -c '[.offsets[] | select(.topic == "kv") | {key: (.partition | tostring), value: .log_end_offset}] | from_entries' <<<"$g")" = \
  "$(kq '.committed | with_entries(.value = $e[.key])' --argjson e "$(kq .end)")"
sk_check "lag = end_offsets - committed (18, 15)" test \
  "$(jq -c '[.offsets[] | select(.topic == "kv") | {key: (.partition | tostring), value: .lag}] | from_entries' <<<"$g")" = \
  "$(kq '.committed | with_entries(.value = $e[.key] - .value)' --argjson e "$(kq .end)")"
sk_check "total_lag = 33" test "$(jq .total_lag <<<"$g")" = 33
for i in 1 2 3; do
  [ "$i" = "$C" ] && continue
  sk_check "/v1/groups/gk on node $i: not coordinated here" test "$(adm "$i" /v1/groups/gk | jq .coordinated_here)" = false
done

# skiffctl group describe: the same lag, from ListOffsets to each leader
SKIFF_BROKERS="$SK_BOOTSTRAP" "$SK_BIN/skiffctl" group describe gk --json > "$SK_TMP/ctl.json" 2> "$SK_TMP/ctl.err"
sk_check "skiffctl group describe gk --json ran" test $? -eq 0
sk_check "skiffctl lag per partition = end_offsets - committed" test \
  "$(jq -c '[.offsets[] | select(.topic == "kv") | {key: (.partition | tostring), value: .lag}] | from_entries' "$SK_TMP/ctl.json")" = \
  "$(kq '.committed | with_entries(.value = $e[.key] - .value)' --argjson e "$(kq .end)")"
sk_check "skiffctl total lag = 33" test "$(jq .total_lag "$SK_TMP/ctl.json")" = 33

touch "$SK_TMP/stop"
wait "$KP"; rc=$?
sk_check "kafka-python member exited cleanly" test "$rc" -eq 0 || cat "$SK_TMP/kp.out"

# a leader of a committed partition that is not the coordinator goes down:
# the coordinator still answers at once or within its 2 s lookup bound,
# with a null end for that partition and the others' ends as before
D=""
for p in 0 1; do
  L=$(kq --argjson p "$p" '.topics[] | select(.name == "kv") | .partitions[$p].leader')
  [ "$L" != "$C" ] && { D=$L; DP=$p; break; }
done
if [ -n "$D" ]; then
  sk_kill9_node "$D"
  t0=$(date +%s%N)
  g=$(curl -s --max-time 10 "127.0.0.1:${SK_ADMIN_PORT[C]}/v1/groups/gk")
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  sk_check "leader $D down: /v1/groups/gk answered in ${ms} ms (< 5000)" test "$ms" -lt 5000
  sk_check "leader $D down: kv/$DP end and lag null" test \
    "$(jq -c --argjson p "$DP" '.offsets[] | select(.topic == "kv" and .partition == $p) | [.log_end_offset, .lag]' <<<"$g")" = '[null,null]'
  OP=$(( 1 - DP ))
  [ "$(kq --argjson p "$OP" '.topics[] | select(.name == "kv") | .partitions[$p].leader')" != "$D" ] &&
  sk_check "leader $D down: kv/$OP end still = end_offsets" test \
    "$(jq --argjson p "$OP" '.offsets[] | select(.topic == "kv" and .partition == $p) | .log_end_offset' <<<"$g")" = \
    "$(kq --arg p "$OP" '.end[$p]')"
fi
for i in 1 2 3; do [ "$i" = "${D:-}" ] || sk_stop_node "$i"; done
sk_summary t_admin_vs_kafka_python
