#!/usr/bin/env bash
# KIP-848 consumer group failover on 3 nodes: three @platformatic/kafka
# members (groupProtocol 'consumer', clients/cgroup_member.mjs) share six
# partitions of an RF-3 topic; the group coordinator's node is kill -9'd;
# the new coordinator restores the group from __consumer_offsets (RF 3):
# same group epoch, same members and epochs (no rebalance), the members keep
# their partitions and consume what is produced afterwards. The session is
# Kafka's default (45 s): a new coordinator exists only once the controller
# fenced the dead broker (broker.session.timeout.ms, 9 s) and the members
# found it, and a shorter session made one member expire and rejoin.
# Until the dead node is fenced a member's fetches from it fail (connection
# refused, retried every 200 ms); once it is gone from Metadata the client
# ends its stream ("fetch failed 44 times": as its code reads, a Fetch for
# partitions that now have two leaders goes to the dead node, "Cannot find
# broker with node id N", which it does not retry).
# cgroup_member.mjs then starts a new stream and keeps its subscription;
# before it did, the client re-subscribed and the group epoch moved (3 -> 7,
# the flake of issue 19). How often that happened is logged below.
. "$(dirname "$0")/lib.sh"
NAME=t_cgroup_failover
JS=$SK_ROOT/test/js
[ -d "$JS/node_modules/@platformatic/kafka" ] || (cd "$JS" && npm ci --silent >/dev/null 2>&1) ||
  sk_fail "@platformatic/kafka missing (cd test/js && npm ci)"
export SKIFF_JS_DIR=$JS
sk_start_cluster 3 --set group.consumer.heartbeat.interval.ms=500 \
  --set offsets.topic.num.partitions=3 --set offsets.topic.replication.factor=3
W="$SK_PY $SK_ROOT/test/integration/clients/cgroup_wire.py"
adm() { curl -s --max-time 3 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
healthy() { [ "$(adm "$1" /v1/health | jq -r .healthy)" = true ]; }
for _ in $(seq 1 150); do healthy 1 && healthy 2 && healthy 3 && break; sleep 0.2; done
SKIFF_BROKERS=$SK_BOOTSTRAP "$SK_BIN/skiffctl" topic create t6 -p 6 -r 3 > "$SK_TMP/create.out" 2>&1 ||
  grep -q TOPIC_ALREADY_EXISTS "$SK_TMP/create.out" || sk_fail "create t6: $(cat "$SK_TMP/create.out")"
isr_full() { [ "$(adm 1 /v1/topics/t6 | jq '[.partitions[] | select((.isr | length) == 3)] | length')" = 6 ]; }
for _ in $(seq 1 100); do isr_full && break; sleep 0.2; done
seq 1 30 | sed 's/^/k&:v/' | SKIFF_BROKERS=$SK_BOOTSTRAP "$SK_BIN/skiffctl" produce t6 -K : >/dev/null || sk_fail "produce"

declare -A MPID
for m in a b c; do
  node --import "$JS/with-resolvers.mjs" "$SK_ROOT/test/integration/clients/cgroup_member.mjs" "$SK_BOOTSTRAP" gf t6 - \
    > "$SK_TMP/$m.out" 2> "$SK_TMP/$m.err" &
  MPID[$m]=$!; SK_PIDS+=("$!")
done
assigned() { grep '"ev":"assign"' "$SK_TMP/$1.out" 2>/dev/null | tail -1 | sed 's/.*"parts":\[\(.*\)\].*/\1/; s/"//g'; }
split_ok() {
  local all="" m
  for m in a b c; do a=$(assigned $m); [ -n "$a" ] || return 1; all+="${all:+,}$a"; done
  [ "$(echo "$all" | tr ',' '\n' | sort | tr '\n' ' ')" = "t6/0 t6/1 t6/2 t6/3 t6/4 t6/5 " ]
}
balanced() { split_ok && [ "$(for m in a b c; do assigned $m | tr ',' '\n' | grep -c .; done | tr '\n' ' ')" = "2 2 2 " ]; }
for _ in $(seq 1 300); do balanced && break; sleep 0.1; done
sleep 1   # one more heartbeat round: every member reported what it owns
sk_check "3 members: disjoint, complete, 2 each before the kill" balanced
before="$(assigned a) $(assigned b) $(assigned c)"
n1=1
coord=""
for _ in $(seq 1 50); do coord=$($W coordinator "127.0.0.1:${SK_KAFKA_PORT[1]}" gf 2>/dev/null) && [ "${coord:--1}" -ge 1 ] && break; sleep 0.1; done
d0=$($W describe "127.0.0.1:${SK_KAFKA_PORT[$coord]}" gf)
sk_log "coordinator: node $coord; group $d0"
sk_kill9_node "$coord"
alive=1; [ "$coord" = 1 ] && alive=2
d1=""; new=""
for _ in $(seq 1 200); do
  new=$($W coordinator "127.0.0.1:${SK_KAFKA_PORT[$alive]}" gf 2>/dev/null)
  if [ -n "$new" ] && [ "$new" != "$coord" ] && [ "$new" -ge 1 ]; then
    d1=$($W describe "127.0.0.1:${SK_KAFKA_PORT[$new]}" gf 2>/dev/null) && echo "$d1" | grep -q '"error": 0' && break
  fi
  sleep 0.1
done
sk_log "new coordinator: node $new; group $d1"
sk_check "a new coordinator (node $new) restored the group exactly (epochs, members)" test "$d1" = "$d0"
seq 31 60 | sed 's/^/k&:v/' | SKIFF_BROKERS="127.0.0.1:${SK_KAFKA_PORT[$alive]}" "$SK_BIN/skiffctl" produce t6 -K : >/dev/null ||
  sk_fail "produce after the kill"
for _ in $(seq 1 300); do
  n=$(cat "$SK_TMP"/{a,b,c}.out | grep '"ev":"msg"' | sed 's/.*"value":"\([^"]*\)".*/\1/' | sort -u | wc -l)
  [ "$n" -ge 60 ] && break; sleep 0.1
done
sk_check "the group carries on: all 60 records consumed ($n)" test "$n" -ge 60
after="$(assigned a) $(assigned b) $(assigned c)"
sk_check "members kept their partitions (no rebalance): $before" test "$before" = "$after"
d2=$($W describe "127.0.0.1:${SK_KAFKA_PORT[$new]}" gf 2>/dev/null)
sk_check "group epoch unchanged after the failover ($d2)" test "$(echo "$d2" | sed 's/.*"epoch": \([0-9]*\).*/\1/')" = "$(echo "$d0" | sed 's/.*"epoch": \([0-9]*\).*/\1/')"
sk_log "member streams the client ended and the member restarted: $(cat "$SK_TMP"/{a,b,c}.out | grep -c '"msg":"consume: fetch failed')"
for m in a b c; do kill -TERM "${MPID[$m]}" 2>/dev/null; done
for m in a b c; do wait "${MPID[$m]}" 2>/dev/null; done
[ "$SK_FAILS" -eq 0 ] || { for f in "$SK_TMP"/{a,b,c}.out; do echo "== $f"; grep -v '"ev":"msg"' "$f" | tail -5; done; sk_dump_logs; }
sk_summary "$NAME"
