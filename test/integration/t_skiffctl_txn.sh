#!/usr/bin/env bash
# skiffctl txn list|describe and skiffctl producers (issue 9) on one node,
# with the admin port's GET /v1/partitions/{topic}/{partition}/producers.
# A confluent_kafka helper (kept alive while we look) runs two transactional
# producers on topic txt (3 partitions):
#   tx-done: 3 records to partition 1, committed (first InitProducerId: epoch 0);
#   tx-open: initialised twice (second instance: epoch 1), then 2 records to
#            partition 0 and 1 to partition 2, flushed, left open; committed
#            when the test asks, then the helper exits.
# Expected values come from what the helper did, and producer ids are
# cross-checked between the three commands and the admin port.
. "$(dirname "$0")/lib.sh"
NAME=t_skiffctl_txn
CTL="$SK_BIN/skiffctl"
[ -x "$CTL" ] || sk_fail "no $CTL"
command -v jq >/dev/null || sk_fail "jq missing"

sk_start_cluster 1 --set group.initial.rebalance.delay.ms=0
export SKIFF_BROKERS=$SK_BOOTSTRAP SKIFF_ADMIN=127.0.0.1:${SK_ADMIN_PORT[1]}
adm() { curl -s --max-time 5 "$SKIFF_ADMIN$1"; }
adm_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$SKIFF_ADMIN$1"; }

sk_check "topic create txt" "$CTL" topic create txt -p 3 -r 1
T0=$(($(date +%s) * 1000))

GO="$SK_TMP/commit-now"
$SK_PY - "$SK_BOOTSTRAP" "$GO" > "$SK_TMP/helper.log" 2>&1 <<'PY' &
import os, sys, time
from confluent_kafka import Producer
boot, go = sys.argv[1], sys.argv[2]
def txp(tid):
    p = Producer({'bootstrap.servers': boot, 'transactional.id': tid, 'transaction.timeout.ms': 60000, 'linger.ms': 5})
    p.init_transactions(30)
    return p
d = txp('tx-done')
d.begin_transaction()
for i in range(3):
    d.produce('txt', value=b'done%d' % i, partition=1)
d.commit_transaction(30)
first = txp('tx-open')         # epoch 0, then fenced by the next InitProducerId
o = txp('tx-open')             # epoch 1
o.begin_transaction()
o.produce('txt', value=b'open0', partition=0)
o.produce('txt', value=b'open1', partition=0)
o.produce('txt', value=b'open2', partition=2)
assert o.flush(30) == 0
print('open', flush=True)
deadline = time.time() + 60
while not os.path.exists(go) and time.time() < deadline:
    time.sleep(0.05)
o.commit_transaction(30)
print('committed', flush=True)
PY
HELPER=$!
SK_PIDS+=("$HELPER")
t=0
until grep -q '^open' "$SK_TMP/helper.log"; do
  kill -0 "$HELPER" 2>/dev/null || sk_fail "helper died: $(cat "$SK_TMP/helper.log")"
  sleep 0.1; t=$((t + 1)); [ $t -lt 600 ] || sk_fail "helper did not open its transaction: $(cat "$SK_TMP/helper.log")"
done

# ---- txn list -------------------------------------------------------------------
"$CTL" txn list --json > "$SK_TMP/list.json" 2> "$SK_TMP/list.err"; rc=$?
sk_log "txn list: $(cat "$SK_TMP/list.json" "$SK_TMP/list.err")"
sk_check "txn list exits 0" test "$rc" = 0
st() { jq -r --arg id "$1" '.[] | select(.transactional_id == $id) | .state' "$SK_TMP/list.json"; }
pid_of() { jq -r --arg id "$1" '.[] | select(.transactional_id == $id) | .producer_id' "$SK_TMP/list.json"; }
sk_check "txn list: tx-open is Ongoing" test "$(st tx-open)" = Ongoing
sk_check "txn list: tx-done is CompleteCommit" test "$(st tx-done)" = CompleteCommit
sk_check "txn list: exactly the two ids, sorted" \
  test "$(jq -r 'map(.transactional_id) | join(",")' "$SK_TMP/list.json")" = "tx-done,tx-open"
sk_check "txn list: coordinator is node 1" test "$(jq -r 'map(.coordinator) | unique | join(",")' "$SK_TMP/list.json")" = 1
OPEN_PID=$(pid_of tx-open); DONE_PID=$(pid_of tx-done)
sk_check "txn list: two distinct producer ids ($OPEN_PID, $DONE_PID)" \
  test -n "$OPEN_PID" -a -n "$DONE_PID" -a "$OPEN_PID" != "$DONE_PID" -a "$OPEN_PID" -ge 0 -a "$DONE_PID" -ge 0
