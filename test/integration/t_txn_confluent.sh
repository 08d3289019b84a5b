#!/usr/bin/env bash
# confluent_kafka (librdkafka) transactions on a 3-node cluster (issue 9):
# partitions led by different nodes, so the coordinator writes markers both
# locally and through WriteTxnMarkers to the other leaders.
#  - consume-transform-produce with send_offsets_to_transaction; the
#    processor is killed -9 mid-stream and restarted: the output read with
#    read_committed holds each input message exactly once;
#  - the same with the transaction coordinator's node killed -9 and restarted;
#  - zombie fencing: two producers with one transactional.id, the older fenced;
#    then ListTransactions / DescribeTransactions / DescribeProducers (raw
#    frames) and transaction.max.timeout.ms (INVALID_TRANSACTION_TIMEOUT);
#  (TxnOffsetCommit across a restart of the group coordinator's node:
#  t_txn_offsets_restart.sh);
#  - an abandoned transaction (its process gone) is aborted after
#    transaction.timeout.ms and the LSO moves on (later data is readable).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/txn_lib.sh"
NAME=t_txn_confluent
CL="$SK_PY $SK_ROOT/test/integration/clients"
command -v jq >/dev/null || { echo "$NAME: jq missing"; exit 1; }
N_IN=3000

ARGS=(--set default.replication.factor=1 --set offsets.topic.replication.factor=1
  --set transaction.state.log.replication.factor=1 --set group.initial.rebalance.delay.ms=0
  --set transaction.state.log.num.partitions=6 --set offsets.topic.num.partitions=6)
sk_start_cluster 3 "${ARGS[@]}"
adm() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
ready() { [ "$(adm 1 /v1/cluster | jq '[.brokers[] | select(.fenced == false)] | length' 2>/dev/null)" = 3 ]; }
t=0; until ready; do sleep 0.2; t=$((t + 1)); [ $t -lt 150 ] || sk_fail "3 unfenced brokers not seen"; done

$SK_PY - "$SK_BOOTSTRAP" "$N_IN" <<'PY' || sk_fail "setup (topics, input) failed"
import sys
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
boot, n = sys.argv[1], int(sys.argv[2])
a = AdminClient({'bootstrap.servers': boot})
for f in a.create_topics([NewTopic(t, 3, 1) for t in ('tin', 'tout', 'tin2', 'tout2', 'tfence', 'ttmo')], operation_timeout=20).values():
    f.result()
p = Producer({'bootstrap.servers': boot, 'enable.idempotence': True, 'linger.ms': 5})
for t in ('tin', 'tin2'):
    for i in range(n):
        p.produce(t, value=b'm%05d' % i, partition=i % 3)
assert p.flush(60) == 0
PY
leaders=$(for t in tin tout; do adm 1 "/v1/topics/$t" | jq -r '.partitions[].leader'; done | sort -u | wc -l)
sk_check "tin/tout partitions are led by more than one node ($leaders)" test "$leaders" -ge 2

# ---- consume-transform-produce, killed -9 mid-stream, restarted ----------
# ctp_done LOG... -> messages committed by those processor runs together
# (each run's last "committed N": it prints that after commit_transaction)
ctp_done() {
  local f n s=0
  for f in "$@"; do
    n=$(awk '$1 == "committed" { n = $2 } END { print n + 0 }' "$f" 2>/dev/null)
    s=$((s + ${n:-0}))
  done
  echo "$s"
}
# ctp_wait PID LOG... -> the processor's exit status once it exits by itself
# (IDLE_S without input, or 3 on an error), at most 90 s. Once the runs of
# LOG... committed all N_IN inputs it is stopped, exit 0: the idle wait would
# only pad the test. A run that re-read committed input reaches the count
# with inputs left over and the output check fails; one that lost some never
# reaches it and ends by its idle wait as before.
ctp_wait() {
  local pid=$1 t=0; shift
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$(ctp_done "$@")" -ge "$N_IN" ]; then kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; return 0; fi
    sleep 0.2; t=$((t + 1)); [ $t -lt 450 ] || { kill -KILL "$pid"; break; }
  done
  wait "$pid"
}
# $3: hold (stop consuming, wait for the kill) once that many are committed
ctp() { CTP_HOLD_AT="${3:-0}" $CL/txn_ctp.py "$SK_BOOTSTRAP" tin tout ctp-group ctp-1 "$1" >> "$SK_TMP/ctp-$2.log" 2>&1 & CTP_PID=$!; SK_PIDS+=("$CTP_PID"); }
ctp 30 1 600
t=0
until [ "$(tail -n 1 "$SK_TMP/ctp-1.log" 2>/dev/null | awk '/^committed/ {print $2}')" -ge 600 ] 2>/dev/null; do
  kill -0 "$CTP_PID" 2>/dev/null || break
  sleep 0.1; t=$((t + 1)); [ $t -lt 900 ] || break
