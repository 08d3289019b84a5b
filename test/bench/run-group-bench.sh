#!/usr/bin/env bash
# Consumer-group benchmark of issue 7 against one skiff node (free loopback
# ports, lib.sh), a BENCH_GROUP_PARTITIONS-partition topic:
#  (a) rebalance: BENCH_GROUP_MEMBERS confluent-kafka consumers join a fresh
#      group; time from the first subscribe until every member holds a
#      non-empty assignment covering all partitions; BENCH_GROUP_ROUNDS
#      fresh groups (median, max) after one warm-up group, reported apart
#      (the first group creates __consumer_offsets);
#  (b) offset commits: BENCH_GROUP_MEMBERS confluent-kafka consumers (one
#      process each) commit their partitions synchronously for
#      BENCH_GROUP_COMMIT_S: commits/s total and per member, p50/p99 latency;
#  (c) the same commit load with kafka-python;
#  (d) BENCH_GROUP_KAFKA_DELAY_ROUNDS (2) more fresh groups after a restart of
#      the node with Kafka's default group.initial.rebalance.delay.ms=3000
#      (what a default-configured cluster shows; 0 skips it);
# plus the pure core's figures (build/test/bench_group) when it is built.
# Prints a table, then the raw JSON lines. No timing assertions: exit 0
# when every phase completed (all members assigned, commits made).
#
# group.initial.rebalance.delay.ms is BENCH_GROUP_DELAY_MS (0: the figure is
# the protocol's own time; Kafka's default 3000 would add ~3 s per round).
#
# env: SKIFF_BIN_DIR (bin/), SKIFF_TEST_DIR (build/test),
#      BENCH_GROUP_MEMBERS (10), BENCH_GROUP_PARTITIONS (20),
#      BENCH_GROUP_ROUNDS (5), BENCH_GROUP_COMMIT_S (10),
#      BENCH_GROUP_DELAY_MS (0), BENCH_GROUP_KAFKA_PYTHON (1; 0 skips (c)),
#      BENCH_GROUP_KAFKA_DELAY_ROUNDS (2)
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
members=${BENCH_GROUP_MEMBERS:-10}
partitions=${BENCH_GROUP_PARTITIONS:-20}
rounds=${BENCH_GROUP_ROUNDS:-5}
commit_s=${BENCH_GROUP_COMMIT_S:-10}
delay_ms=${BENCH_GROUP_DELAY_MS:-0}
kafka_delay_ms=3000
kafka_delay_rounds=${BENCH_GROUP_KAFKA_DELAY_ROUNDS:-2}
test_dir=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}
topic=gbench
status=0
res=$SK_TMP/results.jsonl
: >"$res"

command -v jq >/dev/null || { echo "jq not found"; exit 1; }
"$SK_PY" -c 'import confluent_kafka' 2>/dev/null || { echo "confluent_kafka missing for $SK_PY"; exit 1; }

core_out=""
if [ -x "$test_dir/bench_group" ]; then
  sk_log "pure core: $test_dir/bench_group"
  core_out=$("$test_dir/bench_group" 2>&1) || { echo "bench_group failed:"; echo "$core_out"; status=1; }
fi

if [ ! -x "$SK_BIN/skiff" ]; then
  echo "skiff not built ($SK_BIN/skiff); core figures only:"
  echo "$core_out"
  exit "$status"
fi

sk_start_cluster 1 --set group.initial.rebalance.delay.ms="$delay_ms"
B=127.0.0.1:${SK_KAFKA_PORT[1]}
"$SK_PY" - "$B" "$topic" "$partitions" <<'PY' || sk_fail "create topic $topic"
import sys
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({'bootstrap.servers': sys.argv[1]})
a.create_topics([NewTopic(sys.argv[2], int(sys.argv[3]), 1)])[sys.argv[2]].result(timeout=20)
PY

