#!/usr/bin/env bash
# Issue 14 benchmark: broker CPU per GB of produced payload, a baseline
# revision against the current tree, in the same run on the same machine.
# Workload: kload (librdkafka) produces BENCH_COUNT (1,000,000) x BENCH_SIZE
# (100) B, acks=1, uncompressed, to a topic of BENCH_PARTITIONS (6)
# partitions of a fresh single skiff node (lib.sh: free loopback ports, temp
# data dir, stopped by pid). The broker's CPU is utime+stime of its pid from
# /proc/PID/stat before and after the produce (ticks of getconf CLK_TCK).
#
# The baseline broker is built from git revision SKIFF_BENCH_BASE (default
# 8917f3a, main before issue 14) into build/bench-base/ (git archive, then
# make bin/skiff there) and kept: the build is skipped when
# build/bench-base/bin/skiff exists for that revision (build/bench-base/REV).
# Without git or the revision (or if it does not build) it says so and runs
# the current broker only.
#
# Runs alternate, baseline then current, BENCH_ROUNDS (2) times, so a slow
# moment of the shared machine hits both; each side's best run (lowest CPU
# s/GB) is compared: ratio current/baseline and % change of CPU per GB. The
# ratio is reported, not judged: exit 0 when every run delivered every
# message, 1 otherwise.
#
# env: SKIFF_BIN_DIR (bin/), SKIFF_TEST_DIR (build/test), SKIFF_BENCH_BASE
#      (8917f3a), BENCH_COUNT, BENCH_SIZE, BENCH_PARTITIONS, BENCH_ROUNDS,
#      BENCH_TIMEOUT_S (120, per produce run)
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
count=${BENCH_COUNT:-1000000}
size=${BENCH_SIZE:-100}
partitions=${BENCH_PARTITIONS:-6}
rounds=${BENCH_ROUNDS:-2}
timeout_s=${BENCH_TIMEOUT_S:-120}
base_rev=${SKIFF_BENCH_BASE:-8917f3a}
base_dir=$SK_ROOT/build/bench-base
cur_bin=$SK_BIN
[ -x "$kload" ] || { echo "missing $kload (build it with make bench)"; exit 1; }
[ -x "$cur_bin/skiff" ] || { echo "missing $cur_bin/skiff (build it with make)"; exit 1; }
command -v jq >/dev/null || { echo "jq not found"; exit 1; }
command -v curl >/dev/null || { echo "curl not found"; exit 1; }
tick_hz=$(getconf CLK_TCK)
status=0

# build_base -> 0 with $base_dir/bin/skiff built from $base_rev (cached);
# else prints why and returns 1
build_base() {
  local sha
  command -v git >/dev/null || { echo "baseline: git not found"; return 1; }
  sha=$(git -C "$SK_ROOT" rev-parse --verify --quiet "$base_rev^{commit}") ||
    { echo "baseline: revision $base_rev not in this repository"; return 1; }
  if [ -x "$base_dir/bin/skiff" ] && [ "$(cat "$base_dir/REV" 2>/dev/null)" = "$sha" ]; then
    echo "baseline: $base_rev ($sha), cached in ${base_dir#"$SK_ROOT"/}"
    return 0
  fi
  echo "baseline: building $base_rev ($sha) in ${base_dir#"$SK_ROOT"/} (make bin/skiff, -j2)"
  rm -rf "$base_dir"; mkdir -p "$base_dir/src" "$base_dir/bin"
  git -C "$SK_ROOT" archive "$sha" | tar -x -C "$base_dir/src" ||
    { echo "baseline: git archive $sha failed"; return 1; }
  # a clean make: not the jobserver or variables of a make that runs this
  if ! (unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES GNUMAKEFLAGS
        make -C "$base_dir/src" -j2 bin/skiff) > "$base_dir/build.log" 2>&1; then
    echo "baseline: build of $base_rev failed; last lines of ${base_dir#"$SK_ROOT"/}/build.log:"
    tail -n 15 "$base_dir/build.log"
    return 1
  fi
  cp "$base_dir/src/bin/skiff" "$base_dir/bin/skiff"
  echo "$sha" > "$base_dir/REV"
}

# cpu_ticks PID -> utime+stime of PID in clock ticks (fields 14 and 15 of
# /proc/PID/stat; the command name in field 2 may hold spaces: cut at ')')
cpu_ticks() {
  local rest
  rest=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || { echo -1; return; }
  awk '{ print $12 + $13 }' <<<"$rest"
}

healthy() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[1]}/v1/health" | grep -q '"healthy":true'; }

