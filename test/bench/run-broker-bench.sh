#!/usr/bin/env bash
# Broker benchmark of issue 4: the same librdkafka load tool (kload) against a
# single skiff node and against librdkafka's in-process mock cluster, in the
# same run. Workloads: produce BENCH_COUNT x BENCH_SIZE-byte messages with
# acks=1, uncompressed and lz4, then consume each topic from the beginning.
# Prints a table (skiff msgs/s, mock msgs/s, ratio, skiff CPU s per GB of
# payload moved, from utime+stime in /proc/PID/stat around each workload),
# then the raw kload JSON lines. Exit 0 when every run delivered and verified
# every message; ratios are reported, not judged.
#
# Without $SKIFF_BIN_DIR/skiff it prints "skiff not built; mock-only figures:"
# and the mock rows, and still exits 0 if those runs were good.
#
# env: SKIFF_BIN_DIR (bin/), SKIFF_TEST_DIR (build/test), BENCH_COUNT (1000000),
#      BENCH_SIZE (100), BENCH_PARTITIONS (enough for the mock to keep all data),
#      BENCH_TIMEOUT_S (120, per kload run), BENCH_CREATE_TIMEOUT_S (10)
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
count=${BENCH_COUNT:-1000000}
size=${BENCH_SIZE:-100}
timeout_s=${BENCH_TIMEOUT_S:-120}
[ -x "$kload" ] || { echo "missing $kload (build it with make)"; exit 1; }
command -v jq >/dev/null || { echo "jq not found"; exit 1; }

# librdkafka's mock keeps only the newest 5 MB per partition; spread the data
# (payload + ~40 B record overhead) so each partition holds <= 4 MB and the
# consume runs see everything. skiff gets the same partition count.
mock_budget_bytes=$((4 * 1024 * 1024))
partitions=${BENCH_PARTITIONS:-$(((count * (size + 40) + mock_budget_bytes - 1) / mock_budget_bytes))}
[ "$partitions" -ge 1 ] || partitions=1
codecs=(none lz4)
status=0
res=$SK_TMP/results.jsonl
: >"$res"

# kload_run TARGET ARGS... -> runs kload, appends its JSON lines tagged with
# TARGET to $res; a failed run makes the whole bench fail.
kload_run() {
  local target=$1 out; shift
  out=$("$kload" "$@" --timeout-s "$timeout_s" 2>>"$SK_TMP/kload.err") || {
    echo "kload $1 against $target failed (exit $?); stderr:" >&2
    tail -n 20 "$SK_TMP/kload.err" >&2
    status=1
  }
  [ -n "$out" ] && jq -c --arg t "$target" '. + {bench_target: $t}' <<<"$out" >>"$res"
}

# cpu_ticks PID -> utime+stime of PID in clock ticks (fields 14 and 15 of
# /proc/PID/stat; the command name in field 2 may hold spaces, so cut at ')').
cpu_ticks() {
  local rest
  rest=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || { echo -1; return; }
  awk '{ print $12 + $13 }' <<<"$rest"
}

sk_log "mock cluster: $count x $size B, acks=1, $partitions partition(s)"
for c in "${codecs[@]}"; do
  kload_run mock mock-bench --topic "bench-$c" --count "$count" --size "$size" \
    --acks 1 --compression "$c" --partitions "$partitions"
done

have_skiff=0
if [ -x "$SK_BIN/skiff" ]; then
  have_skiff=1
  sk_log "skiff single node: $count x $size B, acks=1, $partitions partition(s)"
  sk_start_cluster 1
  pid=${SK_NODE_PID[1]}
  tick_hz=$(getconf CLK_TCK)
  cpu=$SK_TMP/cpu.txt
  : >"$cpu"
  for c in "${codecs[@]}"; do
    "$kload" create-topic --brokers "$SK_BOOTSTRAP" --topic "bench-$c" \
      --partitions "$partitions" --timeout-s "${BENCH_CREATE_TIMEOUT_S:-10}" 2>>"$SK_TMP/kload.err" ||
      echo "create-topic bench-$c failed; relying on auto-create" >&2
  done
  for c in "${codecs[@]}"; do
    for mode in produce consume; do
      before=$(cpu_ticks "$pid")
      if [ "$mode" = produce ]; then
        kload_run skiff produce --brokers "$SK_BOOTSTRAP" --topic "bench-$c" --count "$count" \
          --size "$size" --acks 1 --compression "$c"
      else
        kload_run skiff consume --brokers "$SK_BOOTSTRAP" --topic "bench-$c" --count "$count"
      fi
      after=$(cpu_ticks "$pid")
      if [ "$before" -ge 0 ] && [ "$after" -ge 0 ]; then
        echo "$mode $c $((after - before))" >>"$cpu"
      else
        echo "skiff (pid $pid) is gone after $mode $c" >&2; status=1
      fi
    done
  done
  sk_stop_node 1
fi

# figure TARGET MODE CODEC FIELD -> that run's field, or "-" when it is absent
figure() {
  local v
  v=$(jq -r --arg t "$1" --arg m "$2" --arg c "$3" --arg f "$4" \
    'select(.bench_target == $t and .mode == $m and .topic == ("bench-" + $c)) | .[$f]' "$res" | head -n 1)
  echo "${v:--}"
}

echo
[ "$have_skiff" = 1 ] || echo "skiff not built ($SK_BIN/skiff); mock-only figures:"
printf '%-16s %14s %14s %8s %14s\n' workload "skiff msgs/s" "mock msgs/s" ratio "skiff cpu s/GB"
for mode in produce consume; do
  for c in "${codecs[@]}"; do
    mock=$(figure mock "$mode" "$c" msgs_per_s)
    sk=-; ratio=-; cpu_gb=-
    if [ "$have_skiff" = 1 ]; then
      sk=$(figure skiff "$mode" "$c" msgs_per_s)
      bytes=$(figure skiff "$mode" "$c" bytes)
      ticks=$(awk -v m="$mode" -v c="$c" '$1 == m && $2 == c { print $3 }' "$cpu")
      ratio=$(awk -v a="$sk" -v b="$mock" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }')
      cpu_gb=$(awk -v t="${ticks:-}" -v hz="$tick_hz" -v b="$bytes" \
        'BEGIN { if (t != "" && b + 0 > 0) printf "%.2f", (t / hz) / (b / 1e9); else print "-" }')
    fi
    printf '%-16s %14s %14s %8s %14s\n' "$mode $c" "$sk" "$mock" "$ratio" "$cpu_gb"
  done
done
echo "($count x $size B per workload, acks=1, $partitions partition(s); ratio = skiff / mock;"
echo " cpu s/GB = skiff utime+stime per 1e9 payload bytes; latency and MB/s in the JSON below)"
sed 's/^/# /' "$res"
exit "$status"