done
sk_log "processor progress before kill: $(tail -n 1 "$SK_TMP/ctp-1.log")"
kill -KILL "$CTP_PID" 2>/dev/null; wait "$CTP_PID" 2>/dev/null
sk_check "processor was killed mid-stream" test "$(tail -n 1 "$SK_TMP/ctp-1.log" | awk '{print $2}')" -lt "$N_IN"
ctp 8 2
# Meanwhile (the processor mostly waits for the killed member's session to
# end) the zombie-fencing checks below, on topic tfence: they are done before
# phase 2 kills a node. Their lines are counted there.
fence_checks() {
  timeout 120 $CL/txn_misc.py fence "$SK_BOOTSTRAP" tfence > "$SK_TMP/fence.out" 2>"$SK_TMP/fence.err"
  timeout 60 $CL/txn_misc.py read "$SK_BOOTSTRAP" tfence 3 10 1 > "$SK_TMP/fence.txt" 2>>"$SK_TMP/fence.err"
  timeout 60 $CL/txn_misc.py admin "$SK_BOOTSTRAP" tfence > "$SK_TMP/fence-admin.out" 2>>"$SK_TMP/fence.err"
  timeout 60 $CL/txn_misc.py badtimeout "$SK_BOOTSTRAP" tfence > "$SK_TMP/fence-badtimeout.out" 2>>"$SK_TMP/fence.err"
}
fence_checks & FENCE_PID=$!
ctp_wait "$CTP_PID" "$SK_TMP"/ctp-[12].log
sk_log "restarted processor: $(tail -n 1 "$SK_TMP/ctp-2.log")"
$CL/txn_misc.py read "$SK_BOOTSTRAP" tout 3 30 "$N_IN" > "$SK_TMP/out.txt" 2>"$SK_TMP/read.err"
sk_check "read_committed output has $N_IN messages (got $(wc -l < "$SK_TMP/out.txt"))" test "$(wc -l < "$SK_TMP/out.txt")" -eq "$N_IN"
sk_check "each input message exactly once in the output" \
  test "$(sort -u "$SK_TMP/out.txt" | wc -l)" -eq "$N_IN" -a "$(sort -u "$SK_TMP/out.txt" | head -1)" = "out:m00000" \
       -a "$(sort -u "$SK_TMP/out.txt" | tail -1)" = "out:m$(printf %05d $((N_IN - 1)))"

wait "$FENCE_PID"

# ---- kill -9 of the coordinator's node mid-stream ----------------------------
# The node leading __transaction_state partition abs(hashCode("ctp-k")) % 6
# is killed while the processor runs and restarted: the new incarnation
# replays the partition and finishes what was prepared; the processor is
# restarted whenever it gives up. Output read_committed: exactly once.
ctp2() { CTP_SLEEP_S=0.05 $CL/txn_ctp.py "$SK_BOOTSTRAP" tin2 tout2 ctp-group2 ctp-k 8 >> "$SK_TMP/ctpk-$1.log" 2>&1 & CTP_PID=$!; SK_PIDS+=("$CTP_PID"); }
ctp2 1
t=0
until [ "$(grep -c '^committed' "$SK_TMP/ctpk-1.log" 2>/dev/null)" -ge 5 ]; do
  kill -0 "$CTP_PID" 2>/dev/null || break
  sleep 0.1; t=$((t + 1)); [ $t -lt 900 ] || break
done
X=$(txn_coord_node 1 __transaction_state ctp-k 6)
sk_log "coordinator of ctp-k: node $X; processor: $(tail -n 1 "$SK_TMP/ctpk-1.log")"
if [ -n "$X" ] && [ "$X" -ge 1 ] 2>/dev/null; then
  sk_kill9_node "$X"
  sleep 1
  sk_start_node "$X" "${ARGS[@]}"
  sk_wait_port "${SK_KAFKA_PORT[X]}" 30 "${SK_NODE_PID[X]}" || sk_fail "node $X did not restart"
