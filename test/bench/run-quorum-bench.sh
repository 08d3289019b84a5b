#!/usr/bin/env bash
# Quorum benchmarks of issue 5 on a 3-node cluster (127.0.0.1, free ports):
#  - controller failover: QBENCH_KILLS x kill -9 of the raft leader; time from
#    the kill until a CreateTopics through a survivor succeeds (a new leader
#    committed a record). The killed node is restarted and the cluster waits
#    for 3 unfenced brokers before the next kill. Median and max.
#  - metadata write latency: QBENCH_CREATES sequential single-topic creates
#    sent to the active controller; p50/p99/max.
#  - bulk: QBENCH_TOPICS topics x QBENCH_PARTITIONS partitions (RF
#    QBENCH_RF), QBENCH_PER_REQUEST topics per CreateTopics; time, topics/s.
#  - image memory: VmRSS growth of the controller process over the bulk create
#    per partition (includes each node's partition logs and raft log buffers,
#    so an upper bound), next to bench_image's in-process heap figure.
# Prints a table; figures are reported, not judged. Exit 1 only when a step
# could not run (cluster not up, a create failed).
#
# Quorum timeouts default to the fast values of t_quorum_cluster.sh (fetch
# 500 ms, election 200 ms); Kafka's defaults (2000/1000) via the env.
# env: SKIFF_BIN_DIR (bin/), SKIFF_TEST_DIR (build/test), QBENCH_KILLS (20),
#      QBENCH_CREATES (200), QBENCH_TOPICS (1000), QBENCH_PARTITIONS (10),
#      QBENCH_RF (3), QBENCH_PER_REQUEST (10), QBENCH_FETCH_TIMEOUT_MS (500),
#      QBENCH_ELECTION_TIMEOUT_MS (200)
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
QB="$SK_PY $SK_ROOT/test/bench/quorum_bench.py"
bench_image=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/bench_image
kills=${QBENCH_KILLS:-20}
creates=${QBENCH_CREATES:-200}
topics=${QBENCH_TOPICS:-1000}
parts=${QBENCH_PARTITIONS:-10}
rf=${QBENCH_RF:-3}
per_req=${QBENCH_PER_REQUEST:-10}
fetch_ms=${QBENCH_FETCH_TIMEOUT_MS:-500}
elect_ms=${QBENCH_ELECTION_TIMEOUT_MS:-200}
[ -x "$SK_BIN/skiff" ] || { echo "missing $SK_BIN/skiff (build it with make)"; exit 1; }
command -v jq >/dev/null || { echo "jq not found"; exit 1; }

OPTS=(--set controller.quorum.fetch.timeout.ms="$fetch_ms" --set controller.quorum.election.timeout.ms="$elect_ms"
      --set broker.heartbeat.interval.ms=500 --set broker.session.timeout.ms=3000)
sk_write_cluster_conf 3
for i in 1 2 3; do sk_start_node "$i" "${OPTS[@]}"; done
for i in 1 2 3; do sk_wait_port "${SK_ADMIN_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i admin port not up"; done

