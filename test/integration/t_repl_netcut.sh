#!/usr/bin/env bash
# Issue 6: network cut between a partition leader and the rest of the
# cluster while clients still reach it. Every node's Kafka and controller
# listener is reached by its peers through test/tools/tcp_proxy.py, which
# knows which skiff process opened each connection; "cut L" closes and
# refuses every node<->node connection of node L (replica fetches, raft,
# heartbeats, AlterPartition) but never a client's.
#   1. RF=3, min.insync.replicas=2: acks=all writes are acknowledged and all
#      three logs reach the same end.
#   2. cut the leader L: acks=all Produce sent straight to L is never
#      acknowledged (errors / time-outs), yet L appends it (a tail nobody
#      else has); the controller moves leadership to another node N, where
#      acks=all writes are acknowledged again.
#   3. heal: L follows N, truncates its unreplicated tail, catches up.
#   4. cut a follower instead: N drops it from the ISR, acks=all writes go on
#      with two replicas; after the heal it catches up and rejoins the ISR.
#   Finally all three logs end identical (same end offset, same bytes after a
#   graceful stop), every acknowledged message is read back once, in order,
#   and none of L's unacknowledged tail is left.
# The leader's connections are reset (REPL_NETCUT_MODE=cut, default) or
# black-holed (REPL_NETCUT_MODE=hole: silent, peers must time out; see
# t_repl_netcut_hole.sh); the follower cut always resets.
# REPL_NETCUT_CONTROLLER=1 makes the cut leader the active controller as well.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/repl_lib.sh"
command -v jq >/dev/null || { echo "t_repl_netcut: jq missing"; exit 1; }
RC="$SK_PY $SK_ROOT/test/integration/clients/repl_check.py"
T=netcut
# cut: the leader's peer connections are reset; hole: they go silent and
# peers must time out (test/integration/t_repl_netcut_hole.sh)
MODE=${REPL_NETCUT_MODE:-cut}

repl_opts
repl_proxy_cluster 3
for i in 1 2 3; do repl_start_node "$i" "${REPL_OPTS[@]}"; done
for i in 1 2 3; do
  sk_wait_port "${SK_KAFKA_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i kafka port not up"
  sk_wait_port "${SK_ADMIN_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i admin port not up"
done
sk_check "create $T (1 partition, RF 3)" $SK_PY "$SK_ROOT/test/integration/quorum_meta.py" create "$SK_BOOTSTRAP" $T 1 3 30
L=$(repl_wait_leader 20 $T -1) || sk_fail "no leader for $T"

leo() { repl_part log_end_offset $T "$1"; }
same_end() {  # every node in $@ has the same log end offset as node $1, and > 0
  local i e; e=$(leo "$1")
  case $e in ''|null|0) return 1 ;; esac
  for i in "${@:2}"; do [ "$(leo "$i")" = "$e" ] || return 1; done
}
wait_for() {  # wait_for SECS cmd... -> polls every 0.2 s
  local t0=$SECONDS
  until "${@:2}"; do [ $((SECONDS - t0)) -lt "$1" ] || return 1; sleep 0.2; done
}

# ---- 1. all in sync ---------------------------------------------------------------
$RC produce "$SK_BOOTSTRAP" $T 3 300 "$SK_TMP/acked" > "$SK_TMP/prod1.out" 2>&1
read -r _ SENT1 _ ACKED1 _ < <(grep '^SENT ' "$SK_TMP/prod1.out")
sk_log "phase 1: sent ${SENT1:-?} acked ${ACKED1:-?} (leader node $L)"
sk_check "phase 1: acks=all writes acknowledged (${ACKED1:-0})" test "${ACKED1:-0}" -gt 0
sk_check "phase 1: all three logs reach the same end ($(leo 1)/$(leo 2)/$(leo 3))" wait_for 20 same_end 1 2 3
st=$(repl_proxy status)
sk_log "proxy: $st"
sk_check "inter-broker traffic runs through the proxy ($st)" bash -c "[[ '$st' =~ inter=[1-9] ]]"
L=$(repl_leader $T "$L")
others=(); for i in 1 2 3; do [ "$i" = "$L" ] || others+=("$i"); done
boot_others="127.0.0.1:${SK_KAFKA_PORT[${others[0]}]},127.0.0.1:${SK_KAFKA_PORT[${others[1]}]}"

