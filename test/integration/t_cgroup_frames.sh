#!/usr/bin/env bash
# KIP-848 consumer groups with raw frames against one node
# (clients/cgroup_frames.py): ConsumerGroupHeartbeat v0/v1 and
# ConsumerGroupDescribe v0, three members reconciling to disjoint complete
# assignments, the error cases, a leave, static membership, the range
# assignor, a regex subscription picking up a topic created later,
# OffsetCommit v9 member epochs, ListGroups v5 types; then a restart (SIGTERM)
# and the same groups, epochs and assignments back from __consumer_offsets.
. "$(dirname "$0")/lib.sh"

sk_start_cluster 1 --set group.consumer.heartbeat.interval.ms=1000 --set offsets.topic.num.partitions=3
B=127.0.0.1:${SK_KAFKA_PORT[1]}
SKIFF_BROKERS=$B "$SK_BIN/skiffctl" topic create t6 -p 6 -r 1 >/dev/null || sk_fail "create t6"

PY="$SK_ROOT/test/integration/clients/cgroup_frames.py"
mkfifo "$SK_TMP/in"
"$SK_PY" "$PY" "$B" main "$SK_TMP/state.json" < "$SK_TMP/in" > "$SK_TMP/main.out" 2>&1 &
py=$!
SK_PIDS+=("$py")
exec 7> "$SK_TMP/in"
for _ in $(seq 1 600); do
  grep -q READY-FOR-TOPIC "$SK_TMP/main.out" && break
  kill -0 "$py" 2>/dev/null || break
  sleep 0.1
done
SKIFF_BROKERS=$B "$SK_BIN/skiffctl" topic create rx-new -p 3 -r 1 >/dev/null || sk_fail "create rx-new"
echo go >&7
exec 7>&-
wait "$py"
sk_check_lines < <(grep -v READY-FOR-TOPIC "$SK_TMP/main.out")

# the admin port and skiffctl show the consumer groups (type, epochs, assignments)
A=127.0.0.1:${SK_ADMIN_PORT[1]}
curl -s --max-time 5 "$A/v1/groups/g1" > "$SK_TMP/g1.json"
sk_check "/v1/groups/g1: type consumer, Stable, epochs, 2 members with 3 partitions each" \
  jq -e '.type == "consumer" and .state == "Stable" and .group_epoch == .assignment_epoch and .assignor == "uniform"
         and (.members | length) == 2 and all(.members[]; .member_epoch == $e and .member_state == "stable"
         and ([.assignment[].partitions[]] | length) == 3 and .assignment[0].topic == "t6" and .target_assignment == .assignment)' \
  --argjson e "$(jq .group_epoch "$SK_TMP/g1.json")" "$SK_TMP/g1.json"
sk_check "/v1/groups lists g1 as a consumer group" \
  jq -e '[.groups[] | select(.group_id == "g1" and .type == "consumer" and .members == 2)] | length == 1' \
  <(curl -s --max-time 5 "$A/v1/groups")
SKIFF_BROKERS=$B "$SK_BIN/skiffctl" group list > "$SK_TMP/list.txt" 2>&1
sk_check "skiffctl group list: g1 consumer Stable" grep -Eq '^g1 +consumer +Stable' "$SK_TMP/list.txt"
SKIFF_BROKERS=$B "$SK_BIN/skiffctl" group describe g1 > "$SK_TMP/describe.txt" 2>&1
sk_check "skiffctl group describe g1: consumer, epochs, 2 members with t6 assignments" \
  grep -Eq 'type: consumer +state: Stable +group epoch: [0-9]+ +assignment epoch: [0-9]+ +assignor: uniform +members: 2' "$SK_TMP/describe.txt"
sk_check "skiffctl group describe g1: member rows with t6 partitions" test "$(grep -Ec ' t6:[0-9,]+ +t6:' "$SK_TMP/describe.txt")" = 2
SKIFF_BROKERS=$B "$SK_BIN/skiffctl" group describe g1 --json > "$SK_TMP/describe.json" 2>&1
sk_check "skiffctl --json group describe g1: member epochs" jq -e '.type == "consumer" and (.members | length) == 2 and all(.members[]; .member_epoch > 0)' "$SK_TMP/describe.json"

sk_log "restart"
sk_stop_node 1
sk_start_node 1 --set group.consumer.heartbeat.interval.ms=1000 --set offsets.topic.num.partitions=3
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node 1 not back"
sk_check_lines < <("$SK_PY" "$PY" "$B" after-restart "$SK_TMP/state.json" 2>&1)

# group.version finalized at 0 turns the consumer protocol off (Kafka: UNSUPPORTED_VERSION), 1 on again
WIRE="$(dirname "$0")/clients/cgroup_wire.py"
"$SK_BIN/skiffctl" feature downgrade -b "$B" --feature group.version=0 >/dev/null 2>&1
e0=$("$SK_PY" "$WIRE" join-error "$B" gv-off t6 2>&1)
sk_check "group.version=0: a consumer-protocol join answers UNSUPPORTED_VERSION (35), got $e0" test "$e0" = 35
"$SK_BIN/skiffctl" feature upgrade -b "$B" --feature group.version=1 >/dev/null 2>&1
e1=$("$SK_PY" "$WIRE" join-error "$B" gv-on t6 2>&1)
sk_check "group.version=1 again: the join is served, got $e1" test "$e1" = 0

sk_summary t_cgroup_frames
