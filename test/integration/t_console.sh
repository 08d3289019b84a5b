#!/usr/bin/env bash
# Issue 21: the web console in headless Chromium against a 3-node cluster.
# Pages: cluster (brokers, controller, quorum), topics, a topic's ISR,
# messages (text/hex/JSON, from an offset and a timestamp) compared with
# kcat, a group's lag compared with /v1/groups, transactions, charts; actions
# through the confirmation dialog (add partitions, create topic, the Kafka
# error shown; create, config, delete on a non-controller, forwarded; a
# group's offset reset) checked with kcat / confluent_kafka / the JSON API;
# then node 3 stopped: fenced broker, health reasons, under-replicated and
# offline topics, replicas out of the ISR marked; no JavaScript errors. Screenshots: $SKIFF_TEST_DIR/console-shots/ (build/test/...).
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
for p in chromium kcat jq; do command -v $p >/dev/null || { echo "t_console: $p missing (etc/install-deps.sh)"; exit 1; }; done
$PY -c 'import websocket, confluent_kafka' || { echo "t_console: python3-websocket / confluent_kafka missing"; exit 1; }

# fast fencing and ISR shrink, so the degraded views show within seconds
OPTS=(--set controller.quorum.fetch.timeout.ms=500 --set controller.quorum.election.timeout.ms=200
      --set broker.heartbeat.interval.ms=500 --set broker.session.timeout.ms=3000 --set replica.lag.time.max.ms=2000)
sk_start_cluster 3 "${OPTS[@]}"
adm() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
healthy() { [ "$(adm 1 /v1/health | jq -r .healthy)" = true ] && [ "$(adm 1 /v1/brokers | jq '[.brokers[] | select(.fenced == false)] | length')" = 3 ]; }
t=0; until healthy; do sleep 0.2; t=$((t + 1)); [ $t -lt 150 ] || sk_fail "cluster not healthy in 30 s"; done
B1="127.0.0.1:${SK_KAFKA_PORT[1]}"
SKIFF_BROKERS=$B1 "$SK_BIN/skiffctl" topic create orders -p 3 -r 3 >/dev/null || sk_fail "create orders"
isr3() { [ "$(adm 1 /v1/topics/orders | jq '[.partitions[] | select((.isr | length) == 3)] | length')" = 3 ]; }
t=0; until isr3; do sleep 0.2; t=$((t + 1)); [ $t -lt 50 ] || sk_fail "orders without full ISR"; done
for i in $(seq 1 20); do echo "{\"n\":$i,\"item\":\"widget-$i\"}"; done |
  kcat -b "$B1" -P -t orders -p 0 -k "key-0" -H h1=v1 -z zstd || sk_fail "produce"
# an empty group with committed offsets (lag 20 - 5 on orders-0) and an open transaction
$PY - "$B1" > "$SK_TMP/setup.out" 2>&1 <<'PY' || { cat "$SK_TMP/setup.out"; sk_fail "group/txn setup"; }
import sys
from confluent_kafka import Consumer, Producer, TopicPartition
b = sys.argv[1]
c = Consumer({"bootstrap.servers": b, "group.id": "g1", "enable.auto.commit": False})
c.commit(offsets=[TopicPartition("orders", 0, 5)], asynchronous=False)
c.close()
p = Producer({"bootstrap.servers": b, "transactional.id": "tx1", "transaction.timeout.ms": 60000})
p.init_transactions(20)
p.begin_transaction()
p.produce("orders", b"in-txn", partition=1)
p.flush(10)
print("ok")
PY
SHOTS=$SKIFF_TEST_DIR/console-shots
rm -rf "$SHOTS"
$PY "$(dirname "$0")/clients/console_check.py" --admin "${SK_ADMIN_PORT[1]},${SK_ADMIN_PORT[2]},${SK_ADMIN_PORT[3]}" \
  --bootstrap "$B1" --shots "$SHOTS" --topic orders --group g1 --txn tx1 > "$SK_TMP/check.out" 2>&1
