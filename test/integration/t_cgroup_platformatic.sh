#!/usr/bin/env bash
# @platformatic/kafka (pinned in test/js, npm ci) with groupProtocol
# 'consumer' (KIP-848) against one node, each member its own process
# (clients/cgroup_member.mjs): three members on six partitions get disjoint,
# complete assignments; one leaves (SIGTERM: epoch -1) and the other two
# share all six; a static member is kill -9'd and restarted at once with
# the same instance id (UNRELEASED_INSTANCE_ID until its session expires,
# then it joins); every record is consumed; after a node restart a new
# member resumes from the committed offsets (only records produced later).
. "$(dirname "$0")/lib.sh"
NAME=t_cgroup_platformatic
JS=$SK_ROOT/test/js
[ -d "$JS/node_modules/@platformatic/kafka" ] || (cd "$JS" && npm ci --silent >/dev/null 2>&1) ||
  sk_fail "@platformatic/kafka missing (cd test/js && npm ci)"
export SKIFF_JS_DIR=$JS
SETS=(--set group.consumer.heartbeat.interval.ms=500 --set group.consumer.session.timeout.ms=5000
      --set offsets.topic.num.partitions=3)
sk_start_cluster 1 "${SETS[@]}"
B=127.0.0.1:${SK_KAFKA_PORT[1]}
SKIFF_BROKERS=$B "$SK_BIN/skiffctl" topic create t6 -p 6 -r 1 >/dev/null || sk_fail "create t6"
seq 1 60 | sed 's/^/k&:v/' | SKIFF_BROKERS=$B "$SK_BIN/skiffctl" produce t6 -K : >/dev/null || sk_fail "produce"

declare -A MPID
start_member() {   # start_member NAME INSTANCE|-
  node --import "$JS/with-resolvers.mjs" "$SK_ROOT/test/integration/clients/cgroup_member.mjs" "$B" gp t6 "$2" \
    >> "$SK_TMP/$1.out" 2>> "$SK_TMP/$1.err" &
  MPID[$1]=$!
  SK_PIDS+=("$!")
}
# the last assignment a member printed ("t6/0,t6/3")
assigned() { grep '"ev":"assign"' "$SK_TMP/$1.out" 2>/dev/null | tail -1 | sed 's/.*"parts":\[\(.*\)\].*/\1/; s/"//g'; }
# members' last assignments: disjoint and together t6/0..5
check_split() {   # check_split "what" SIZES MEMBER...
  local what=$1 sizes=$2 t=0 all got; shift 2
  while :; do
    all=""; got=""
    for m in "$@"; do a=$(assigned "$m"); all+="${all:+,}$a"; got+="${got:+ }$(echo "$a" | tr ',' '\n' | grep -c .)"; done
    sorted=$(echo "$all" | tr ',' '\n' | grep . | sort | tr '\n' ' ')
    [ "$sorted" = "t6/0 t6/1 t6/2 t6/3 t6/4 t6/5 " ] &&
      [ "$(echo "$got" | tr ' ' '\n' | sort | tr '\n' ' ')" = "$sizes" ] && break
    t=$((t + 1)); [ "$t" -lt 150 ] || break
    sleep 0.1
  done
  sk_check "$what (got: $all; sizes $got)" test "$sorted" = "t6/0 t6/1 t6/2 t6/3 t6/4 t6/5 "
  sk_check "$what: sizes $sizes" test "$(echo "$got" | tr ' ' '\n' | sort | tr '\n' ' ')" = "$sizes"
}

start_member a -; start_member b inst-b; start_member c -
check_split "3 members: disjoint and complete" "2 2 2 " a b c

kill -TERM "${MPID[c]}"; wait "${MPID[c]}" 2>/dev/null
sk_check "c closed (left with epoch -1)" grep -q '"ev":"closed"' "$SK_TMP/c.out"
check_split "c left: a and b share all six" "3 3 " a b

kill -KILL "${MPID[b]}"; wait "${MPID[b]}" 2>/dev/null
t0=$(date +%s%N)
start_member b2 inst-b
check_split "b kill -9'd, b2 (same instance id) joins after b's session" "3 3 " a b2
t1=$(date +%s%N)
sk_log "b2 owned partitions $(( (t1 - t0) / 1000000 )) ms after b's kill -9 (session 5000 ms)"
sk_check "b2 waited for b's session (UNRELEASED_INSTANCE_ID meanwhile)" test $(( (t1 - t0) / 1000000 )) -ge 3000

# every record consumed by someone (a, b, c, b2 together)
for _ in $(seq 1 100); do
  n=$(cat "$SK_TMP"/{a,b,c,b2}.out 2>/dev/null | grep '"ev":"msg"' | sed 's/.*"value":"\([^"]*\)".*/\1/' | sort -u | wc -l)
  [ "$n" -ge 60 ] && break; sleep 0.1
done
sk_check "all 60 records consumed (distinct values: $n)" test "$n" -eq 60
sleep 1   # autocommit (200 ms) of the last records
kill -TERM "${MPID[a]}" "${MPID[b2]}"; wait "${MPID[a]}" "${MPID[b2]}" 2>/dev/null

sk_log "restart the node"
sk_stop_node 1
sk_start_node 1 "${SETS[@]}"
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node 1 not back"
seq 61 66 | sed 's/^/k&:v/' | SKIFF_BROKERS=$B "$SK_BIN/skiffctl" produce t6 -K : >/dev/null || sk_fail "produce 2"
start_member d -
for _ in $(seq 1 150); do
  [ "$(grep -c '"ev":"msg"' "$SK_TMP/d.out" 2>/dev/null)" -ge 6 ] && break; sleep 0.1
done
sleep 0.5
vals=$(grep '"ev":"msg"' "$SK_TMP/d.out" | sed 's/.*"value":"\([^"]*\)".*/\1/' | sort -V | tr '\n' ' ')
sk_check "after restart: offsets resume (only the 6 new records: $vals)" test "$vals" = "v61 v62 v63 v64 v65 v66 "
kill -TERM "${MPID[d]}"; wait "${MPID[d]}" 2>/dev/null
if [ "$SK_FAILS" -gt 0 ]; then for f in "$SK_TMP"/*.out; do echo "== $f"; grep -v '"ev":"msg"' "$f" | tail -8; done; sk_dump_logs; fi
sk_summary "$NAME"
