#!/usr/bin/env bash
# Heap allocations per Fetch on one skiff node in steady state (issue 19).
# The node runs under test/bench/malloc_count.c (LD_PRELOAD; counts malloc,
# calloc, realloc, posix_memalign, aligned_alloc of every thread). A topic of
# ALLOC_PARTITIONS partitions gets ALLOC_COUNT x 100 B; then kload consumes it
# from the beginning with max.partition.fetch.bytes=ALLOC_PART_BYTES (many
# Fetches that all return data). Allocations during the consume, minus the
# node's idle rate over the same time (timers, heartbeats), divided by the
# Fetch requests of the consume (skiff_requests_total{api="Fetch"}), give
# allocations per Fetch. The consume's other requests (ApiVersions,
# Metadata, ListOffsets: a handful) are counted in, so the figure is an
# upper bound. Printed, not judged.
#
# env: SKIFF_BIN_DIR, SKIFF_TEST_DIR, ALLOC_COUNT (170000),
#      ALLOC_PARTITIONS (6), ALLOC_PART_BYTES (65536)
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
count=${ALLOC_COUNT:-170000}
parts=${ALLOC_PARTITIONS:-6}
part_bytes=${ALLOC_PART_BYTES:-65536}
[ -x "$kload" ] || { echo "missing $kload"; exit 1; }
shim=$SK_TMP/malloc_count.so
cc -O2 -shared -fPIC -o "$shim" "$SK_ROOT/test/bench/malloc_count.c" -ldl -lpthread || { echo "cannot build the shim"; exit 1; }
export MALLOC_COUNT_FILE=$SK_TMP/allocs
LD_PRELOAD=$shim sk_start_cluster 1
unset MALLOC_COUNT_FILE
adm="http://127.0.0.1:${SK_ADMIN_PORT[1]}"
allocs() { sleep 0.25; awk '{ print $2 }' "$SK_TMP/allocs"; }
fetches() { curl -s "$adm/metrics" | awk '/^skiff_requests_total\{api="Fetch"/ { v = $2 } END { print v + 0 }'; }

"$kload" create-topic --brokers "$SK_BOOTSTRAP" --topic alloc --partitions "$parts" >/dev/null 2>&1
"$kload" produce --brokers "$SK_BOOTSTRAP" --topic alloc --count "$count" --size 100 --acks 1 >/dev/null 2>&1 ||
  sk_fail "produce failed"
# idle rate: the node alone for a while
i0=$(allocs); t0=$(date +%s.%N); sleep 2; i1=$(allocs); t1=$(date +%s.%N)
idle_per_s=$(awk -v a="$i0" -v b="$i1" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.1f", (b - a) / (e - s) }')
f0=$(fetches); a0=$(allocs); s0=$(date +%s.%N)
out=$("$kload" consume --brokers "$SK_BOOTSTRAP" --topic alloc --count "$count" \
  -X max.partition.fetch.bytes="$part_bytes" 2>>"$SK_TMP/kload.err") || sk_fail "consume failed"
a1=$(allocs); s1=$(date +%s.%N); f1=$(fetches)
nf=$((f1 - f0))
[ "$nf" -gt 0 ] || sk_fail "no Fetch counted"
per=$(awk -v a="$a0" -v b="$a1" -v s="$s0" -v e="$s1" -v idle="$idle_per_s" -v n="$nf" \
  'BEGIN { printf "%.1f", ((b - a) - idle * (e - s)) / n }')
sk_stop_node 1
echo "fetches $nf, allocations during the consume $((a1 - a0)), idle $idle_per_s/s"
echo "allocations per Fetch (steady state, $parts partitions, $part_bytes B per partition): $per"
jq -c '{msgs_per_s}' <<<"$out"
