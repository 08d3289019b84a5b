#!/usr/bin/env bash
# Replication benchmark of issue 6, in one run:
#  (a) produce with `skiffctl perf produce`, BENCH_REPL_SIZE-byte values:
#      acks=all to a topic with RF=3 on three local nodes (min.insync=2) next
#      to acks=1 to a topic with RF=1 on one node. Two runs per setup:
#      throughput (as fast as possible, BENCH_REPL_COUNT records) and latency
#      at a fixed rate (BENCH_REPL_RATE records/s for BENCH_REPL_LAT_S s), so
#      the percentiles are not just queueing behind a saturated link.
#      Prints msgs/s, MB/s, p50/p99/p99.9 ms and the RF=3/RF=1 ratios.
#  (b) failover: BENCH_REPL_ROUNDS times, kill -9 the leader of a RF=3
#      partition while repl_failover_probe.py waits; time until a message
#      enqueued after the kill is acknowledged (acks=all); the node is
#      restarted and back in the ISR before the next round. Prints every
#      round and the median.
# Exit 0 when every run delivered everything and every round recovered;
# figures are reported, not judged. Both setups share the machine (2 cores
# here), run one after the other, never at the same time.
#
# env: SKIFF_BIN_DIR (bin/), BENCH_REPL_COUNT (1000000), BENCH_REPL_SIZE (100),
#      BENCH_REPL_PARTITIONS (3), BENCH_REPL_RATE (5000), BENCH_REPL_LAT_S (10),
#      BENCH_REPL_ROUNDS (10)
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/repl_lib.sh"
count=${BENCH_REPL_COUNT:-1000000}
size=${BENCH_REPL_SIZE:-100}
parts=${BENCH_REPL_PARTITIONS:-3}
rate=${BENCH_REPL_RATE:-5000}
lat_s=${BENCH_REPL_LAT_S:-10}
rounds=${BENCH_REPL_ROUNDS:-10}
ctl=$SK_BIN/skiffctl
probe="$SK_PY $SK_ROOT/test/bench/repl_failover_probe.py"
QM="$SK_PY $SK_ROOT/test/integration/quorum_meta.py"
[ -x "$SK_BIN/skiff" ] && [ -x "$ctl" ] || { echo "skiff/skiffctl not built in $SK_BIN"; exit 1; }
command -v jq >/dev/null || { echo "jq not found"; exit 1; }
status=0
res=$SK_TMP/results.jsonl
: >"$res"

perf() {  # perf LABEL BOOT TOPIC ACKS COUNT RATE -> one JSON line in $res
  local out
  out=$("$ctl" perf produce "$3" --json -b "$2" --acks "$4" --count "$5" --size "$size" --rate "$6" \
        2>>"$SK_TMP/perf.err") || { echo "perf $1 failed; stderr:" >&2; tail -n 5 "$SK_TMP/perf.err" >&2; status=1; }
  [ -n "$out" ] && jq -c --arg l "$1" '. + {label: $l}' <<<"$out" >>"$res"
  [ -n "$out" ] && [ "$(jq -r .failed <<<"$out")" = 0 ] || { echo "perf $1: failed records" >&2; status=1; }
}

repl_opts
# ---- (a') RF=1 acks=1, one node ------------------------------------------------------------
sk_log "one node: RF=1, acks=1, $parts partition(s), $count x $size B"
sk_start_cluster 1
$QM create "$SK_BOOTSTRAP" rf1 "$parts" 1 30 || { echo "create rf1 failed"; exit 1; }
perf rf1-throughput "$SK_BOOTSTRAP" rf1 1 "$count" 0
perf rf1-latency "$SK_BOOTSTRAP" rf1 1 $((rate * lat_s)) "$rate"
sk_stop_node 1
rm -rf "$SK_TMP/data" "$SK_TMP"/node-*.log   # the 3-node cluster starts afresh


