#!/usr/bin/env bash
# Issue 16, finding 8: after a clean stop the rolled segments' indexes are
# trusted. One node, log.segment.bytes=30000: topic "big" gets one 20 KB
# record (one batch) per segment (no offset index entry by the append rule;
# such segments were rebuilt at every start), topic "small" ~110 batches
# per segment (several entries). Clean stop: every rolled segment has a
# non-empty .timeindex, every rolled "small" segment a non-empty .index, no
# index keeps its preallocated size. Restart: no "inconsistent; rebuilding"
# line; reads by offset (CRC-checked) and lookups by timestamp answer as
# before. Then one index cut short by an entry is still rebuilt (and only
# that one), and reads stay right.
. "$(dirname "$0")/lib.sh"
NAME=t_restart_indexes
HERE=$(cd "$(dirname "$0")" && pwd)
SC=(timeout 120 "$SK_PY" "$HERE/clients/seg_check.py")
TS0=$(( $(date +%s%3N) - 3600000 ))  # recent: retention.ms would delete old-stamped segments
NBIG=120; NSMALL=1500

sk_start_cluster 1 --set auto.create.topics.enable=true --set num.partitions=1 --set log.segment.bytes=30000
BOOT=$SK_BOOTSTRAP
"${SC[@]}" produce "$BOOT" big 0 $NBIG 20000 $TS0 || sk_fail "produce big"
"${SC[@]}" produce "$BOOT" small 0 $NSMALL 200 $TS0 || sk_fail "produce small"
sk_check_lines < <("${SC[@]}" check "$BOOT" big $NBIG 20000 $TS0 13)
sk_check_lines < <("${SC[@]}" check "$BOOT" small $NSMALL 200 $TS0 149)

sk_stop_node 1
D=$SK_TMP/data/node-1
# every segment but the last (the active one) of a partition
rolled() { ls "$D/$1-0"/*.log | sort | head -n -1 | sed 's/\.log$//'; }
nbig=$(rolled big | wc -l); nsmall=$(rolled small | wc -l)
sk_log "rolled segments: big $nbig, small $nsmall"
sk_check "big rolled many segments ($nbig)" [ "$nbig" -ge $((NBIG - 5)) ]
sk_check "small rolled several segments ($nsmall)" [ "$nsmall" -ge 5 ]
empty_t=0; empty_i=0
for s in $(rolled big) $(rolled small); do [ -s "$s.timeindex" ] || empty_t=$((empty_t + 1)); done
for s in $(rolled small); do [ -s "$s.index" ] || empty_i=$((empty_i + 1)); done
sk_check "every rolled segment has a non-empty .timeindex ($empty_t empty)" [ "$empty_t" -eq 0 ]
sk_check "every rolled small segment has a non-empty .index ($empty_i empty)" [ "$empty_i" -eq 0 ]
big_files=$(find "$D/big-0" "$D/small-0" -name '*index' -size +100k | wc -l)
sk_check "no index keeps its preallocated size after the stop ($big_files)" [ "$big_files" -eq 0 ]

restart() {
  : > "$SK_TMP/node-1.log"
  sk_start_node 1
  sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node did not come back"
}
restart
sk_check_lines < <("${SC[@]}" check "$BOOT" big $NBIG 20000 $TS0 13)
sk_check_lines < <("${SC[@]}" check "$BOOT" small $NSMALL 200 $TS0 149)
n=$(grep -c "inconsistent; rebuilding" "$SK_TMP/node-1.log")
sk_check "no index rebuilt after a clean stop ($n rebuilt)" [ "$n" -eq 0 ]

# the sanity checks stay: an index one entry short is rebuilt
sk_stop_node 1
victim=$(rolled small | sed -n 2p).index
sz=$(stat -c %s "$victim")
truncate -s $((sz - 8)) "$victim"
restart
n=$(grep -c "inconsistent; rebuilding" "$SK_TMP/node-1.log")
sk_check "an index cut short is rebuilt ($n rebuilt, want 1)" [ "$n" -eq 1 ]
sk_check "the rebuilt index has its entries back" [ "$(stat -c %s "$victim")" -eq "$sz" ]
sk_check_lines < <("${SC[@]}" check "$BOOT" small $NSMALL 200 $TS0 149)
sk_stop_node 1
sk_summary $NAME
