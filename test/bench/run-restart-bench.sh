#!/usr/bin/env bash
# Restart benchmark of issue 22 on a 3-node cluster (127.0.0.1, free ports):
# for each partition count in RBENCH_COUNTS, topics of RBENCH_PER_TOPIC
# partitions (RF 3) are created, then
#  - clean: every node stopped with SIGTERM (3, 2, 1: node 1 ends up leading
#    everything), started again; time from the start until healthy;
#  - kill9: every node killed with SIGKILL at once, started again; same.
# Healthy = every node's admin /v1/health says healthy with nodes_down [],
# 0 under-replicated and 0 leaderless partitions (the image: every
# partition led, ISR = replicas), and an acks=all produce to 3 partitions
# succeeds. Also: graceful stop time per node, VmRSS per partition (sum of
# the three nodes after the restart / partitions), the most repeated log
# line per second, and the CPU the three nodes use while idle (healthy, no
# clients: timers and replica fetches only), as a share of one core per
# node over 10 s. Prints a table; figures are reported, not judged. Exit 1
# only when a step could not run.
# env: SKIFF_BIN_DIR, RBENCH_COUNTS ("1000 10000"), RBENCH_PER_TOPIC (100),
#      RBENCH_BOUND_S (600: give up waiting for healthy)
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
counts=${RBENCH_COUNTS:-1000 10000}
per_topic=${RBENCH_PER_TOPIC:-100}
bound=${RBENCH_BOUND_S:-600}
[ -x "$SK_BIN/skiff" ] || { echo "missing $SK_BIN/skiff (build it with make)"; exit 1; }
command -v jq >/dev/null || { echo "jq not found"; exit 1; }
command -v kcat >/dev/null || { echo "kcat not found"; exit 1; }
OPTS=(--set controller.quorum.fetch.timeout.ms=500 --set controller.quorum.election.timeout.ms=200
      --set broker.heartbeat.interval.ms=500 --set broker.session.timeout.ms=3000
      --set min.insync.replicas=2 --set default.replication.factor=3)

adm() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
healthy() {
  adm "$1" /v1/health | jq -e '.healthy == true and (.nodes_down | length) == 0 and
    .under_replicated_partitions == 0 and .leaderless_partitions == 0' >/dev/null 2>&1
}
all_healthy() { local i; for i in 1 2 3; do healthy "$i" || return 1; done; }
produce_ok() {
  echo x | timeout 30 kcat -P -b "$SK_BOOTSTRAP" -t "$1" -p "$2" -X request.required.acks=-1 \
    -X message.timeout.ms=10000 2>/dev/null
}
# time_to_healthy START_EPOCH_MS -> prints seconds (1 decimal) or "timeout"
time_to_healthy() {
  local t0=$1 now
  while :; do
    now=$(date +%s%3N)
    [ $((now - t0)) -lt $((bound * 1000)) ] || { echo timeout; return 1; }
    if all_healthy && produce_ok rb-0 0 && produce_ok rb-1 1 && produce_ok "rb-$((ntopics - 1))" 0; then
      now=$(date +%s%3N); awk -v d=$((now - t0)) 'BEGIN { printf "%.1f", d / 1000 }'; return 0
    fi
    sleep 0.5
  done
}
start_all() { local i; for i in 1 2 3; do sk_start_node "$i" "${OPTS[@]}"; done
  for i in 1 2 3; do sk_wait_port "${SK_ADMIN_PORT[i]}" 120 "${SK_NODE_PID[i]}" || sk_fail "node $i not up"; done; }
rss_kb() { local i s=0; for i in 1 2 3; do s=$((s + $(awk '/VmRSS/ { print $2 }' "/proc/${SK_NODE_PID[i]}/status"))); done; echo $s; }
worst_rate() {  # from byte offsets OFF[i] to now, ELAPSED seconds -> "count/elapsed"
  local i c worst=0
  for i in 1 2 3; do
    c=$(tail -c +"$((OFF[$i] + 1))" "$SK_TMP/node-$i.log" | sed 's/[0-9][0-9]*/N/g' | sort | uniq -c | sort -rn |
        awk 'NR == 1 { print $1 }')
    [ -n "$c" ] && [ "$c" -gt "$worst" ] && worst=$c
  done
  echo "$worst"
}
declare -A OFF
cpu_ticks() { local i s=0; for i in 1 2 3; do s=$((s + $(awk '{ print $14 + $15 }' "/proc/${SK_NODE_PID[i]}/stat"))); done; echo $s; }
idle_cpu() {  # % of one core per node, over 10 s
  local a b hz; hz=$(getconf CLK_TCK); a=$(cpu_ticks); sleep 10; b=$(cpu_ticks)
  awk -v d=$((b - a)) -v hz="$hz" 'BEGIN { printf "%.1f", d * 100 / hz / 10 / 3 }'
}
mark_logs() { local i; for i in 1 2 3; do OFF[$i]=$(stat -c %s "$SK_TMP/node-$i.log" 2>/dev/null || echo 0); done; }

rows=()
for count in $counts; do
  rm -rf "$SK_TMP/data" "$SK_TMP"/node-*.log
  sk_write_cluster_conf 3
  start_all
  ntopics=$(( (count + per_topic - 1) / per_topic ))
  t0=$(date +%s%3N)
  "$SK_PY" "$SK_ROOT/test/bench/quorum_bench.py" bulk "$SK_BOOTSTRAP" rb "$ntopics" "$per_topic" 3 10 >/dev/null ||
    sk_fail "create of $count partitions failed"
  created=$(time_to_healthy "$t0") || true
  echo "$count partitions: created and healthy in ${created}s"
  stops=""
  for i in 3 2 1; do
    a=$(date +%s%3N); sk_stop_node "$i"; b=$(date +%s%3N); stops+="${stops:+/}$(( (b - a) / 1000 ))"
  done
  mark_logs
  t0=$(date +%s%3N); start_all
  clean=$(time_to_healthy "$t0") || true
  el=$(( ($(date +%s%3N) - t0) / 1000 + 1 ))
  clean_rep=$(worst_rate)
  rss=$(rss_kb)
  idle=$(idle_cpu)
  for i in 1 2 3; do sk_kill9_node "$i"; done
  mark_logs
  t0=$(date +%s%3N); start_all
  k9=$(time_to_healthy "$t0") || true
  el2=$(( ($(date +%s%3N) - t0) / 1000 + 1 ))
  k9_rep=$(worst_rate)
  rows+=("$(printf '%-10s %-12s %-14s %-12s %-12s %-10s %-16s %s' "$count" "${clean}" "${stops}" "${k9}" \
    "$(awk -v r="$rss" -v c="$count" 'BEGIN { printf "%.1f", r / c }')" "$idle" \
    "$clean_rep/${el}s" "$k9_rep/${el2}s")")
  for i in 1 2 3; do sk_kill9_node "$i"; done
done
echo
echo "restart bench (3 nodes, RF 3, $per_topic partitions per topic; times from the start to healthy + acks=all)"
printf '%-10s %-12s %-14s %-12s %-12s %-10s %-16s %s\n' partitions clean_s stop_s_3/2/1 kill9_s rss_kb/part idle_cpu% \
  "top_line(clean)" "top_line(kill9)"
for r in "${rows[@]}"; do echo "$r"; done
