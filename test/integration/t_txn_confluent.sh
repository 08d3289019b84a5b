#!/usr/bin/env bash
# confluent_kafka (librdkafka) transactions on a 3-node cluster (issue 9):
# partitions led by different nodes, so the coordinator writes markers both
# locally and through WriteTxnMarkers to the other leaders.
#  - consume-transform-produce with send_offsets_to_transaction; the
#    processor is killed -9 mid-stream and restarted: the output read with
#    read_committed holds each input message exactly once;
#  - zombie fencing: two producers with one transactional.id, the older fenced;
#  - an abandoned transaction (its process gone) is aborted after
#    transaction.timeout.ms and the LSO moves on (later data is readable).
. "$(dirname "$0")/lib.sh"
NAME=t_txn_confluent
CL="$SK_PY $SK_ROOT/test/integration/clients"
command -v jq >/dev/null || { echo "$NAME: jq missing"; exit 1; }
N_IN=3000

sk_start_cluster 3 --set default.replication.factor=1 --set offsets.topic.replication.factor=1 \
  --set transaction.state.log.replication.factor=1 --set group.initial.rebalance.delay.ms=0 \
  --set transaction.state.log.num.partitions=6 --set offsets.topic.num.partitions=6
adm() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
ready() { [ "$(adm 1 /v1/cluster | jq '[.brokers[] | select(.fenced == false)] | length' 2>/dev/null)" = 3 ]; }
t=0; until ready; do sleep 0.2; t=$((t + 1)); [ $t -lt 150 ] || sk_fail "3 unfenced brokers not seen"; done

$SK_PY - "$SK_BOOTSTRAP" "$N_IN" <<'PY' || sk_fail "setup (topics, input) failed"
import sys
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
boot, n = sys.argv[1], int(sys.argv[2])
a = AdminClient({'bootstrap.servers': boot})
for f in a.create_topics([NewTopic(t, 3, 1) for t in ('tin', 'tout', 'tfence', 'ttmo')], operation_timeout=20).values():
    f.result()
p = Producer({'bootstrap.servers': boot, 'enable.idempotence': True, 'linger.ms': 5})
for i in range(n):
    p.produce('tin', value=b'm%05d' % i, partition=i % 3)
assert p.flush(60) == 0
PY
leaders=$(for t in tin tout; do adm 1 "/v1/topics/$t" | jq -r '.partitions[].leader'; done | sort -u | wc -l)
sk_check "tin/tout partitions are led by more than one node ($leaders)" test "$leaders" -ge 2

# ---- consume-transform-produce, killed -9 mid-stream, restarted ----------
ctp() { $CL/txn_ctp.py "$SK_BOOTSTRAP" tin tout ctp-group ctp-1 "$1" >> "$SK_TMP/ctp-$2.log" 2>&1 & CTP_PID=$!; SK_PIDS+=("$CTP_PID"); }
ctp 30 1
t=0
until [ "$(tail -n 1 "$SK_TMP/ctp-1.log" 2>/dev/null | awk '/^committed/ {print $2}')" -ge 600 ] 2>/dev/null; do
  kill -0 "$CTP_PID" 2>/dev/null || break
  sleep 0.1; t=$((t + 1)); [ $t -lt 900 ] || break
done
sk_log "processor progress before kill: $(tail -n 1 "$SK_TMP/ctp-1.log")"
kill -KILL "$CTP_PID" 2>/dev/null; wait "$CTP_PID" 2>/dev/null
sk_check "processor was killed mid-stream" test "$(tail -n 1 "$SK_TMP/ctp-1.log" | awk '{print $2}')" -lt "$N_IN"
ctp 8 2
t=0; while kill -0 "$CTP_PID" 2>/dev/null; do sleep 0.2; t=$((t + 1)); [ $t -lt 450 ] || { kill -KILL "$CTP_PID"; break; }; done
wait "$CTP_PID" 2>/dev/null
sk_log "restarted processor: $(tail -n 1 "$SK_TMP/ctp-2.log")"
$CL/txn_misc.py read "$SK_BOOTSTRAP" tout 3 12 > "$SK_TMP/out.txt" 2>"$SK_TMP/read.err"
sk_check "read_committed output has $N_IN messages (got $(wc -l < "$SK_TMP/out.txt"))" test "$(wc -l < "$SK_TMP/out.txt")" -eq "$N_IN"
sk_check "each input message exactly once in the output" \
  test "$(sort -u "$SK_TMP/out.txt" | wc -l)" -eq "$N_IN" -a "$(sort -u "$SK_TMP/out.txt" | head -1)" = "out:m00000" \
       -a "$(sort -u "$SK_TMP/out.txt" | tail -1)" = "out:m$(printf %05d $((N_IN - 1)))"

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
sk_check_lines < <(timeout 120 $CL/txn_misc.py fence "$SK_BOOTSTRAP" tfence 2>"$SK_TMP/fence.err")
$CL/txn_misc.py read "$SK_BOOTSTRAP" tfence 3 6 > "$SK_TMP/fence.txt" 2>>"$SK_TMP/read.err"
sk_check "read_committed sees only the new producer's data ($(tr '\n' ' ' < "$SK_TMP/fence.txt"))" \
  test "$(cat "$SK_TMP/fence.txt")" = "new-data"

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
  $CL/txn_misc.py read "$SK_BOOTSTRAP" ttmo 3 2 > "$SK_TMP/tmo.txt" 2>>"$SK_TMP/read.err"
  t=$((t + 1)); [ $t -lt 15 ] || break
done
sk_check "after transaction.timeout.ms the LSO moved on: read_committed gets 'later' only ($(tr '\n' ' ' < "$SK_TMP/tmo.txt"))" \
  test "$(cat "$SK_TMP/tmo.txt")" = "later"

for i in 1 2 3; do sk_check "node $i still running" kill -0 "${SK_NODE_PID[i]}"; done
[ "$SK_FAILS" -eq 0 ] || { tail -n 20 "$SK_TMP"/ctp-*.log "$SK_TMP/fence.err" "$SK_TMP/read.err"; sk_dump_logs; }
sk_summary "$NAME"
