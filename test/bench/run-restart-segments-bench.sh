#!/usr/bin/env bash
# Start-up with 1,000 rolled segments after a clean stop (issue 16, finding
# 8), one node: a partition gets SEGBENCH_SEGMENTS (1000) rolled segments of
# one ~20 KB record each (log.segment.bytes=30000: the shape whose indexes
# were rebuilt at every start), the node is stopped with SIGTERM and started
# again; prints the time from the start until a consumer has read the first
# and the last record, and how many "inconsistent; rebuilding" lines the
# start logged. Figures are reported, not judged; exit 1 only when a step
# could not run.
# env: SKIFF_BIN_DIR, SEGBENCH_SEGMENTS (1000)
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
n=${SEGBENCH_SEGMENTS:-1000}
SC=(timeout 300 "$SK_PY" "$SK_ROOT/test/integration/clients/seg_check.py")
[ -x "$SK_BIN/skiff" ] || { echo "missing $SK_BIN/skiff (build it with make)"; exit 1; }
TS0=$(( $(date +%s%3N) - 3600000 ))
sk_start_cluster 1 --set auto.create.topics.enable=true --set num.partitions=1 --set log.segment.bytes=30000
"${SC[@]}" produce "$SK_BOOTSTRAP" rs 0 $((n + 1)) 20000 "$TS0" || sk_fail "produce"
sk_stop_node 1
segs=$(ls "$SK_TMP/data/node-1/rs-0"/*.log | wc -l)
: > "$SK_TMP/node-1.log"
t0=$(date +%s%3N)
sk_start_node 1 --set auto.create.topics.enable=true --set num.partitions=1 --set log.segment.bytes=30000
sk_wait_port "${SK_KAFKA_PORT[1]}" 300 "${SK_NODE_PID[1]}" || sk_fail "node not back"
read_ok() { "${SC[@]}" check "$SK_BOOTSTRAP" rs $((n + 1)) 20000 "$TS0" "$n" 2>/dev/null | grep -q "PASS read by offset"; }
until read_ok; do sleep 0.2; [ $(( $(date +%s%3N) - t0 )) -lt 300000 ] || sk_fail "no read after 300 s"; done
t1=$(date +%s%3N)
rebuilt=$(grep -c "inconsistent; rebuilding" "$SK_TMP/node-1.log")
sk_stop_node 1
printf 'restart (1 node, 1 partition, %d segments of one 20 KB batch, clean stop): serving reads %.1f s after the start, %d index(es) rebuilt\n' \
  "$segs" "$(awk -v d=$((t1 - t0)) 'BEGIN { print d / 1000 }')" "$rebuilt"