rc=$?
sk_check_lines < "$SK_TMP/check.out"
sk_check "console_check.py ran to the end (exit $rc)" test "$rc" = 0
# the routes' refusals, by curl
code() { curl -s --max-time 5 -o "$SK_TMP/code.out" -w '%{http_code}' "${@:2}" "127.0.0.1:${SK_ADMIN_PORT[1]}$1"; }
sk_check "records: offset and timestamp together -> 400" test "$(code '/v1/partitions/orders/0/records?offset=0&timestamp=5')" = 400
sk_check "records: count 501 -> 400" test "$(code '/v1/partitions/orders/0/records?offset=0&count=501')" = 400
sk_check "records: unknown partition -> 404" test "$(code '/v1/partitions/orders/99/records?offset=0')" = 404
sk_check "records: 3 from offset 18 of 20 -> 2 ($(cat "$SK_TMP/code.out" | head -c 80))" \
  test "$(code '/v1/partitions/orders/0/records?offset=18&count=3')" = 200 -a "$(jq '.records | length' "$SK_TMP/code.out")" = 2
sk_check "create from another origin -> 403" test "$(code '/v1/topics?name=csrf' -X POST -H 'Origin: http://evil.example')" = 403
sk_check "reset a group with a bad 'to' -> 400" test "$(code '/v1/groups/g1/offsets/reset?topic=orders&to=soon' -X POST)" = 400
# resets by curl on the group's coordinator: targets are the leaders' (asked by ListOffsets when led elsewhere)
for i in 1 2 3; do [ "$(adm "$i" /v1/groups/g1 | jq -r .coordinated_here)" = true ] && G=$i; done
reset() { curl -s --max-time 10 -X POST "127.0.0.1:${SK_ADMIN_PORT[G]}/v1/groups/g1/offsets/reset?topic=orders&$1" > "$SK_TMP/reset.out"; }
lag0() { adm "$G" /v1/groups/g1 | jq '.offsets[] | select(.topic == "orders" and .partition == 0) | .lag'; }
reset "to=latest"
sk_check "reset to latest: orders-0 lag 0 ($(cat "$SK_TMP/reset.out"))" test "$(lag0)" = 0
reset "to=offset&offset=7"
sk_check "reset to offset 7: orders-0 lag 13" test "$(lag0)" = 13
reset "to=offset&offset=999"
sk_check "reset to offset 999: clamped to the end, lag 0" test "$(lag0)" = 0
reset "to=timestamp&timestamp=0"
sk_check "reset to timestamp 0: the first record, lag 20 ($(cat "$SK_TMP/reset.out"))" test "$(lag0)" = 20
sk_check "console asset 304 on its ETag" test "$(code /ui/core.js -H "If-None-Match: $(curl -s -D - -o /dev/null "127.0.0.1:${SK_ADMIN_PORT[1]}/ui/core.js" | tr -d '\r' | awk -F': ' 'tolower($1) == "etag" { print $2 }')")" = 304
# degraded: node 3 stopped; a topic of RF 1 over 3 partitions has one offline
SKIFF_BROKERS=$B1 "$SK_BIN/skiffctl" topic create solo -p 3 -r 1 >/dev/null || sk_fail "create solo"
sk_stop_node 3
degraded() { adm 1 /v1/health | jq -e '(.nodes_down | index(3)) != null and .under_replicated_partitions >= 1 and .leaderless_partitions >= 1' >/dev/null; }
t=0; until degraded; do sleep 0.2; t=$((t + 1)); [ $t -lt 100 ] || break; done
sk_check "node 3 stopped: node 1 reports it down, under-replicated and leaderless partitions" degraded
$PY "$(dirname "$0")/clients/console_check.py" --admin "${SK_ADMIN_PORT[1]},${SK_ADMIN_PORT[2]},${SK_ADMIN_PORT[3]}" \
  --bootstrap "$B1" --shots "$SHOTS" --topic orders --group g1 --txn tx1 --down 3 > "$SK_TMP/check2.out" 2>&1
rc=$?
sk_check_lines < "$SK_TMP/check2.out"
sk_check "console_check.py --down ran to the end (exit $rc)" test "$rc" = 0
sk_check "screenshots kept in $SHOTS" test "$(ls "$SHOTS"/*.png 2>/dev/null | wc -l)" -ge 8
sk_summary t_console
