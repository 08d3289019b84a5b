#!/usr/bin/env bash
# Transactions on replicated partitions (issues 9 + 6): a real failover of
# the transaction coordinator. Three nodes; __transaction_state,
# __consumer_offsets and the input/output topics all have replication
# factor 3 and min.insync.replicas=2, so every transaction-log record and
# every marker is answered only once the ISR has it. A confluent-kafka
# (librdkafka) consume-transform-produce loop runs; mid-stream the node
# leading the __transaction_state partition of its transactional.id is
# killed -9 and NOT restarted until the stream is done: another node
# becomes the coordinator from its replica of the log, the processor goes on
# (restarted only when it gives up), and the output read with
# read_committed holds each input message exactly once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/txn_lib.sh"
NAME=t_txn_failover
CL="$SK_PY $SK_ROOT/test/integration/clients"
command -v jq >/dev/null || { echo "$NAME: jq missing"; exit 1; }
N_IN=1000
TXID=fo-ctp

OPTS=(--set controller.quorum.fetch.timeout.ms=500 --set controller.quorum.election.timeout.ms=300
      --set broker.heartbeat.interval.ms=300 --set broker.session.timeout.ms=2500
      --set replica.lag.time.max.ms=2000 --set group.initial.rebalance.delay.ms=0
      --set default.replication.factor=3 --set offsets.topic.replication.factor=3
      --set transaction.state.log.replication.factor=3 --set min.insync.replicas=2
      --set transaction.state.log.num.partitions=6 --set offsets.topic.num.partitions=6)
sk_start_cluster 3 "${OPTS[@]}"
adm() { curl -s --max-time 3 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
waitfor() {  # waitfor SECONDS command... (polls every 0.2 s)
  local t=0
  until "${@:2}" >/dev/null 2>&1; do sleep 0.2; t=$((t + 1)); [ "$t" -lt $(($1 * 5)) ] || return 1; done
}
unfenced() { [ "$(adm "$1" /v1/cluster | jq '[.brokers[] | select(.fenced == false)] | length' 2>/dev/null)" = "$2" ]; }
waitfor 30 unfenced 1 3 || sk_fail "3 unfenced brokers not seen"

$SK_PY - "$SK_BOOTSTRAP" "$N_IN" <<'PY' || sk_fail "setup (topics, input) failed"
import sys
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
boot, n = sys.argv[1], int(sys.argv[2])
a = AdminClient({'bootstrap.servers': boot})
for f in a.create_topics([NewTopic(t, 3, 3) for t in ('fin', 'fout')], operation_timeout=20).values():
    f.result()
p = Producer({'bootstrap.servers': boot, 'enable.idempotence': True, 'linger.ms': 5})
for i in range(n):
    p.produce('fin', value=b'm%05d' % i, partition=i % 3)
assert p.flush(60) == 0
PY
isr3() {  # every partition of topic $2 (seen by node $1) has an ISR of 3
  [ "$(adm "$1" "/v1/topics/$2" | jq '[.partitions[] | select((.isr | length) < 3)] | length' 2>/dev/null)" = 0 ]
}
waitfor 30 isr3 1 fin || sk_fail "fin not fully replicated"
waitfor 30 isr3 1 fout || sk_fail "fout not fully replicated"


ctp() { CTP_SLEEP_S=0.05 $SK_PY ${CTP_SCRIPT:-$SK_ROOT/test/integration/clients/txn_ctp.py} "$SK_BOOTSTRAP" fin fout fo-group "$TXID" 10 >> "$SK_TMP/ctp-$1.log" 2>&1 &
        CTP_PID=$!; SK_PIDS+=("$CTP_PID"); }
ctp 1
t=0
until [ "$(grep -c '^committed' "$SK_TMP/ctp-1.log" 2>/dev/null)" -ge 5 ]; do
  kill -0 "$CTP_PID" 2>/dev/null || break
  sleep 0.1; t=$((t + 1)); [ $t -lt 600 ] || break
done
sk_check "processor committed transactions before the kill" grep -q '^committed' "$SK_TMP/ctp-1.log"
rf=$(adm 1 /v1/topics/__transaction_state | jq '[.partitions[].replicas | length] | min')
sk_check "__transaction_state has replication factor 3 ($rf)" test "$rf" = 3
X=$(txn_coord_node 1 __transaction_state "$TXID" 6)
sk_log "coordinator of $TXID: node $X; processor: $(tail -n 1 "$SK_TMP/ctp-1.log")"
[ -n "$X" ] && [ "$X" -ge 1 ] 2>/dev/null || sk_fail "coordinator of $TXID not found"
sk_kill9_node "$X"
S=$((X % 3 + 1))   # a survivor to ask
moved() { local n; n=$(txn_coord_node "$S" __transaction_state "$TXID" 6); [ -n "$n" ] && [ "$n" != "$X" ] && [ "$n" -ge 1 ]; }
sk_check "another node becomes the coordinator of $TXID" waitfor 30 moved
sk_log "new coordinator: node $(txn_coord_node "$S" __transaction_state "$TXID" 6)"

# Restarted while it gives up (exit 3, or killed when stuck 40 s) or stops
# early (no input for its idle time while partitions move): the sum of what
# its runs committed says how far the stream is.
done_msgs() { local f s=0 v; for f in "$SK_TMP"/ctp-*.log; do v=$(grep '^committed' "$f" | tail -n 1 | awk '{print $2}'); s=$((s + ${v:-0})); done; echo "$s"; }
run=1
for _ in 1 2 3 4 5 6; do
  t=0
  while kill -0 "$CTP_PID" 2>/dev/null; do
    sleep 0.2; t=$((t + 1))
    [ $t -lt 200 ] && continue
    for i in 1 2 3; do
      [ "$i" = "$X" ] || sk_log "processor stuck; node $i transactions: $(adm "$i" /v1/transactions | jq -c .transactions 2>/dev/null | cut -c1-1500)"
    done
    kill -KILL "$CTP_PID"; break
  done
  wait "$CTP_PID"; rc=$?
  [ "$rc" -eq 0 ] && [ "$(done_msgs)" -ge "$N_IN" ] && break
  run=$((run + 1)); ctp "$run"
done
sk_log "processor runs: $run, last: $(tail -n 1 "$SK_TMP/ctp-$run.log")"
sk_check "processor finished the stream (runs: $run)" test "$rc" -eq 0
sk_check "killed node $X stayed down during the stream" sh -c "! kill -0 ${SK_NODE_PID[X]} 2>/dev/null"

$CL/txn_misc.py read "$SK_BOOTSTRAP" fout 3 40 "$N_IN" > "$SK_TMP/out.txt" 2>"$SK_TMP/read.err"
sk_check "read_committed output has $N_IN messages (got $(wc -l < "$SK_TMP/out.txt"))" \
  test "$(wc -l < "$SK_TMP/out.txt")" -eq "$N_IN"
sk_check "each input message exactly once in the output" \
  test "$(sort -u "$SK_TMP/out.txt" | wc -l)" -eq "$N_IN" -a "$(sort -u "$SK_TMP/out.txt" | head -1)" = "out:m00000" \
       -a "$(sort -u "$SK_TMP/out.txt" | tail -1)" = "out:m$(printf %05d $((N_IN - 1)))"

for i in 1 2 3; do [ "$i" = "$X" ] || sk_check "node $i still running" kill -0 "${SK_NODE_PID[i]}"; done
[ "$SK_FAILS" -eq 0 ] || { tail -n 20 "$SK_TMP"/ctp-*.log "$SK_TMP/read.err"; sk_dump_logs; }
sk_summary "$NAME"