sk_check "txn list --state Ongoing: only tx-open" \
  test "$("$CTL" txn list --state Ongoing --json | jq -r 'map(.transactional_id) | join(",")')" = tx-open
sk_check "txn list --producer-id $DONE_PID: only tx-done" \
  test "$("$CTL" txn list --producer-id "$DONE_PID" --json | jq -r 'map(.transactional_id) | join(",")')" = tx-done
"$CTL" txn list --state Bogus --json > "$SK_TMP/bogus.json" 2> "$SK_TMP/bogus.err"; rc=$?
sk_check "txn list --state Bogus: exit 0, empty, warning names the state" \
  test "$rc" = 0 -a "$(jq length "$SK_TMP/bogus.json")" = 0 -a -n "$(grep "unknown transaction state 'Bogus'" "$SK_TMP/bogus.err")"
sk_check "txn list table: header and the tx-open row" \
  bash -c "\"$CTL\" txn list | grep -q '^TRANSACTIONAL_ID' && \"$CTL\" txn list | grep -qE '^tx-open +$OPEN_PID +Ongoing +1 *$'"

# ---- txn describe ---------------------------------------------------------------
"$CTL" txn describe tx-open --json > "$SK_TMP/desc.json" 2> "$SK_TMP/desc.err"; rc=$?
sk_log "txn describe tx-open: $(cat "$SK_TMP/desc.json" "$SK_TMP/desc.err")"
sk_check "txn describe exits 0" test "$rc" = 0
dj() { jq -r "$1" "$SK_TMP/desc.json"; }
sk_check "describe: Ongoing, epoch 1, timeout 60000, coordinator 1" \
  test "$(dj '[.state, .producer_epoch, .transaction_timeout_ms, .coordinator] | map(tostring) | join(" ")')" = "Ongoing 1 60000 1"
sk_check "describe: the producer id txn list showed" test "$(dj .producer_id)" = "$OPEN_PID"
sk_check "describe: partitions txt-0 and txt-2" \
  test "$(dj '[.partitions[] | "\(.topic)-\(.partition)"] | sort | join(",")')" = "txt-0,txt-2"
