#!/usr/bin/env bash
# Tests test/bench/run-group-bench.sh itself, small: 3 members on a 6-partition
# topic, 1 round (+1 with the 3 s initial delay), 1 s of commits. (1) against skiff: exit 0, the rebalance
# row has numbers for every column, both commit rows have commits/s > 0 and
# 0 errors, the JSON lines are there; (2) without a skiff binary: says so,
# prints only the core figures, exits 0 (run meanwhile (1)). Takes ~20 s.
. "$(dirname "$0")/lib.sh"
bench=$SK_ROOT/test/bench/run-group-bench.sh
command -v jq >/dev/null || { echo "jq not found"; exit 1; }
"$SK_PY" -c 'import confluent_kafka, kafka' 2>/dev/null || { echo "t_group_bench: python clients missing"; exit 1; }
export BENCH_GROUP_MEMBERS=3 BENCH_GROUP_PARTITIONS=6 BENCH_GROUP_ROUNDS=1 BENCH_GROUP_COMMIT_S=1 \
  BENCH_GROUP_KAFKA_DELAY_ROUNDS=1

# (2) runs meanwhile (1): it starts no node, only the pure core's figures
sk_log "no skiff binary (in the background)"
mkdir -p "$SK_TMP/nobin"
SKIFF_BIN_DIR=$SK_TMP/nobin timeout 150 bash "$bench" >"$SK_TMP/nobin.txt" 2>&1 &
nobin_pid=$!

sk_log "small run against skiff"
out=$SK_TMP/run.txt
timeout 150 bash "$bench" >"$out" 2>&1; rc=$?
cat "$out"
sk_check "exit 0" [ "$rc" -eq 0 ]
sk_check "rebalance row: median, min, max and warm-up are numbers" \
  grep -Eq '^rebalance, fresh group \(ms\) +median [0-9]+  min [0-9]+  max [0-9]+  over 1 groups; warm-up group [0-9]+$' "$out"
sk_check "restart with delay 3000: a row with a median of at least 3 s" \
  grep -Eq '^\.\.\. with delay 3000 ms .* median ([3-9][0-9]{3}|[0-9]{5,})  min' "$out"
for c in confluent kafka-python; do
  # shellcheck disable=SC2016 # an awk program
  sk_check "$c commit row: commits/s > 0, 0 errors" \
    awk -v c="$c x3, sync" 'index($0, c) == 1 { n++; if ($(NF - 4) + 0 <= 0 || $NF != 0) bad = 1 }
      END { exit !(n == 1 && !bad) }' "$out"
  sk_check "$c: JSON line with latency percentiles" bash -c \
    "sed -n 's/^# //p' '$out' | jq -se '[.[] | select(.mode == \"commit\" and .client == \"$c\")] |
      length == 1 and .[0].p50_ms > 0 and .[0].p99_ms >= .[0].p50_ms' >/dev/null"
done
sk_check "3 rebalance JSON lines (warm-up + 1 round + 1 with delay), all members assigned" bash -c \
  "[ \"\$(sed -n 's/^# //p' '$out' | jq -s '[.[] | select(.mode == \"rebalance\" and .seconds != null)] | length')\" = 3 ]"

sk_log "no skiff binary"
wait "$nobin_pid"; rc=$?
cat "$SK_TMP/nobin.txt"
sk_check "no skiff: exit 0" [ "$rc" -eq 0 ]
sk_check "no skiff: says so" grep -q "skiff not built" "$SK_TMP/nobin.txt"
sk_check "no skiff: no group figures" bash -c "! grep -q 'commit load' '$SK_TMP/nobin.txt'"
[ "$SK_FAILS" -eq 0 ] || sk_dump_logs
sk_summary t_group_bench
