#!/usr/bin/env bash
# Issue 19: CPU per message on the replicated produce path, for profiling.
# One cluster of BENCH_NODES (3) skiff nodes (lib.sh: free loopback ports,
# temp data dir, stopped by pid even on failure), topics of 6 partitions,
# RF BENCH_RF (3), a warm-up of 50,000 x 100 B on another topic, then kload
# produces BENCH_COUNT (200,000) x 100 B with acks BENCH_ACKS (all) at
# BENCH_RATE (20,000) msgs/s, linger BENCH_LINGER_MS (0); BENCH_RATE=0 is
# the maximum rate. Printed, one line each:
#   - utime+stime of all nodes around the run (/proc/PID/stat ticks), the
#     Produce and Fetch requests they served (skiff_requests_total), per
#     message and per request; kload's msgs/s, p50, p99;
#   - kload's own CPU (GNU time), the box being shared with the client;
#   - BENCH_STAT=1: syscalls by kind and context switches of the nodes over
#     4 s of the run (perf stat; 4 s at 20,000/s = 80,000 messages);
#   - BENCH_PERF=1: perf record -g of the nodes for 4 s into
#     $SK_TMP_ROOT/repl-cpu.perf.data (BENCH_PERF_CG overrides -g, e.g.
#     "--call-graph dwarf,16384").
# BENCH_SET: more --set flags for every node (e.g. num.network.threads=1).
# Compare two builds in one sitting with SKIFF_BIN_DIR (see README.md).
# Reported, not judged: exit 1 only when kload did not deliver every message.
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
[ -x "$kload" ] || { echo "run-repl-cpu-bench: missing $kload (make test-programs)"; exit 1; }
TOPICS=("$SK_PY" "$SK_ROOT/test/bench/sbs_topics.py")
n=${BENCH_NODES:-3}
rf=${BENCH_RF:-3}
acks=${BENCH_ACKS:-all}
count=${BENCH_COUNT:-200000}
rate=${BENCH_RATE:-20000}
set_args=()
for kv in ${BENCH_SET:-}; do set_args+=(--set "$kv"); done

sk_start_cluster "$n" "${set_args[@]}"
"${TOPICS[@]}" create "$SK_BOOTSTRAP" 6 "$rf" 60 "$rf" rcpu-run rcpu-warm >/dev/null 2>&1 || sk_fail "topics not created"
"${TOPICS[@]}" wait "$SK_BOOTSTRAP" rcpu- 12 "$rf" 60 >/dev/null 2>&1 || sk_fail "topics not in sync"
"$kload" produce --brokers "$SK_BOOTSTRAP" --topic rcpu-warm --count 50000 --size 100 --acks "$acks" >/dev/null 2>&1 ||
  sk_fail "warm-up produce"

# requests served by every node: $1 = an api regex
served() {
  local s=0 i
  for ((i = 1; i <= n; i++)); do
    s=$((s + $(curl -s --max-time 5 "127.0.0.1:${SK_ADMIN_PORT[i]}/metrics" |
      awk -v re="$1" '$1 ~ "^skiff_requests_total\\{api=\"(" re ")\"\\}$" { s += $2 } END { print s + 0 }')))
  done
  echo "$s"
}
ticks() { local s=0 p; for p in "${SK_NODE_PID[@]}"; do s=$((s + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$s"; }

r0=$(served 'Produce|Fetch'); f0=$(served Fetch); t0=$(ticks)
rate_args=()
[ "$rate" != 0 ] && rate_args=(--rate "$rate")
# kload's user and system seconds: bash's own `time` (no /usr/bin/time needed)
( TIMEFORMAT='%U %S'
  { time "$kload" produce --brokers "$SK_BOOTSTRAP" --topic rcpu-run --count "$count" --size 100 --acks "$acks" \
      "${rate_args[@]}" --linger-ms "${BENCH_LINGER_MS:-0}" >"$SK_TMP/kload.json" 2>&1; } 2>"$SK_TMP/kload.time" ) &
kp=$!
sleep 3
pids=$(IFS=,; echo "${SK_NODE_PID[*]}")
if [ "${BENCH_STAT:-0}" = 1 ]; then
  ev=raw_syscalls:sys_enter,context-switches
  for s in writev sendfile64 pwrite64 pread64 epoll_wait epoll_ctl recvfrom readv write read ioctl; do ev+=",syscalls:sys_enter_$s"; done
  perf stat -e "$ev" -p "$pids" -o "$SK_TMP/stat.txt" -- sleep 4 >/dev/null 2>&1 || echo "perf stat failed"
fi
if [ "${BENCH_PERF:-0}" = 1 ]; then
  # shellcheck disable=SC2086 # BENCH_PERF_CG is a list of perf options
  perf record -F 999 ${BENCH_PERF_CG:--g} -o "$SK_TMP_ROOT/repl-cpu.perf.data" -p "$pids" -- sleep 4 >/dev/null 2>&1 ||
    echo "perf record failed"
fi
wait "$kp"
t1=$(ticks); r1=$(served 'Produce|Fetch'); f1=$(served Fetch)
msgs=$(grep -oE '"msgs":[0-9]+' "$SK_TMP/kload.json" | grep -oE '[0-9]+$')
errors=$(grep -oE '"errors":[0-9]+' "$SK_TMP/kload.json" | grep -oE '[0-9]+$')
if [ "${msgs:-0}" != "$count" ] || [ "${errors:-1}" != 0 ]; then
  cat "$SK_TMP/kload.json"
  sk_fail "kload did not deliver $count"
fi
hz=$(getconf CLK_TCK)
dt=$((t1 - t0)) dr=$((r1 - r0))
echo "nodes $n rf $rf acks $acks rate $rate: node CPU $(awk -v t=$dt -v h="$hz" 'BEGIN{printf "%.2f", t / h}') s," \
  "$(awk -v t=$dt -v h="$hz" -v m="$msgs" 'BEGIN{printf "%.1f", t / h * 1e6 / m}') us/msg," \
  "requests $dr (fetch $((f1 - f0))), $(awk -v t=$dt -v h="$hz" -v r=$dr 'BEGIN{printf "%.1f", r ? t / h * 1e6 / r : 0}') us/request;" \
  "$(grep -oE '"msgs_per_s":[0-9]+|"p50_ms":[0-9.]+|"p99_ms":[0-9.]+' "$SK_TMP/kload.json" | tr '\n' ' ')"
read -r ku ks <"$SK_TMP/kload.time"
echo "kload CPU $(awk -v u="$ku" -v s="$ks" 'BEGIN{printf "%.2f", u + s}') s"
if [ -f "$SK_TMP/stat.txt" ]; then
  awk '/sys_enter|context-switches/ { gsub(",", "", $1); k = $2; sub(/.*sys_enter_?/, "", k); if (k == "") k = "all_syscalls"; printf "%s=%s ", k, $1 } END { print "(4 s)" }' \
    "$SK_TMP/stat.txt"
fi
for ((i = 1; i <= n; i++)); do sk_stop_node "$i"; done
exit 0
