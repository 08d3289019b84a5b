#!/usr/bin/env bash
# Issue 8 admin endpoints on one live node, parsed with jq: /metrics values
# move after a kcat produce/consume; /v1/health, /readyz, /v1/brokers;
# POST /v1/quorum/resign without a raft quorum is a 400 JSON error.
. "$(dirname "$0")/lib.sh"

command -v kcat >/dev/null || { echo "t_admin_endpoints: kcat missing"; exit 1; }
sk_start_cluster 1
B=127.0.0.1:${SK_KAFKA_PORT[1]}
ADM=127.0.0.1:${SK_ADMIN_PORT[1]}

# metric value of an exact series line prefix, 0 when absent
mval() { curl -s "$ADM/metrics" | awk -v k="$1" 'index($0, k" ") == 1 { v = $2 } END { print v + 0 }'; }

ctype=$(curl -s -o "$SK_TMP/m0.txt" -w '%{content_type}' "$ADM/metrics")
sk_check "/metrics is Prometheus text" test "$ctype" = "text/plain; version=0.0.4; charset=utf-8"
sk_check "/metrics declares requests_total" grep -q '^# TYPE skiff_requests_total counter' "$SK_TMP/m0.txt"
p0=$(mval 'skiff_requests_total{api="Produce"}')
f0=$(mval 'skiff_requests_total{api="Fetch"}')

for ((i = 0; i < 200; i++)); do printf 'k%d:v%d\n' "$i" "$i"; done > "$SK_TMP/in.txt"
kcat -b "$B" -P -t mx -K: -l "$SK_TMP/in.txt" 2> "$SK_TMP/produce.err"
sk_check "produce 200 messages" test $? -eq 0
kcat -b "$B" -C -t mx -o beginning -e -q -f '%k:%s\n' > "$SK_TMP/out.txt" 2>/dev/null
sk_check "consume them back" cmp "$SK_TMP/in.txt" "$SK_TMP/out.txt"

p1=$(mval 'skiff_requests_total{api="Produce"}')
f1=$(mval 'skiff_requests_total{api="Fetch"}')
sk_check "Produce requests counted ($p0 -> $p1)" test "$p1" -gt "$p0"
sk_check "Fetch requests counted ($f0 -> $f1)" test "$f1" -gt "$f0"
sk_check "Produce latency histogram count == requests" \
  test "$(mval 'skiff_request_latency_seconds_count{api="Produce"}')" = "$p1"
sk_check "messages in for mx = 200" test "$(mval 'skiff_messages_in_total{topic="mx"}')" = 200
bin=$(mval 'skiff_bytes_in_total{topic="mx"}')
size=$(curl -s "$ADM/v1/topics/mx" | jq '.partitions[0].size_bytes')
sk_check "bytes in for mx ($bin) = log size ($size)" test "$bin" = "$size"
sk_check "bytes out for mx >= bytes in" test "$(mval 'skiff_bytes_out_total{topic="mx"}')" -ge "$bin"
sk_check "log size per partition = /v1/topics size" \
  test "$(mval 'skiff_log_size_bytes{topic="mx",partition="0"}')" = "$size"
sk_check "connections accepted counted" test "$(mval 'skiff_connections_accepted_total{listener="kafka"}')" -ge 2
# a long-poll fetch at the end of mx waits in the purgatory
kcat -b "$B" -C -t mx -o end -q -X fetch.wait.max.ms=5000 >/dev/null 2>&1 & kpid=$!
waiting() { [ "$(mval 'skiff_purgatory_operations{purgatory="fetch"}')" -ge 1 ]; }
t=0; until waiting || [ $t -ge 150 ]; do sleep 0.2; t=$((t + 1)); done
sk_check "a waiting fetch shows in skiff_purgatory_operations" waiting
kill "$kpid" 2>/dev/null; wait "$kpid" 2>/dev/null
sk_check "partitions led > 0" test "$(mval 'skiff_partitions_leader')" -gt 0
sk_check "raft leader id = node 1" test "$(mval 'skiff_raft_leader_id')" = 1

# /v1/health
h=$(curl -s "$ADM/v1/health")
sk_check "/v1/health healthy" test "$(jq -c '[.healthy, .unhealthy_reasons, .controller_id, .nodes_down, .leaderless_partitions, .under_replicated_partitions]' <<<"$h")" = '[true,[],1,[],0,0]'
# /readyz
sk_check "/readyz 200" test "$(curl -s -o "$SK_TMP/r.json" -w '%{http_code}' "$ADM/readyz")" = 200
sk_check "/readyz ready" test "$(jq -r .status "$SK_TMP/r.json")" = ready
# /v1/brokers
sk_check "/v1/brokers" test "$(curl -s "$ADM/v1/brokers" | jq -c '.brokers[0] | [.node_id, .listeners[0].port, .fenced, .in_controlled_shutdown]')" = "[1,${SK_KAFKA_PORT[1]},false,false]"
# resign with a quorum of one: 400 with a JSON error
code=$(curl -s -X POST -o "$SK_TMP/res.json" -w '%{http_code}' "$ADM/v1/quorum/resign")
sk_check "resign without quorum -> 400" test "$code" = 400
sk_check "resign error is JSON" test "$(jq -r '.error | length > 0' "$SK_TMP/res.json")" = true
sk_check "GET /v1/quorum/resign -> 400" test "$(curl -s -o /dev/null -w '%{http_code}' "$ADM/v1/quorum/resign")" = 400
sk_check "unknown path -> 404 JSON" test "$(curl -s "$ADM/v1/nope" | jq -r 'has("error")')" = true