# phase NAME MODE ARGS... -> group-bench.py MODE $B $topic ARGS..., its JSON
# lines appended to $res; a failed phase makes the whole bench fail.
phase() {
  local name=$1 mode=$2 t0=$SECONDS; shift 2
  sk_log "$name"
  timeout 180 "$SK_PY" "$SK_ROOT/test/bench/group-bench.py" "$mode" "$B" "$topic" "$@" \
    >>"$res" 2>>"$SK_TMP/bench.err" || {
    echo "$name failed; stderr:" >&2; tail -n 20 "$SK_TMP/bench.err" >&2; status=1; }
  sk_log "$name: $((SECONDS - t0)) s"
}
phase "(a) rebalance: $members members, $rounds fresh groups + warm-up" rebalance "$partitions" "$members" "$rounds" "$delay_ms" 1
phase "(b) commits: $members confluent-kafka consumers, ${commit_s} s" commit confluent "$members" "$commit_s"
if [ "${BENCH_GROUP_KAFKA_PYTHON:-1}" = 1 ] && "$SK_PY" -c 'import kafka' 2>/dev/null; then
  phase "(c) commits: $members kafka-python consumers, ${commit_s} s" commit kafka-python "$members" "$commit_s"
fi
alive() { kill -0 "${SK_NODE_PID[1]}" 2>/dev/null || { echo "skiff died during the bench" >&2; sk_dump_logs; status=1; }; }
alive
sk_stop_node 1
if [ "$kafka_delay_rounds" -gt 0 ]; then
  # same config and data (the topic is kept), only the delay differs
  sk_start_node 1 --set group.initial.rebalance.delay.ms="$kafka_delay_ms"
  if sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}"; then
    phase "(d) rebalance with delay $kafka_delay_ms ms: $kafka_delay_rounds fresh groups" \
      rebalance "$partitions" "$members" "$kafka_delay_rounds" "$kafka_delay_ms" 0
    alive
  else
    echo "restart with delay $kafka_delay_ms failed" >&2; sk_dump_logs; status=1
  fi
  sk_stop_node 1
fi

ms() { awk -v s="$1" 'BEGIN { if (s == "" || s == "null") print "-"; else printf "%.0f", s * 1000 }'; }
# reb_row DELAY_MS -> "median M  min M  max M  over N groups" of the
# non-warm-up rounds run with that delay (ms)
reb_row() {
  local reb med=- max=- min=-
  mapfile -t reb < <(jq -r --argjson d "$1" \
    'select(.mode == "rebalance" and .delay_ms == $d and (.warmup | not)) | .seconds // "null"' "$res" | sort -g)
  if [ "${#reb[@]}" -gt 0 ]; then
    med=$(ms "${reb[$(((${#reb[@]} - 1) / 2))]}"); max=$(ms "${reb[${#reb[@]} - 1]}"); min=$(ms "${reb[0]}")
  fi
  echo "median $med  min $min  max $max  over ${#reb[@]} groups"
}
warm=$(jq -r 'select(.mode == "rebalance" and .warmup) | .seconds' "$res")
echo
echo "skiff consumer groups: 1 node, topic $topic with $partitions partitions, $members members," \
  "group.initial.rebalance.delay.ms=$delay_ms"
printf '%-38s %s\n' "rebalance, fresh group (ms)" "$(reb_row "$delay_ms"); warm-up group $(ms "$warm")"
[ "$kafka_delay_rounds" -gt 0 ] &&
  printf '%-38s %s\n' "... with delay $kafka_delay_ms ms (Kafka's)" "$(reb_row "$kafka_delay_ms")"
printf '%-24s %10s %22s %8s %8s %7s\n' "commit load" "commits/s" "per member min/avg/max" "p50 ms" "p99 ms" errors
jq -r 'select(.mode == "commit") | [.client, .commits_per_s, .per_member_min, .per_member_mean,
  .per_member_max, .p50_ms, .p99_ms, .errors] | @tsv' "$res" |
  while IFS=$'\t' read -r c tot mn avg mx p50 p99 err; do
    printf '%-24s %10.0f %22s %8.2f %8.2f %7s\n' "$c x$members, sync" "$tot" \
      "$(printf '%.0f/%.0f/%.0f' "$mn" "$avg" "$mx")" "$p50" "$p99" "$err"
  done
if [ -n "$core_out" ]; then
  echo "pure core (bench_group, no I/O):"; mapfile -t core_lines <<<"$core_out"; printf '  %s\n' "${core_lines[@]}"
fi
sed 's/^/# /' "$res"
exit "$status"
