#!/usr/bin/env bash
# kill -9 during produce: a confluent-kafka acks=all producer records every
# acknowledged message; the node is killed with SIGKILL while it produces,
# restarted on the same data, and every acknowledged message must be read
# back at its acknowledged offset. Two crash rounds with the producer stopped
# at the crash, one SIGTERM under the same load (exit 0, nothing acknowledged
# lost), one with the producer retrying across a kill -9 and restart
# (producer state must survive: no duplicates), then a clean SIGTERM restart,
# and the log must still take writes after all of it.
. "$(dirname "$0")/lib.sh"
NAME=t_restart_kill9
HERE=$(cd "$(dirname "$0")" && pwd)
AL=(timeout 120 "$SK_PY" "$HERE/clients/acked_log.py")
PARTS=2; TOPIC=crash; ROUND_ACKS=5000

sk_start_cluster 1 --set num.partitions=$PARTS --set auto.create.topics.enable=true
BOOT=$SK_BOOTSTRAP
ACKS=$SK_TMP/acked

acked_count() { [ -f "$ACKS" ] && wc -l < "$ACKS" || echo 0; }

restart_node() {  # restart_node -> same config, same data dir
  sk_start_node 1
  sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node did not come back"
}

# sigterm_node -> SIGTERM node 1 and wait; TERM_RC = exit status, TERM_MS
sigterm_node() {
  local pid=${SK_NODE_PID[1]} t0 stopper
  t0=$(date +%s%3N)
  sk_stop_node 1 & stopper=$!
  wait "$pid" 2>/dev/null; TERM_RC=$?
  wait "$stopper"
  TERM_MS=$(( $(date +%s%3N) - t0 ))
}

# rounds 1, 2: SIGKILL; round 4: SIGTERM (graceful) while the producer sends
for round in 1 2 4; do
  before=$(acked_count)
  "${AL[@]}" produce "$BOOT" "$TOPIC" "$PARTS" $((round * 10000000)) "$ACKS" 2>"$SK_TMP/prod-$round.err" &
  prod=$!
  SK_PIDS+=("$prod")
  t=0
  while [ "$(acked_count)" -lt $((before + ROUND_ACKS)) ] && [ $t -lt 300 ] && kill -0 $prod 2>/dev/null; do
    sleep 0.1; t=$((t + 1))
  done
  sk_log "round $round: $(( $(acked_count) - before )) acknowledged, stopping the node"
  if [ "$round" = 4 ]; then   # while the producer is still sending
    sigterm_node
    sk_check "round 4: SIGTERM under load exits 0 (rc $TERM_RC after $TERM_MS ms)" test "$TERM_RC" -eq 0
  else
    sk_kill9_node 1
  fi
  sleep 0.3
  kill -TERM $prod 2>/dev/null; wait $prod 2>/dev/null
  sk_check "round $round: producer got $ROUND_ACKS+ acknowledgements before the stop" \
    test "$(acked_count)" -ge $((before + ROUND_ACKS))
  restart_node
  "${AL[@]}" consume "$BOOT" "$TOPIC" "$PARTS" "$SK_TMP/read-$round" 2>"$SK_TMP/cons-$round.err"
  sk_check "round $round: consumer read to the high watermark" test $? -eq 0
  sk_check_lines < <("${AL[@]}" verify "$ACKS" "$SK_TMP/read-$round" | sed "s/^\(PASS\|FAIL\) /\1 round $round: /")
done

# Negative control: the verifier must notice one lost and one moved record.
grep -v "^$(head -n 1 "$ACKS" | cut -d' ' -f1) " "$SK_TMP/read-2" > "$SK_TMP/read-lost"
sk_check "control: a lost acknowledged message is detected" \
  eval '! "${AL[@]}" verify "$ACKS" "$SK_TMP/read-lost" >/dev/null'
awk 'NR == 10 { $3 = $3 + 1 } { print }' "$SK_TMP/read-2" > "$SK_TMP/read-moved"
sk_check "control: a message at another offset is detected" \
  eval '! "${AL[@]}" verify "$ACKS" "$SK_TMP/read-moved" >/dev/null'

# Round 3: the producer lives through the crash. Batches in flight when the
# node died are retried after the restart with their old sequence numbers:
# the restarted node must know the producer's state (dedup, not duplicates,
# not OUT_OF_ORDER_SEQUENCE) and every message must end up acknowledged.
before=$(acked_count)
"${AL[@]}" produce "$BOOT" "$TOPIC" "$PARTS" 30000000 "$ACKS" flush > "$SK_TMP/prod-3.out" 2>"$SK_TMP/prod-3.err" &
prod=$!
SK_PIDS+=("$prod")
t=0
while [ "$(acked_count)" -lt $((before + ROUND_ACKS)) ] && [ $t -lt 300 ] && kill -0 $prod 2>/dev/null; do
  sleep 0.1; t=$((t + 1))
done
sk_log "round 3: $(( $(acked_count) - before )) acknowledged, killing the node under a live producer"
sk_kill9_node 1
sleep 0.5
restart_node
sleep 2                   # the producer reconnects and goes on
kill -TERM $prod 2>/dev/null; wait $prod 2>/dev/null
sk_check "round 3: producer delivered everything after the restart ($(tr '\n' ' ' < "$SK_TMP/prod-3.out"))" \
  grep -qx 'UNDELIVERED 0' "$SK_TMP/prod-3.out"
sk_check "round 3: no failed deliveries" grep -qx 'ERRORS 0' "$SK_TMP/prod-3.out"
"${AL[@]}" consume "$BOOT" "$TOPIC" "$PARTS" "$SK_TMP/read-3" 2>"$SK_TMP/cons-3.err"
sk_check "round 3: consumer read to the high watermark" test $? -eq 0
sk_check_lines < <("${AL[@]}" verify "$ACKS" "$SK_TMP/read-3" | sed "s/^\(PASS\|FAIL\) /\1 round 3: /")

# clean stop (SIGTERM: exit 0 within 15 s) and start, then the log still
# takes and serves new writes
sigterm_node
sk_check "SIGTERM: node exits 0 (rc $TERM_RC after $TERM_MS ms)" test "$TERM_RC" -eq 0
restart_node
printf 'after-restart\n' | timeout 30 kcat -q -b "$BOOT" -P -t "$TOPIC" -p 0 2>"$SK_TMP/kcat.err"
"${AL[@]}" consume "$BOOT" "$TOPIC" "$PARTS" "$SK_TMP/read-final" 2>"$SK_TMP/cons-final.err" || true
last=$(timeout 30 kcat -q -b "$BOOT" -C -t "$TOPIC" -p 0 -o -1 -e -f '%s\n' 2>>"$SK_TMP/kcat.err")
sk_check "a write after the restarts is readable (got '$last')" test "$last" = after-restart
sk_check_lines < <("${AL[@]}" verify "$ACKS" "$SK_TMP/read-final" | sed -n 's/^\(PASS\|FAIL\) every/\1 after clean restart: every/p')
[ "$SK_FAILS" -eq 0 ] || { tail -n 5 "$SK_TMP"/*.err; sk_dump_logs; }
sk_summary "$NAME"