# groups: a kafka-python member consumes 50 of the 200 records of mx and
# commits; while it is still in the group, describe it through the admin port
cat > "$SK_TMP/grp.py" <<PY
import json, subprocess, sys
from kafka import KafkaConsumer, TopicPartition, OffsetAndMetadata
c = KafkaConsumer(bootstrap_servers="$B", group_id="g-admin", auto_offset_reset="earliest",
                  enable_auto_commit=False, max_poll_records=50, consumer_timeout_ms=20000)
c.subscribe(["mx"])
got = []
while len(got) < 50:
    for tp, recs in c.poll(timeout_ms=1000, max_records=50 - len(got)).items():
        got.extend(recs)
tp = TopicPartition("mx", 0)
c.commit({tp: OffsetAndMetadata(got[-1].offset + 1, None)})
out = subprocess.run(["curl", "-s", "$ADM/v1/groups/g-admin"], capture_output=True, text=True).stdout
c.close()
print(out)
PY
/usr/bin/python3 "$SK_TMP/grp.py" > "$SK_TMP/grp.json" 2> "$SK_TMP/grp.err"
sk_check "kafka-python group consumer ran" test $? -eq 0
sk_check "group described while live: state, protocol, coordinated here" \
  test "$(jq -c '[.group_id, .state, .protocol_type, .coordinated_here]' "$SK_TMP/grp.json")" = '["g-admin","Stable","consumer",true]'
sk_check "one member with assignment mx:[0]" \
  test "$(jq -c '[(.members | length), .members[0].assignment]' "$SK_TMP/grp.json")" = '[1,[{"topic":"mx","partitions":[0]}]]'
sk_check "committed 50, LEO 200, lag 150" \
  test "$(jq -c '.offsets[0] | [.topic, .partition, .committed_offset, .log_end_offset, .lag]' "$SK_TMP/grp.json")" = '["mx",0,50,200,150]'
g=$(curl -s "$ADM/v1/groups/g-admin")
sk_check "after the member left: Empty, no members, lag kept" \
  test "$(jq -c '[.state, (.members | length), .total_lag]' <<<"$g")" = '["Empty",0,150]'
sk_check "/v1/groups lists g-admin, complete on one node" \
  test "$(curl -s "$ADM/v1/groups" | jq -c '[(.groups[] | select(.group_id=="g-admin") | .state), .complete]')" = '["Empty",true]'
# request errors by API and error code: DeleteGroups of an unknown group
# answers GROUP_ID_NOT_FOUND for it (a per-group code in the response)
e0=$(mval 'skiff_request_errors_total{api="DeleteGroups",error="GROUP_ID_NOT_FOUND"}')
/usr/bin/python3 -c "
from kafka import KafkaAdminClient
a = KafkaAdminClient(bootstrap_servers='$B')
print(a.delete_consumer_groups(['no-such-group']))
a.close()" > "$SK_TMP/dg.out" 2>&1
sk_check "DeleteGroups of an unknown group answered" grep -q GroupIdNotFound "$SK_TMP/dg.out"
sk_check "request errors counted by API and error ($e0 -> +1)" \
  test "$(mval 'skiff_request_errors_total{api="DeleteGroups",error="GROUP_ID_NOT_FOUND"}')" = $((e0 + 1))
sk_check "no error counted where none was answered" \
  test "$(curl -s "$ADM/metrics" | grep -c '^skiff_request_errors_total{api="Produce"')" = 0
# a JoinGroup of a fresh group is held for group.initial.rebalance.delay.ms
# (3 s): it shows in the group_join purgatory meanwhile
/usr/bin/python3 -c "
from kafka import KafkaConsumer
c = KafkaConsumer('mx', bootstrap_servers='$B', group_id='g-purgatory', consumer_timeout_ms=6000)
for _ in c: pass
c.close()" > /dev/null 2>&1 & jpid=$!
held() { [ "$(mval 'skiff_purgatory_operations{purgatory="group_join"}')" -ge 1 ]; }
t=0; until held || [ $t -ge 75 ]; do sleep 0.2; t=$((t + 1)); done
sk_check "a held JoinGroup shows in skiff_purgatory_operations{purgatory=group_join}" held
kill "$jpid" 2>/dev/null; wait "$jpid" 2>/dev/null
sk_check "/v1/groups/nope -> 404" test "$(curl -s -o /dev/null -w '%{http_code}' "$ADM/v1/groups/nope")" = 404

# preferred leader election: on one node the preferred replica already leads
sk_check "elect mx/0 -> 200, leader 1" \
  test "$(curl -s -X POST "$ADM/v1/partitions/mx/0/elect" | jq -c '[.topic, .partition, .leader]')" = '["mx",0,1]'
sk_check "elect mx/9 -> 404" test "$(curl -s -X POST -o /dev/null -w '%{http_code}' "$ADM/v1/partitions/mx/9/elect")" = 404
sk_check "elect mx/x -> 400" test "$(curl -s -X POST -o /dev/null -w '%{http_code}' "$ADM/v1/partitions/mx/x/elect")" = 400
sk_check "elect mx/-1 -> 400" test "$(curl -s -X POST -o /dev/null -w '%{http_code}' "$ADM/v1/partitions/mx/-1/elect")" = 400

sk_stop_node 1
sk_summary t_admin_endpoints
