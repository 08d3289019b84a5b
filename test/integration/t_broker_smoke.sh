#!/usr/bin/env bash
# Smoke test of one skiff node with real clients (kcat, curl):
# metadata, 1000 keyed messages produced and consumed back byte-exact,
# admin endpoints, SIGTERM -> exit 0, restart -> data still there,
# a config error -> exit 2 naming file:line and the key.
. "$(dirname "$0")/lib.sh"

command -v kcat >/dev/null || { echo "t_broker_smoke: kcat missing"; exit 1; }
sk_start_cluster 1
B=127.0.0.1:${SK_KAFKA_PORT[1]}
ADM=127.0.0.1:${SK_ADMIN_PORT[1]}

kcat -b "$B" -L -m 5 > "$SK_TMP/meta.txt" 2>&1
sk_check "kcat -L lists broker 1" grep -q "broker 1 at 127.0.0.1:${SK_KAFKA_PORT[1]}" "$SK_TMP/meta.txt"

for ((i = 0; i < 1000; i++)); do printf 'key-%d:value-%d-%s\n' "$i" "$i" "$RANDOM$RANDOM"; done > "$SK_TMP/in.txt"
kcat -b "$B" -P -t smoke -K: -l "$SK_TMP/in.txt" 2> "$SK_TMP/produce.err"
sk_check "produce 1000 messages" test $? -eq 0
consume() {
  kcat -b "$B" -C -t smoke -o beginning -e -q -f '%k:%s\n' > "$1" 2> "$SK_TMP/consume.err"
}
consume "$SK_TMP/out1.txt"
sk_check "consume returns the 1000 messages byte-exact" cmp "$SK_TMP/in.txt" "$SK_TMP/out1.txt"

# from an offset: the last 10
kcat -b "$B" -C -t smoke -o 990 -e -q -f '%k:%s\n' > "$SK_TMP/tail.txt" 2>/dev/null
sk_check "consume from offset 990" cmp <(tail -n 10 "$SK_TMP/in.txt") "$SK_TMP/tail.txt"

sk_check "healthz" test "$(curl -s "$ADM/healthz" | jq -r .status)" = ok
sk_check "/v1/cluster node and broker" test "$(curl -s "$ADM/v1/cluster" | jq -c '[.node_id, .controller_id, .brokers[0].node_id, .brokers[0].port, .brokers[0].fenced]')" = "[1,1,1,${SK_KAFKA_PORT[1]},false]"
sk_check "/v1/topics lists smoke" test "$(curl -s "$ADM/v1/topics" | jq -r '.topics[] | select(.name=="smoke") | .partitions')" = 1
sk_check "/v1/topics/smoke offsets" test "$(curl -s "$ADM/v1/topics/smoke" | jq -c '.partitions[0] | [.leader, .high_watermark, .log_end_offset, .log_start_offset]')" = "[1,1000,1000,0]"
sk_check "/v1/topics/nope is 404" test "$(curl -s -o /dev/null -w '%{http_code}' "$ADM/v1/topics/nope")" = 404

# graceful stop: exit status 0
pid=${SK_NODE_PID[1]}
kill -TERM "$pid"
wait "$pid"
sk_check "SIGTERM -> exit 0" test $? -eq 0
sk_check "clean-shutdown marker written" test -e "$SK_TMP/data/node-1/.skiff_cleanshutdown"

# a deleted partition whose removal a crash interrupted goes at the next start
mkdir -p "$SK_TMP/data/node-1/old-0.17-delete" && touch "$SK_TMP/data/node-1/old-0.17-delete/00000000000000000000.log"
sk_start_node 1
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 || sk_fail "restarted node not up"
consume "$SK_TMP/out2.txt"
sk_check "leftover deleted partition removed at start" test ! -e "$SK_TMP/data/node-1/old-0.17-delete"
sk_check "data survives restart" cmp "$SK_TMP/in.txt" "$SK_TMP/out2.txt"
kcat -b "$B" -P -t smoke -K: -l <(echo "after:restart") 2>/dev/null
sk_check "offsets continue after restart" test "$(kcat -b "$B" -C -t smoke -o -1 -e -q -f '%o %k:%s\n' 2>/dev/null)" = "1000 after:restart"
sk_stop_node 1

# config errors: exit 2 and file:line naming the key
printf 'node.id=1\nprocess.roles=broker,controller\nlog.retention.msx=5\n' > "$SK_TMP/bad.conf"
"$SK_BIN/skiff" --config "$SK_TMP/bad.conf" > "$SK_TMP/bad.out" 2>&1
sk_check "config error exits 2" test $? -eq 2
sk_check "config error names file:line and key" grep -q "bad.conf:3: .*log.retention.msx" "$SK_TMP/bad.out"

sk_summary t_broker_smoke