# ---- (a) RF=3 acks=all, three nodes -------------------------------------------------
sk_log "three nodes: RF=3, acks=all, $parts partition(s), $count x $size B"
sk_start_cluster 3 "${REPL_OPTS[@]}"
$QM create "$SK_BOOTSTRAP" rf3 "$parts" 3 30 || { echo "create rf3 failed"; exit 1; }
repl_wait_leader 20 rf3 -1 >/dev/null || { echo "no leader for rf3"; exit 1; }
perf rf3-throughput "$SK_BOOTSTRAP" rf3 all "$count" 0
perf rf3-latency "$SK_BOOTSTRAP" rf3 all $((rate * lat_s)) "$rate"

# ---- (b) failover time, same cluster ---------------------------------------------------
$QM create "$SK_BOOTSTRAP" failover 1 3 30 || { echo "create failover failed"; exit 1; }
repl_wait_leader 20 failover -1 >/dev/null || { echo "no leader for failover"; exit 1; }
isr_full() { [ "$(repl_part isr failover "$1" | tr ',' '\n' | grep -c .)" = 3 ]; }
times=()
for ((r = 1; r <= rounds; r++)); do
  L=$(repl_leader failover 1 2 3)
  t=0; until isr_full "$L"; do sleep 0.2; t=$((t + 1)); [ "$t" -lt 150 ] || break; done
  coproc PROBE { $probe "$SK_BOOTSTRAP" failover 2>>"$SK_TMP/probe.err"; }
  read -r -t 60 ready <&"${PROBE[0]}" || ready=""
  [ "$ready" = READY ] || { echo "round $r: probe not ready"; status=1; kill "$PROBE_PID" 2>/dev/null; break; }
  t0=$(date +%s%N)
  sk_kill9_node "$L"
  echo "GO $t0" >&"${PROBE[1]}"
  read -r -t 90 _ ms <&"${PROBE[0]}" || ms=-1
  wait "$PROBE_PID" 2>/dev/null
  sk_log "round $r: leader node $L killed; produce acknowledged again after ${ms} ms"
  [ "${ms:--1}" -ge 0 ] 2>/dev/null || { status=1; ms=-1; }
  times+=("$ms")
  sk_start_node "$L" "${REPL_OPTS[@]}"
  sk_wait_port "${SK_ADMIN_PORT[L]}" 30 "${SK_NODE_PID[L]}" || { echo "node $L did not restart"; status=1; break; }
done
for i in 1 2 3; do sk_stop_node "$i"; done

# ---- report ------------------------------------------------------------------------------------
fig() { jq -r --arg l "$1" --arg f "$2" 'select(.label == $l) | .[$f]' "$res" | head -n 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
echo
printf '%-26s %12s %9s %9s %9s %9s\n' run msgs/s MB/s "p50 ms" "p99 ms" "p99.9 ms"
for l in rf3-throughput rf1-throughput rf3-latency rf1-latency; do
  printf '%-26s %12.0f %9.2f %9.2f %9.2f %9.2f\n' "$l" "$(fig $l msgs_per_sec)" "$(fig $l mb_per_sec)" \
    "$(fig $l latency_ms_p50)" "$(fig $l latency_ms_p99)" "$(fig $l latency_ms_p999)" 2>/dev/null || echo "$l: missing"
done
echo "RF=3 acks=all / RF=1 acks=1: throughput $(ratio "$(fig rf3-throughput msgs_per_sec)" "$(fig rf1-throughput msgs_per_sec)")x," \
     "p50 at $rate/s $(ratio "$(fig rf3-latency latency_ms_p50)" "$(fig rf1-latency latency_ms_p50)")x," \
     "p99 $(ratio "$(fig rf3-latency latency_ms_p99)" "$(fig rf1-latency latency_ms_p99)")x"
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
n=${#times[@]}
median=-
[ "$n" -gt 0 ] && median=$(awk -v n="$n" '{ v[NR] = $1 } END { if (n % 2) print v[(n + 1) / 2]; else print (v[n / 2] + v[n / 2 + 1]) / 2 }' <<<"$sorted")
echo "leader kill -9 -> acks=all produce acknowledged again: median $median ms over $n rounds" \
     "(all: ${times[*]}; broker.session.timeout.ms=3000, heartbeat 500 ms)"
echo "raw: $(jq -c . "$res" | tr '\n' ' ')"
exit $status