# ---- 2. cut the leader off ----------------------------------------------------------
ctrl() { repl_adm "$1" /v1/quorum | jq -r '.leader_id // -1' 2>/dev/null || echo -1; }
# REPL_NETCUT_CONTROLLER=1: make the partition leader the active controller
# too: pause the third node (SIGSTOP, under 3 s: no fencing) and resign the
# quorum leadership, so that only L can collect a majority; at most 3 tries.
if [ "${REPL_NETCUT_CONTROLLER:-0}" = 1 ]; then
  for ((k = 0; k < 3; k++)); do
    C=$(ctrl "$L"); [ "$C" = "$L" ] && break
    [ "$C" -ge 1 ] 2>/dev/null || { sleep 0.5; continue; }
    X=1; while [ "$X" = "$L" ] || [ "$X" = "$C" ]; do X=$((X + 1)); done
    kill -STOP "${SK_NODE_PID[X]}"
    curl -s --max-time 2 -X POST "127.0.0.1:${SK_ADMIN_PORT[$C]}/v1/quorum/resign" >/dev/null
    t0=$SECONDS; while [ "$(ctrl "$L")" != "$L" ] && [ $((SECONDS - t0)) -lt 2 ]; do sleep 0.05; done
    kill -CONT "${SK_NODE_PID[X]}"
    sk_log "node $C resigned the quorum leadership with node $X paused: controller now $(ctrl "$L")"
    sleep 0.5
  done
  sk_check "the partition leader $L is the active controller too ($(ctrl "$L"))" test "$(ctrl "$L")" = "$L"
  sk_check "all three logs still end together" wait_for 20 same_end 1 2 3
fi
pre_cut=$(leo "$L")
C=$(repl_adm "$L" /v1/cluster | jq -r .controller_id 2>/dev/null)
sk_log "partition leader $L; active controller $C$([ "$C" = "$L" ] && echo ' (the same node: its peers must elect a new one)')"
sk_log "cut node $L (leader) from its peers: $(repl_proxy "$MODE" "$L")"
# through L's advertised (proxy) address, as any client would: the proxy
# must let clients through to the cut-off node. In the background: its four
# requests wait out their 2 s timeouts one after the other (8 s in all, past
# replica.lag.time.max.ms, so L has tried to shrink its ISR by the last one)
# while the survivors elect a new leader and take writes.
$RC rawcut "127.0.0.1:${PROXY_KAFKA[$L]}" $T 4 2000 > "$SK_TMP/rawcut.out" 2>&1 &
RAW1=$!; SK_PIDS+=("$RAW1")
N=$(repl_wait_leader 30 $T "$L" "${others[@]}")
sk_log "survivors name node $N leader (isr $(repl_part isr $T "$N"))"
sk_check "the controller moved leadership off the cut-off node (new leader $N)" test "$N" != -1 -a "$N" != "$L"
sk_log "old leader $L: log end $(leo "$L"), new leader $N: log end $(leo "$N")"
# more straight-to-L writes now that it is deposed in the others' eyes, at
# the same time as acks=all writes through the survivors
$RC rawcut "127.0.0.1:${SK_KAFKA_PORT[$L]}" $T 2 1000 > "$SK_TMP/rawcut2.out" 2>&1 &
RAW2=$!; SK_PIDS+=("$RAW2")
$RC produce "$boot_others" $T 3 300 "$SK_TMP/acked" "${SENT1:-0}" > "$SK_TMP/prod2.out" 2>&1
wait "$RAW1" "$RAW2"
read -r _ RAW_ACKED _ RAW_ERRS _ RAW_CLOSED < <(grep '^ACKED ' "$SK_TMP/rawcut.out")
sk_log "acks=all Produce straight to the cut-off leader: acked ${RAW_ACKED:-?} errors ${RAW_ERRS:-?} closed ${RAW_CLOSED:-?}; once deposed: $(cat "$SK_TMP/rawcut2.out")"
sk_check "a client reaches the cut-off leader through the proxy (4 answers, ${RAW_CLOSED:-?} connections lost)" \
  test "${RAW_CLOSED:-1}" = 0 -a "${RAW_ERRS:--}" != -
