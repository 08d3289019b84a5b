#!/usr/bin/env bash
# Heap allocations per Produce request on skiff's state loop (issue 19): one
# node runs under an LD_PRELOAD shim (test/bench/alloc/malloc_count.c) that
# counts malloc/calloc/realloc/memalign calls of its main thread (the event
# loop: with one loop it also reads the sockets and runs the prepare hook)
# and of all threads. kload (librdkafka) produces a warm-up load, then the
# measured load, to a topic of BENCH_PARTITIONS partitions; the figure is
# (main-thread allocations during the measured load) / (Produce requests
# the node answered meanwhile, skiff_requests_total{api="Produce"}). Every
# other request of that window (kload's Metadata, ApiVersions, ...) and the
# timers are in the numerator too, so the figure is an upper bound.
# Prints figures only; exit 0 when the loads delivered every message.
#
# env: SKIFF_BIN_DIR, SKIFF_TEST_DIR, BENCH_COUNT (200000), BENCH_SIZE (100),
#      BENCH_PARTITIONS (6), BENCH_COMPRESSION (none), BENCH_ACKS (1),
#      BENCH_BATCH_BYTES (kload's default; smaller batches make more requests,
#      which keeps the per-connection start-up of each kload run out of the
#      figure: compressed loads otherwise send only a few dozen requests)
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
count=${BENCH_COUNT:-200000}
size=${BENCH_SIZE:-100}
parts=${BENCH_PARTITIONS:-6}
codec=${BENCH_COMPRESSION:-none}
acks=${BENCH_ACKS:-1}
batch=()
[ -n "${BENCH_BATCH_BYTES:-}" ] && batch=(--batch-bytes "$BENCH_BATCH_BYTES")
[ -x "$kload" ] || { echo "missing $kload (build it with make)"; exit 1; }
[ -x "$SK_BIN/skiff" ] || { echo "skiff not built ($SK_BIN/skiff)"; exit 1; }
shim=$SK_TMP/malloc_count.so
cc -O2 -shared -fPIC -pthread -o "$shim" "$SK_ROOT/test/bench/alloc/malloc_count.c" || exit 1
out=$SK_TMP/malloc_count.txt

MALLOC_COUNT_OUT=$out LD_PRELOAD=$shim sk_start_cluster 1 --set num.partitions="$parts"
ADMIN=127.0.0.1:${SK_ADMIN_PORT[1]}
produce_requests() {
  curl -s "http://$ADMIN/metrics" | awk '$1 == "skiff_requests_total{api=\"Produce\"}" { print int($2) }'
}
all_requests() {
  curl -s "http://$ADMIN/metrics" | awk '$1 ~ /^skiff_requests_total\{/ { s += $2 } END { print int(s) }'
}
counts() { sleep 0.3; cat "$out"; }   # the shim rewrites it every 50 ms

"$kload" create-topic --brokers "$SK_BOOTSTRAP" --topic alloc --partitions "$parts" --timeout-s 10 >/dev/null ||
  echo "create-topic failed; relying on auto-create" >&2
status=0
run() {
  "$kload" produce --brokers "$SK_BOOTSTRAP" --topic alloc --count "$1" --size "$size" --acks "$acks" \
    --compression "$codec" "${batch[@]}" --start-seq "$2" --timeout-s 120 > "$SK_TMP/kload-$2.json" 2>>"$SK_TMP/kload.err" ||
    { echo "kload failed:"; tail -n 20 "$SK_TMP/kload.err"; status=1; }
}
run "$((count / 4))" 0                      # warm-up: arenas, pools, free lists grow here
c0=$(counts); p0=$(produce_requests); a0=$(all_requests)
run "$count" "$count"
c1=$(counts); p1=$(produce_requests); a1=$(all_requests)
main0=${c0#main=}; main0=${main0%% *}; all0=${c0##*all=}
main1=${c1#main=}; main1=${main1%% *}; all1=${c1##*all=}
dp=$((p1 - p0)); da=$((a1 - a0))
echo "produce: $count x $size B, $codec, acks=$acks, $parts partitions; $dp Produce requests ($da requests in all)"
awk -v m=$((main1 - main0)) -v a=$((all1 - all0)) -v p="$dp" 'BEGIN {
  if (p <= 0) { print "no Produce request counted"; exit }
  printf "allocations per Produce request: state loop (main thread) %.2f, all threads %.2f\n", m / p, a / p
  printf "(main thread: %d allocations, all threads: %d, over the measured load)\n", m, a }'
sed 's/^/# /' "$SK_TMP/kload-$count.json"
sk_stop_node 1
exit "$status"
