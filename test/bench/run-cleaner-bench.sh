#!/usr/bin/env bash
# Log cleaner benchmark (issue 15), one skiff node:
#  1. a topic "cmp" (cleanup.policy=delete for now, 4 MiB segments) is filled
#     with BENCH_CLEAN_RECORDS keyed records (BENCH_CLEAN_KEYS keys, ~100 B
#     values) by confluent-kafka;
#  2. produce latency on another topic "lat" (confluent-kafka, acks=1,
#     linger.ms 0, a fixed rate)
#     while the cleaner has nothing to do;
#  3. "cmp" switched to cleanup.policy=compact (AlterConfigs) and at once the
#     same run on "lat" while the cleaner compacts "cmp";
#  4. the cleaner's throughput from its own log line: dirty bytes mapped /
#     (build + commit time), MB/s = 1e6 B/s (the storage-only figure of
#     bench_storage was 44 MiB/s), and how long the commit held the loop.
# Prints p99 idle vs while cleaning and their ratio (goal <= 1.2), reported,
# not judged. Exit 1 only if a run failed.
# env: SKIFF_BIN_DIR, SKIFF_TEST_DIR, BENCH_CLEAN_RECORDS (400000),
#      BENCH_CLEAN_KEYS (10000), BENCH_LAT_RATE (2000 msgs/s), BENCH_LAT_SECONDS (6)
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
CC=("$SK_PY" "$SK_ROOT/test/integration/clients/compact_check.py")
records=${BENCH_CLEAN_RECORDS:-400000}
keys=${BENCH_CLEAN_KEYS:-10000}
rate=${BENCH_LAT_RATE:-2000}
secs=${BENCH_LAT_SECONDS:-6}
[ -x "$kload" ] || { echo "missing $kload (build it with make test-programs)"; exit 1; }
[ -x "$SK_BIN/skiff" ] || { echo "skiff not built"; exit 1; }
command -v jq >/dev/null || { echo "jq not found"; exit 1; }

sk_start_cluster 1 --set log.cleaner.backoff.ms=200
BOOT=$SK_BOOTSTRAP
SEG=(segment.bytes=4194304 segment.ms=604800000)
timeout 60 "${CC[@]}" "$BOOT" create cmp cleanup.policy=delete "${SEG[@]}" >/dev/null 2>"$SK_TMP/create.err" ||
  sk_fail "create cmp: $(tail -n 2 "$SK_TMP/create.err")"
"$kload" create-topic --brokers "$BOOT" --topic lat --partitions 1 --timeout-s 10 2>>"$SK_TMP/kload.err" ||
  sk_fail "create lat"
sk_log "filling cmp: $records records over $keys keys"
CC_KEYS=$keys timeout 300 "${CC[@]}" "$BOOT" produce cmp "$records" 100 > "$SK_TMP/fill.txt" 2>"$SK_TMP/fill.err"
grep -q '^FAIL' "$SK_TMP/fill.txt" && sk_fail "fill: $(grep '^FAIL' "$SK_TMP/fill.txt")"
size=$(curl -s "http://127.0.0.1:${SK_ADMIN_PORT[1]}/v1/topics/cmp" | jq '.partitions[0].size_bytes')

# confluent-kafka, one message at a time at a fixed rate, delivery reports
# served every millisecond (kload at a fixed rate serves them in 100 ms steps)
lat_run() {  # lat_run -> JSON line
  timeout 120 "${CC[@]}" "$BOOT" latency lat "$secs" "$rate" 2>>"$SK_TMP/lat.err"
}
sk_log "produce latency on lat, cleaner idle: $secs s at $rate msgs/s"
idle=$(lat_run) || sk_fail "idle run failed"
timeout 60 "${CC[@]}" "$BOOT" alter cmp cleanup.policy=compact "${SEG[@]}" min.cleanable.dirty.ratio=0.5 \
  2>"$SK_TMP/alter.err" || sk_fail "alter cmp"
sk_log "cmp ($size bytes) now compacted; the same run while the cleaner works"
busy=$(lat_run) || sk_fail "busy run failed"
line=""
for _ in $(seq 1 300); do
  line=$(grep -m1 'cleaner: partition cmp-0:' "$SK_TMP/node-1.log") && break
  sleep 0.2
done
[ -n "$line" ] || sk_fail "no cleaner pass of cmp-0 within 60 s"
mapped=$(sed -n 's/.*: \([0-9]*\) dirty bytes mapped.*/\1/p' <<<"$line")
written=$(sed -n 's/.* \([0-9]*\) bytes written.*/\1/p' <<<"$line")
build_ms=$(sed -n 's/.*build \([0-9]*\) ms.*/\1/p' <<<"$line")
commit_us=$(sed -n 's/.*commit \([0-9]*\) us.*/\1/p' <<<"$line")
steps=$(sed -n 's/.* in \([0-9]*\) step(s), longest \([0-9]*\) us.*/\1 steps, longest \2 us/p' <<<"$line")
p99i=$(jq -r .p99_ms <<<"$idle"); p99b=$(jq -r .p99_ms <<<"$busy")
echo "cleaner: $mapped dirty bytes mapped, $written written, build $build_ms ms, commit $commit_us us on the loop ($steps)"
awk -v m="$mapped" -v b="$build_ms" -v c="$commit_us" 'BEGIN {
  t = b / 1000 + c / 1e6; if (t <= 0) t = 0.001
  printf "cleaner throughput: %.1f MB/s (%.1f MiB/s) of dirty log (storage-only figure before: 44 MiB/s)\n", m / t / 1e6, m / t / 1048576 }'
awk -v i="$p99i" -v b="$p99b" -v r="$rate" 'BEGIN {
  printf "produce p99 on another topic at %d msgs/s: idle %.2f ms, while cleaning %.2f ms, ratio %.2f (goal <= 1.2)\n", r, i, b, (i > 0 ? b / i : 0) }'
echo "# idle $idle"
echo "# busy $busy"
