#!/usr/bin/env bash
# Issue 6: no acknowledged message is lost through crashes and pauses.
# Three nodes, topic RF=3 with min.insync.replicas=2; a confluent-kafka
# idempotent acks=all producer writes sequence numbers (clients/repl_check.py)
# at REPL_NEMESIS_RATE (500) a second while a nemesis kill -9s, SIGSTOPs (then
# SIGCONTs) and restarts nodes: REPL_NEMESIS_ACTIONS (6) actions, and more
# until REPL_NEMESIS_SECONDS (0) of load have passed, the partition leader at
# least twice, one node down at a time (the next action waits until the ISR
# is full again). The producer stops 2 s after the last action. Afterwards
# a consumer reads the partition to its high watermark: every acknowledged id
# is there exactly once, at its acknowledged offset, in order; no id twice;
# nothing that was never sent; the three replicas end with byte-identical
# segment files.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/repl_lib.sh"
command -v jq >/dev/null || { echo "t_repl_nemesis: jq missing"; exit 1; }
RC="$SK_PY $SK_ROOT/test/integration/clients/repl_check.py"
SECS=${REPL_NEMESIS_SECONDS:-0}
NACTIONS=${REPL_NEMESIS_ACTIONS:-6}
RATE=${REPL_NEMESIS_RATE:-500}
T=nemesis

repl_opts
sk_start_cluster 3 "${REPL_OPTS[@]}"
sk_check "create $T (1 partition, RF 3)" $SK_PY "$SK_ROOT/test/integration/quorum_meta.py" create "$SK_BOOTSTRAP" $T 1 3
L=$(repl_wait_leader 20 $T -1) || sk_fail "no leader for $T"
sk_log "leader of $T-0: node $L, isr $(repl_part isr $T "$L")"

# runs until the SIGTERM after the nemesis (then flushes); the duration is
# only a backstop
$RC produce "$SK_BOOTSTRAP" $T $((SECS + 600)) "$RATE" "$SK_TMP/acked" > "$SK_TMP/producer.out" 2>&1 &
PROD=$!; SK_PIDS+=("$PROD")