NOW=$(($(date +%s) * 1000 + 1000))
START=$(dj .transaction_start_time_ms)
sk_check "describe: start time within the test ($START in [$T0, $NOW])" test "$START" -ge "$T0" -a "$START" -le "$NOW"
sk_check "describe table: state line and both partitions" \
  bash -c "out=\$(\"$CTL\" txn describe tx-open) && echo \"\$out\" | grep -q 'state: Ongoing  producer id: $OPEN_PID  epoch: 1' &&
           [ \"\$(echo \"\$out\" | grep -cE '^txt +[02] *$')\" = 2 ]"
"$CTL" txn describe no-such-txn > "$SK_TMP/nf.out" 2> "$SK_TMP/nf.err"; rc=$?
sk_log "unknown id: $(cat "$SK_TMP/nf.err")"
sk_check "describe of an unknown id: exit 1, TRANSACTIONAL_ID_NOT_FOUND named" \
  test "$rc" = 1 -a -n "$(grep "TRANSACTIONAL_ID_NOT_FOUND.*no-such-txn" "$SK_TMP/nf.err")" -a ! -s "$SK_TMP/nf.out"

# ---- producers --------------------------------------------------------------------
"$CTL" producers txt --json > "$SK_TMP/prod.json" 2> "$SK_TMP/prod.err"; rc=$?
sk_log "producers txt: $(cat "$SK_TMP/prod.json" "$SK_TMP/prod.err")"
sk_check "producers exits 0" test "$rc" = 0
pj() { jq -r "$1" "$SK_TMP/prod.json"; }
sk_check "producers p0: tx-open's id, epoch 1, last sequence 1, txn from offset 0" \
  test "$(pj ".[] | select(.partition == 0 and .producer_id == $OPEN_PID) | [.producer_epoch, .last_sequence, .current_txn_start_offset, .leader] | map(tostring) | join(\" \")")" = "1 1 0 1"
sk_check "producers p2: tx-open's id, epoch 1, last sequence 0, txn from offset 0" \
  test "$(pj ".[] | select(.partition == 2 and .producer_id == $OPEN_PID) | [.producer_epoch, .last_sequence, .current_txn_start_offset] | map(tostring) | join(\" \")")" = "1 0 0"
sk_check "producers p1: tx-done's id, epoch 0, last sequence 2, no open txn" \
  test "$(pj ".[] | select(.partition == 1 and .producer_id == $DONE_PID) | [.producer_epoch, .last_sequence, .current_txn_start_offset] | map(tostring) | join(\" \")")" = "0 2 -1"
sk_check "producers: nobody else on p1, only tx-open on p0 and p2" \
  test "$(pj '[.[] | "\(.partition):\(.producer_id)"] | sort | join(",")')" = "0:$OPEN_PID,1:$DONE_PID,2:$OPEN_PID"
LAST=$(pj ".[] | select(.partition == 0) | .last_timestamp")
sk_check "producers p0: last timestamp within the test ($LAST)" test "$LAST" -ge "$T0" -a "$LAST" -le "$NOW"
sk_check "producers --partition 1: just tx-done" \
  test "$("$CTL" producers txt --partition 1 --json | jq -r 'map("\(.partition):\(.producer_id)") | join(",")')" = "1:$DONE_PID"
sk_check "producers table: p0 row with epoch 1 and txn start 0" \
  bash -c "\"$CTL\" producers txt -p 0 | grep -qE '^0 +1 +$OPEN_PID +1 +1 +[0-9T:.-]+Z +-?[0-9]+ +0 *$'"
"$CTL" producers nosuchtopic 2> "$SK_TMP/nt.err"; rc=$?
sk_check "producers of an unknown topic: exit 1, UNKNOWN_TOPIC_OR_PARTITION" \
  test "$rc" = 1 -a -n "$(grep UNKNOWN_TOPIC_OR_PARTITION "$SK_TMP/nt.err")"
"$CTL" producers txt --partition 3 2> "$SK_TMP/np.err"; rc=$?
sk_check "producers txt --partition 3 (of 3): exit 1, UNKNOWN_TOPIC_OR_PARTITION" \
  test "$rc" = 1 -a -n "$(grep UNKNOWN_TOPIC_OR_PARTITION "$SK_TMP/np.err")"
"$CTL" producers txt --partition x 2> /dev/null; rc=$?
sk_check "producers --partition x: usage, exit 2" test "$rc" = 2

# ---- admin port: GET /v1/partitions/{topic}/{partition}/producers -----------------
a0=$(adm /v1/partitions/txt/0/producers)
sk_log "admin producers txt-0: $a0"
sk_check "admin producers txt-0: tx-open's id, epoch 1, txn from offset 0" \
  test "$(echo "$a0" | jq -r '[.leader, (.producers[] | .producer_id, .producer_epoch, .current_txn_start_offset)] | map(tostring) | join(" ")')" = "1 $OPEN_PID 1 0"
sk_check "admin producers: unknown partition 404" test "$(adm_code /v1/partitions/txt/7/producers)" = 404
sk_check "admin producers: bad partition 400" test "$(adm_code /v1/partitions/txt/x/producers)" = 400
sk_check "admin /v1/transactions agrees on tx-open's producer id" \
  test "$(adm /v1/transactions | jq -r '.transactions[] | select(.transactional_id == "tx-open") | .producer_id')" = "$OPEN_PID"

sk_log "tables while tx-open is open:"; { "$CTL" txn list; "$CTL" txn describe tx-open; "$CTL" producers txt; } 2>&1

# ---- commit the open transaction: the views follow --------------------------------
touch "$GO"
t=0
while kill -0 "$HELPER" 2>/dev/null; do sleep 0.1; t=$((t + 1)); [ $t -lt 400 ] || break; done
sk_check "helper committed tx-open" grep -q '^committed' "$SK_TMP/helper.log"
state=""
for _ in $(seq 150); do  # CompleteCommit follows the markers; poll
  state=$("$CTL" txn describe tx-open --json 2>/dev/null | jq -r '[.state, (.partitions | length)] | map(tostring) | join(" ")')
  [ "$state" = "CompleteCommit 0" ] && break; sleep 0.1
done
sk_check "after commit: tx-open CompleteCommit with no partitions ($state)" test "$state" = "CompleteCommit 0"
sk_check "after commit: txn list --state Ongoing is empty" test "$("$CTL" txn list --state Ongoing --json | jq length)" = 0
sk_check "after commit: producers p0 shows no open transaction" \
  test "$("$CTL" producers txt -p 0 --json | jq -r ".[] | select(.producer_id == $OPEN_PID) | .current_txn_start_offset")" = -1

sk_stop_node 1
"$CTL" txn list 2> "$SK_TMP/down.err"; rc=$?
sk_check "stopped node: txn list exits 3 naming the address" \
  test "$rc" = 3 -a -n "$(grep "127.0.0.1:${SK_KAFKA_PORT[1]}" "$SK_TMP/down.err")"
[ "$SK_FAILS" -eq 0 ] || { cat "$SK_TMP/helper.log"; sk_dump_logs; }
sk_summary "$NAME"