adm() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
# agree: every node names the same controller and sees 3 unfenced brokers
agree() {
  local i l="" x
  for i in 1 2 3; do
    x=$(adm "$i" /v1/cluster | jq -r '"\(.controller_id) \([.brokers[] | select(.fenced == false)] | length)"' 2>/dev/null)
    [ -n "$x" ] && [ "${x%% *}" != -1 ] && [ "${x##* }" = 3 ] || return 1
    [ -z "$l" ] && l=${x%% *}
    [ "${x%% *}" = "$l" ] || return 1
  done
  echo "$l"
}
wait_agree() {  # wait_agree SECONDS -> prints the leader
  local t=0 l
  while ! l=$(agree); do sleep 0.1; t=$((t + 1)); [ "$t" -lt $(($1 * 10)) ] || return 1; done
  echo "$l"
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# median and max of the numbers on stdin (lower median for an even count)
med_max() { sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%s %s", v[int((NR + 1) / 2)], v[NR]; else printf "- -" }'; }

L=$(wait_agree 30) || sk_fail "cluster did not agree on a controller with 3 unfenced brokers"
sk_log "3 nodes up, controller node $L"

# ---- controller failover --------------------------------------------------------
fo=$SK_TMP/failover.txt
: >"$fo"
for ((k = 1; k <= kills; k++)); do
  L=$(wait_agree 30) || sk_fail "no agreement before kill $k"
  surv=""
  for i in 1 2 3; do [ "$i" = "$L" ] || surv+="${surv:+,}127.0.0.1:${SK_KAFKA_PORT[i]}"; done
  out=$($QB failover "${SK_NODE_PID[$L]}" "$surv" "fo-$k" 30) || sk_fail "kill $k: no create after the failover ($out)"
  wait "${SK_NODE_PID[$L]}" 2>/dev/null
  echo "${out#ms=}" >>"$fo"
  sk_start_node "$L" "${OPTS[@]}"
  sk_wait_port "${SK_ADMIN_PORT[$L]}" 30 "${SK_NODE_PID[$L]}" || sk_fail "node $L did not restart"
done
read -r fo_med fo_max < <(med_max <"$fo")
sk_log "failover ms: $(tr '\n' ' ' <"$fo")"

# ---- write latency and bulk create, sent to the active controller -----------------
L=$(wait_agree 30) || sk_fail "no agreement before the create benchmarks"
ctl="127.0.0.1:${SK_KAFKA_PORT[$L]}"
lat=$($QB latency "$ctl" lat "$creates") || sk_fail "latency run failed ($lat)"
sleep 1   # let the followers' fetches settle before the RSS baseline
rss0=$(rss_kb "${SK_NODE_PID[$L]}")
all="$SK_BOOTSTRAP"
ctl_pid_before=${SK_NODE_PID[$L]}
ep0=$(adm "$L" /v1/cluster | jq -r .leader_epoch)
bulk_t0=$(date +%s%N)
bulk=$($QB bulk "$all" bulk "$topics" "$parts" "$rf" "$per_req") || sk_fail "bulk create failed ($bulk)"
# logs are created off the loop after the commit: wait until every node has
# every bulk partition directory (RF copies of each partition in all)
want=$((topics * parts * rf)) got=0
for ((w = 0; w < 1200; w++)); do
  got=$(find "$SK_TMP"/data/node-*/ -maxdepth 2 -type d -name 'bulk-*' 2>/dev/null | wc -l)
  [ "$got" -ge "$want" ] && break
  sleep 0.1
done
bulk_disk_s=$(awk -v a="$bulk_t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
[ "$got" -ge "$want" ] || bulk_disk_s="(only $got of $want logs after 120 s)"
sleep 1
rss1=$(rss_kb "$ctl_pid_before")
L2=$(wait_agree 30) || L2=-1
ep1=$(adm "${L2/#-1/$L}" /v1/cluster | jq -r .leader_epoch)
img_line=""
[ -x "$bench_image" ] && img_line=$("$bench_image" | grep 'image heap:' | sed 's/^ *image heap: //')

kv() { sed -n "s/.*\b$2=\([^ ]*\).*/\1/p" <<<"$1"; }
npart=$((topics * parts))
printf '\n%-52s %s\n' "quorum benchmark (3 nodes, fetch ${fetch_ms} ms, election ${elect_ms} ms)" "value"
printf '%-52s %s\n' "failover: kill -9 leader -> create ok, median ms" "$fo_med"
printf '%-52s %s\n' "failover: max ms (over $kills kills)" "$fo_max"
printf '%-52s %s\n' "topic create latency p50 ms ($creates creates)" "$(kv "$lat" p50_ms)"
printf '%-52s %s\n' "topic create latency p99 ms" "$(kv "$lat" p99_ms)"
printf '%-52s %s\n' "topic create latency max ms" "$(kv "$lat" max_ms)"
printf '%-52s %s\n' "create $topics topics x $parts partitions (RF $rf), s" "$(kv "$bulk" s)"
printf '%-52s %s\n' "  topics/s" "$(kv "$bulk" topics_per_s)"
printf '%-52s %s\n' "  until every replica's log exists on disk, s" "$bulk_disk_s"
printf '%-52s %s\n' "  batches re-sent after a controller change" "$(kv "$bulk" retries) (controller $L before, $L2 after)"
printf '%-52s %s\n' "  raft epoch before -> after the bulk create" "$ep0 -> $ep1"
printf '%-52s %s\n' "controller VmRSS before -> after, kB" "$rss0 -> $rss1"
printf '%-52s %s\n' "controller RSS growth per partition, bytes" "$(((rss1 - rss0) * 1024 / npart))"
printf '%-52s %s\n' "bench_image in-process heap per partition" "${img_line:-(bench_image not built)}"