# ---- the nemesis ----------------------------------------------------------------
# kill: kill -9, down 3 s, restart; stop: SIGSTOP for 5 s (longer than
# broker.session.timeout.ms: the controller fences the node and moves its
# leaderships) then SIGCONT; pause: SIGSTOP for 1.5 s (shorter: nothing moves,
# the node resumes as it was). One node down at a time: after each action,
# wait (up to 20 s, under load) until all three are back in the ISR.
# The first six actions hit the leader with each kind of fault and the
# followers with a kill and a stop.
ACTIONS=(kill_leader stop_leader kill_follower pause_leader kill_leader stop_follower stop_leader kill_follower)
on_leader=0; step=0; t_start=$SECONDS
victim() {  # leader|follower -> a node id (the leader as the survivors see it)
  local l; l=$(repl_leader $T 1 2 3)
  [ "$l" = -1 ] && l=1
  if [ "$1" = leader ]; then echo "$l"; else echo $(( l % 3 + 1 )); fi
}
isr_full() {  # all three in the ISR as the first answering node sees it
  local i n
  for i in 1 2 3; do
    n=$(repl_part isr $T "$i" | tr ',' '\n' | grep -c .) || continue
    [ "$n" = 3 ]; return
  done
  return 1
}
wait_isr_full() { local t0=$SECONDS; until isr_full; do [ $((SECONDS - t0)) -lt 20 ] || return 1; sleep 0.2; done; }
# the load is flowing (acknowledgements written) before the first fault
t0=$SECONDS; until [ -s "$SK_TMP/acked" ] || [ $((SECONDS - t0)) -ge 20 ]; do sleep 0.2; done
sleep 0.5
while [ "$step" -lt "$NACTIONS" ] || [ $((SECONDS - t_start)) -lt $((SECS - 8)) ]; do
  a=${ACTIONS[$((step % ${#ACTIONS[@]}))]}; step=$((step + 1))
  who=${a#*_}; v=$(victim "$who")
  [ "$who" = leader ] && on_leader=$((on_leader + 1))
  case $a in
    kill_*)
      sk_log "nemesis: kill -9 node $v ($who)"
      sk_kill9_node "$v"; sleep 3
      sk_start_node "$v" "${REPL_OPTS[@]}"
      sk_wait_port "${SK_ADMIN_PORT[v]}" 30 "${SK_NODE_PID[v]}" || sk_fail "node $v did not restart" ;;
    stop_*)
      sk_log "nemesis: SIGSTOP node $v ($who) for 5 s"
      kill -STOP "${SK_NODE_PID[v]}"; sleep 5; kill -CONT "${SK_NODE_PID[v]}" ;;
    pause_*)
      sk_log "nemesis: SIGSTOP node $v ($who) for 1.5 s"
      kill -STOP "${SK_NODE_PID[v]}"; sleep 1.5; kill -CONT "${SK_NODE_PID[v]}" ;;
  esac
  sk_log "nemesis: node $v back; leader now $(repl_leader $T 1 2 3)"
  wait_isr_full || sk_log "nemesis: ISR not full 20 s after the action ($(repl_part isr $T "$(victim leader)"))"
done
sk_log "nemesis done after $step actions ($on_leader on the leader)"
sk_check "the nemesis hit the partition leader at least twice ($on_leader)" test "$on_leader" -ge 2

sleep 2   # load goes on over the last recovery
kill -TERM "$PROD" 2>/dev/null
wait "$PROD"
cat "$SK_TMP/producer.out"
read -r _ SENT _ ACKED _ FAILED _ FATAL _ UNANS < <(grep '^SENT ' "$SK_TMP/producer.out")
sk_check "producer finished (SENT line)" test -n "${SENT:-}"
SENT=${SENT:-0}
sk_log "producer: sent $SENT acked ${ACKED:-?} failed ${FAILED:-?} fatal ${FATAL:-?} unanswered ${UNANS:-?}"

for i in 1 2 3; do kill -CONT "${SK_NODE_PID[i]}" 2>/dev/null; done
L=$(repl_wait_leader 30 $T -1) || sk_fail "no leader for $T after the nemesis"
sk_log "final leader node $L, isr $(repl_part isr $T "$L"), hw $(repl_part high_watermark $T "$L")"
sk_check "consumer read to the high watermark" $RC consume "$SK_BOOTSTRAP" $T "$SK_TMP/read" 60
sk_check_lines < <($RC verify "$SENT" "$SK_TMP/acked" "$SK_TMP/read")

# the replicas converge on the same bytes (no divergence left behind)
leo() { repl_part log_end_offset $T "$1"; }
same_end() { local e; e=$(leo 1); [ -n "$e" ] && [ "$e" != null ] && [ "$(leo 2)" = "$e" ] && [ "$(leo 3)" = "$e" ]; }
t0=$SECONDS; until same_end || [ $((SECONDS - t0)) -ge 30 ]; do sleep 0.2; done
sk_check "all three replicas end at the same offset ($(leo 1)/$(leo 2)/$(leo 3))" same_end
for i in 1 2 3; do sk_stop_node "$i"; done
sum_of() {  # md5 of the partition's segments in order; "none-N" without any
  ls "$SK_TMP/data/node-$1/$T-0/"*.log >/dev/null 2>&1 || { echo "none-$1"; return; }
  cat "$SK_TMP/data/node-$1/$T-0/"*.log | md5sum | cut -d' ' -f1
}
sk_check "the three replicas' segments are byte-identical after a graceful stop" \
  test "$(sum_of 1)" = "$(sum_of 2)" -a "$(sum_of 2)" = "$(sum_of 3)"

# negative control: the checker must notice one acknowledged record gone
if [ -s "$SK_TMP/read" ]; then
  ack1=$(head -n 1 "$SK_TMP/acked" | cut -d' ' -f1)
  grep -v "^$ack1 " "$SK_TMP/read" > "$SK_TMP/read.minus"
  sk_check "control: the checker rejects a lost acknowledged record" \
    bash -c "! $RC verify $SENT $SK_TMP/acked $SK_TMP/read.minus >/dev/null"
fi
sk_summary t_repl_nemesis
