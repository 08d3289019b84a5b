#!/usr/bin/env bash
# Issue 22: a 3-node cluster with over a thousand partitions (RF 3) stopped
# cleanly and started again must come back healthy. Stopping nodes 3, 2, 1
# in that order leaves node 1 leading every partition, so each follower
# asks all of them from one leader at once. Before the fix the answer to
# such a fetch (~1,000 partitions) failed to decode ("bad replica fetch
# answer ... out of memory") and the same partitions never caught up, and
# the leader sent one AlterPartition per partition, overrunning its
# controller connection ("AlterPartition not sent (no controller)" hundreds
# of times a second).
# Checks: every node's /v1/health healthy with no under-replicated or
# leaderless partition within RESTART_BOUND_S; an acks=all produce to a few
# partitions succeeds; no "out of memory" fetch answer; no log line (digits
# ignored) written more than LINE_RATE_MAX times a second on average.
# env: RESTART_TOPICS (12) x RESTART_PARTS (100), RESTART_BOUND_S (40)
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/repl_lib.sh"
topics=${RESTART_TOPICS:-12}
parts=${RESTART_PARTS:-100}
bound=${RESTART_BOUND_S:-40}
LINE_RATE_MAX=20
command -v jq >/dev/null || sk_fail "jq not found"
command -v kcat >/dev/null || sk_fail "kcat not found"

OPTS=(--set controller.quorum.fetch.timeout.ms=500 --set controller.quorum.election.timeout.ms=200
      --set broker.heartbeat.interval.ms=500 --set broker.session.timeout.ms=3000
      --set min.insync.replicas=2 --set default.replication.factor=3)

sk_start_cluster 3 "${OPTS[@]}"
sk_log "creating $topics x $parts partitions (RF 3)"
t0=$SECONDS
"$SK_PY" "$SK_ROOT/test/bench/quorum_bench.py" bulk "$SK_BOOTSTRAP" rs "$topics" "$parts" 3 4 >/dev/null ||
  sk_fail "create failed"
sk_log "created in $((SECONDS - t0)) s"

# healthy NODE -> 0 when the node's view is healthy (no node down, every
# partition led, every ISR full)
healthy() {
  repl_adm "$1" /v1/health | jq -e '.healthy == true and (.nodes_down | length) == 0 and
    .under_replicated_partitions == 0 and .leaderless_partitions == 0' >/dev/null 2>&1
}
wait_healthy() {  # SECONDS -> prints the seconds it took; 1 on timeout
  local t0=$SECONDS i ok
  while [ $((SECONDS - t0)) -lt "$1" ]; do
    ok=1
    for i in 1 2 3; do healthy "$i" || { ok=0; break; }; done
    [ "$ok" = 1 ] && { echo $((SECONDS - t0)); return 0; }
    sleep 0.5
  done
  return 1
}
wait_healthy 60 >/dev/null || sk_fail "not healthy after the create"
sk_log "healthy after the create ($((SECONDS - t0)) s)"

# clean stop, 3 then 2 then 1: node 1 ends up leading everything
for i in 3 2 1; do t1=$SECONDS; sk_stop_node "$i"; sk_log "node $i stopped in $((SECONDS - t1)) s"; done
sk_log "stopped cleanly; starting again"
declare -A OFF
for i in 1 2 3; do OFF[$i]=$(stat -c %s "$SK_TMP/node-$i.log"); done
start=$SECONDS
for i in 1 2 3; do sk_start_node "$i" "${OPTS[@]}"; done
for i in 1 2 3; do sk_wait_port "${SK_ADMIN_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i admin port not up"; done
if took=$(wait_healthy "$bound"); then
  sk_log "healthy $((SECONDS - start)) s after the start"
  sk_check "healthy (every partition led, ISR full) within ${bound}s of the restart" true
else
  for i in 1 2 3; do echo "node $i: $(repl_adm "$i" /v1/health)"; done
  sk_check "healthy (every partition led, ISR full) within ${bound}s of the restart" false
fi
: "$took"

produce_ok() {  # TOPIC PARTITION
  local err
  err=$(echo "restart-check" | timeout 20 kcat -P -b "$SK_BOOTSTRAP" -t "$1" -p "$2" -X request.required.acks=-1 \
        -X message.timeout.ms=15000 2>&1 >/dev/null)
  [ $? -eq 0 ] && [ -z "$err" ] || { echo "  produce $1/$2: $err"; return 1; }
}
for tp in "rs-0 0" "rs-1 $((parts / 2))" "rs-$((topics - 1)) $((parts - 1))"; do
  # shellcheck disable=SC2086
  sk_check "acks=all produce to ${tp% *}/${tp#* }" produce_ok $tp
done

elapsed=$((SECONDS - start)); [ "$elapsed" -gt 0 ] || elapsed=1
oom=0; worst=0; worst_line=""
for i in 1 2 3; do
  tail -c +"$((OFF[$i] + 1))" "$SK_TMP/node-$i.log" > "$SK_TMP/after-$i.log"
  n=$(grep -c "fetch answer.*out of memory" "$SK_TMP/after-$i.log"); oom=$((oom + n))
  read -r c l < <(sed 's/[0-9][0-9]*/N/g' "$SK_TMP/after-$i.log" | sort | uniq -c | sort -rn | head -1)
  if [ -n "${c:-}" ] && [ "$c" -gt "$worst" ]; then worst=$c; worst_line="node $i: $l"; fi
done
sk_log "most repeated line: $worst times in ${elapsed}s: $worst_line"
sk_check "no fetch answer failed with out of memory (found $oom)" test "$oom" -eq 0
sk_check "no line repeated more than $LINE_RATE_MAX/s (worst $worst in ${elapsed}s)" \
  test "$worst" -le $((LINE_RATE_MAX * elapsed))
sk_summary t_repl_restart_scale