sk_check "the cut-off leader acknowledges no acks=all write (acked ${RAW_ACKED:-?}, errors ${RAW_ERRS:-?})" \
  test "${RAW_ACKED:-1}" = 0
tail_leo=$(leo "$L")
read -r _ SENT2 _ ACKED2 _ < <(grep '^SENT ' "$SK_TMP/prod2.out")
sk_log "phase 2 (cut, via the survivors): sent ${SENT2:-?} acked ${ACKED2:-?}; old leader log end $tail_leo, new leader $(leo "$N")"
sk_check "acks=all writes acknowledged by the new leader during the cut (${ACKED2:-0})" test "${ACKED2:-0}" -gt 0
sk_check "the old leader appended what it could not acknowledge (log end $pre_cut -> $tail_leo)" \
  test "${tail_leo:-0}" -gt "${pre_cut:-0}"

# ---- 3. heal ------------------------------------------------------------------------------
sk_log "heal: $(repl_proxy heal)"
follows() { [ "$(repl_part leader $T "$L")" = "$N" ]; }
sk_check "old leader $L learns that node $N leads" wait_for 30 follows
sk_check "after the heal all three logs end at the same offset ($(leo 1)/$(leo 2)/$(leo 3))" wait_for 30 same_end "$N" 1 2 3
isr3() { [ "$(repl_part isr $T "$N" | tr ',' '\n' | wc -l)" = 3 ]; }
sk_check "old leader back in the ISR ($(repl_part isr $T "$N"))" wait_for 30 isr3
sk_log "log ends: $(leo 1)/$(leo 2)/$(leo 3); old leader's tail was $tail_leo"

# ---- 4. cut a follower (connections reset): the ISR shrinks, acks=all goes on ----
F=1; while [ "$F" = "$L" ] || [ "$F" = "$N" ]; do F=$((F + 1)); done
sk_log "cut follower $F: $(repl_proxy cut "$F")"
# the producer starts at once: F cannot fetch, so nothing is acknowledged
# before the leader has dropped F from the ISR
$RC produce "127.0.0.1:${SK_KAFKA_PORT[$N]},127.0.0.1:${SK_KAFKA_PORT[$L]}" $T 3 300 "$SK_TMP/acked" "${SENT2:-0}" \
  > "$SK_TMP/prod3.out" 2>&1 &
PROD3=$!; SK_PIDS+=("$PROD3")
isr_without_f() { ! repl_part isr $T "$N" | tr ',' '\n' | grep -qx "$F"; }
sk_check "the leader drops cut-off follower $F from the ISR ($(repl_part isr $T "$N"))" wait_for 30 isr_without_f
wait "$PROD3"
read -r _ SENT3 _ ACKED3 _ < <(grep '^SENT ' "$SK_TMP/prod3.out")
sk_check "acks=all goes on with 2 of 3 in the ISR (acked ${ACKED3:-0} of ${SENT3:-?})" test "${ACKED3:-0}" -gt 0
sk_log "heal: $(repl_proxy heal)"
sk_check "follower $F catches up ($(leo 1)/$(leo 2)/$(leo 3))" wait_for 30 same_end "$N" 1 2 3
sk_check "follower $F back in the ISR" wait_for 30 isr3
SENT2=${SENT3:-${SENT2:-0}}

sk_check "consumer read to the high watermark" $RC consume "$boot_others" $T "$SK_TMP/read" 30
sk_check_lines < <($RC verify "${SENT2:-0}" "$SK_TMP/acked" "$SK_TMP/read")

# the same bytes on every replica (graceful stop flushes; a byte compare of
# the segment files shows the old leader's tail is gone, not just hidden)
for i in 1 2 3; do sk_stop_node "$i"; done
sum_of() {  # md5 of the partition's segments in order; "none-N" without any
  ls "$SK_TMP/data/node-$1/$T-0/"*.log >/dev/null 2>&1 || { echo "none-$1"; return; }
  cat "$SK_TMP/data/node-$1/$T-0/"*.log | md5sum | cut -d' ' -f1
}
for i in "${others[@]}" "$L"; do
  [ "$i" = "$N" ] && continue
  sk_check "node $i's segments are byte-identical to the new leader $N's" test "$(sum_of "$N")" = "$(sum_of "$i")"
done
sk_summary t_repl_netcut