fi
sk_check "found and restarted the coordinator's node ($X)" test -n "$X"
run=1
for _ in 1 2 3 4 5 6; do
  ctp_wait "$CTP_PID" "$SK_TMP"/ctpk-*.log; rc=$?
  [ "$rc" -eq 0 ] && break
  run=$((run + 1)); ctp2 "$run"
done
sk_log "processor runs: $run, last: $(tail -n 1 "$SK_TMP/ctpk-$run.log")"
$CL/txn_misc.py read "$SK_BOOTSTRAP" tout2 3 40 "$N_IN" > "$SK_TMP/out2.txt" 2>>"$SK_TMP/read.err"
sk_check "coordinator killed: read_committed output has $N_IN messages (got $(wc -l < "$SK_TMP/out2.txt"))" \
  test "$(wc -l < "$SK_TMP/out2.txt")" -eq "$N_IN"
sk_check "coordinator killed: each input message exactly once" test "$(sort -u "$SK_TMP/out2.txt" | wc -l)" -eq "$N_IN"

wtm() {  # WriteTxnMarkers requests served, summed over the nodes
  local i s=0 v
  for i in 1 2 3; do
    v=$(adm "$i" /metrics | awk '$1 == "skiff_requests_total{api=\"WriteTxnMarkers\"}" {print int($2)}')
    s=$((s + ${v:-0}))
  done
  echo "$s"
}
sk_check "markers reached other leaders through WriteTxnMarkers ($(wtm) requests)" test "$(wtm)" -gt 0

# ---- zombie fencing ---------------------------------------------------------
# (run in the background during the restarted processor above: its own
# topic and transactional ids, and no node is killed before it ended)
sk_check_lines < "$SK_TMP/fence.out"
sk_check "read_committed sees only the new producer's data ($(tr '\n' ' ' < "$SK_TMP/fence.txt"))" \
  test "$(cat "$SK_TMP/fence.txt")" = "new-data"
sk_check_lines < "$SK_TMP/fence-admin.out"
sk_check_lines < "$SK_TMP/fence-badtimeout.out"

# ---- abandoned transaction: aborted by its timeout, LSO moves on ----------
timeout 60 $CL/txn_misc.py abandon "$SK_BOOTSTRAP" ttmo > "$SK_TMP/abandon.log" 2>&1
sk_check "abandoned producer sent its data" grep -q sent "$SK_TMP/abandon.log"
$SK_PY -c "
from confluent_kafka import Producer
import sys
p = Producer({'bootstrap.servers': sys.argv[1]})
p.produce('ttmo', value=b'later', partition=0)
assert p.flush(30) == 0" "$SK_BOOTSTRAP" || sk_fail "plain produce to ttmo failed"
$CL/txn_misc.py read "$SK_BOOTSTRAP" ttmo 3 1 > "$SK_TMP/tmo0.txt" 2>>"$SK_TMP/read.err"
sk_check "before the timeout the LSO holds 'later' back ($(tr '\n' ' ' < "$SK_TMP/tmo0.txt"))" test ! -s "$SK_TMP/tmo0.txt"
t=0; : > "$SK_TMP/tmo.txt"
until grep -q later "$SK_TMP/tmo.txt"; do
  $CL/txn_misc.py read "$SK_BOOTSTRAP" ttmo 3 2 1 > "$SK_TMP/tmo.txt" 2>>"$SK_TMP/read.err"
  t=$((t + 1)); [ $t -lt 15 ] || break
done
sk_check "after transaction.timeout.ms the LSO moved on: read_committed gets 'later' only ($(tr '\n' ' ' < "$SK_TMP/tmo.txt"))" \
  test "$(cat "$SK_TMP/tmo.txt")" = "later"

for i in 1 2 3; do sk_check "node $i still running" kill -0 "${SK_NODE_PID[i]}"; done
[ "$SK_FAILS" -eq 0 ] || { tail -n 20 "$SK_TMP"/ctp-*.log "$SK_TMP/fence.err" "$SK_TMP/read.err"; sk_dump_logs; }
sk_summary "$NAME"