# run_one SIDE BINDIR ROUND -> a fresh node of BINDIR/skiff, the topic, one
# produce; appends "SIDE ROUND msgs_per_s mb_per_s ticks bytes msgs" to
# $rows. A run that did not deliver everything sets status=1.
rows=$SK_TMP/rows.txt; : > "$rows"
run_one() {
  local side=$1 bindir=$2 round=$3 pid t0 before after out msgs bytes errors
  rm -rf "$SK_TMP/data"
  echo "==== $side round $round ($bindir/skiff)" >> "$SK_TMP/node-1.log"
  sk_write_cluster_conf 1
  SK_BIN=$bindir sk_start_node 1
  pid=${SK_NODE_PID[1]}
  sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "$pid" && sk_wait_port "${SK_ADMIN_PORT[1]}" 30 "$pid" ||
    sk_fail "$side round $round: node did not come up"
  t0=$SECONDS
  until healthy; do
    [ $((SECONDS - t0)) -lt 30 ] || sk_fail "$side round $round: node not healthy within 30 s"
    sleep 0.1
  done
  "$kload" create-topic --brokers "$SK_BOOTSTRAP" --topic cpu-bench --partitions "$partitions" \
    --timeout-s 10 2>> "$SK_TMP/kload.err" || sk_fail "$side round $round: create-topic failed"
  before=$(cpu_ticks "$pid")
  out=$("$kload" produce --brokers "$SK_BOOTSTRAP" --topic cpu-bench --count "$count" \
    --size "$size" --acks 1 --compression none --timeout-s "$timeout_s" 2>> "$SK_TMP/kload.err") ||
    { echo "$side round $round: kload produce failed; stderr:"; tail -n 10 "$SK_TMP/kload.err"; status=1; }
  after=$(cpu_ticks "$pid")
  [ -n "$out" ] || out='{}'
  echo "# $side round $round: $out" >> "$SK_TMP/results.txt"
  msgs=$(jq -r '.msgs // 0' <<<"$out"); bytes=$(jq -r '.bytes // 0' <<<"$out")
  errors=$(jq -r '.errors // 1' <<<"$out")
  if [ "$msgs" != "$count" ] || [ "$errors" != 0 ] || [ "$before" -lt 0 ] || [ "$after" -lt 0 ]; then
    echo "$side round $round: delivered $msgs of $count, $errors error(s), cpu ticks $before -> $after"
    status=1
  fi
  echo "$side $round $(jq -r '"\(.msgs_per_s // 0) \(.mb_per_s // 0)"' <<<"$out") $((after - before)) $bytes $msgs" >> "$rows"
  sk_stop_node 1
}

sides=(current)
if build_base; then sides=(baseline current); else echo "baseline: none; current broker only"; fi
sk_log "produce $count x $size B, acks=1, $partitions partitions, $rounds round(s): ${sides[*]}"
for ((r = 1; r <= rounds; r++)); do
  for side in "${sides[@]}"; do
    if [ "$side" = baseline ]; then run_one baseline "$base_dir/bin" "$r"; else run_one current "$cur_bin" "$r"; fi
  done
done

# row SIDE ROUND MSGS_S MB_S TICKS BYTES MSGS -> one table line; CPU s/GB
# of payload = (ticks / CLK_TCK) / (bytes / 1e9)
fmt='%-9s %5s %12s %8s %8s %12s\n'
echo
printf "$fmt" broker round msgs/s MB/s "CPU s" "CPU s/GB"
awk -v hz="$tick_hz" -v fmt="$fmt" '{
  cpu = $5 / hz; gb = $6 / 1e9
  printf fmt, $1, $2, $3, sprintf("%.2f", $4), sprintf("%.2f", cpu), (gb > 0 ? sprintf("%.2f", cpu / gb) : "-") }' "$rows"
# best (lowest CPU s/GB) run of each side
best() { awk -v s="$1" -v hz="$tick_hz" '$1 == s && $6 > 0 { v = ($5 / hz) / ($6 / 1e9)
  if (!n++ || v < b) { b = v; line = $0 } } END { if (n) print line }' "$rows"; }
echo "best of each (lowest CPU s/GB of its $rounds run(s); runs alternate baseline, current):"
for side in "${sides[@]}"; do
  b=$(best "$side")
  [ -n "$b" ] && awk -v hz="$tick_hz" -v fmt="$fmt" '{ cpu = $5 / hz
    printf fmt, $1, "best", $3, sprintf("%.2f", $4), sprintf("%.2f", cpu), sprintf("%.2f", cpu / ($6 / 1e9)) }' <<<"$b"
done
if [ ${#sides[@]} = 2 ] && [ -n "$(best baseline)" ] && [ -n "$(best current)" ]; then
  awk -v hz="$tick_hz" -v rev="$base_rev" 'NR == 1 { bc = ($5 / hz) / ($6 / 1e9); bm = $3 }
    NR == 2 { cc = ($5 / hz) / ($6 / 1e9); cm = $3
      printf "current/baseline (%s): CPU s/GB %.3f (%+.1f%%), msgs/s %.3f\n", rev,
        (bc > 0 ? cc / bc : 0), (bc > 0 ? (cc / bc - 1) * 100 : 0), (bm > 0 ? cm / bm : 0) }' \
    <(best baseline; best current)
fi
echo "($count x $size B per run, acks=1, none, $partitions partitions, one fresh node per run;"
echo " CPU = broker utime+stime around the produce; GB = 1e9 payload bytes; figures reported, not judged)"
cat "$SK_TMP/results.txt"
exit "$status"
