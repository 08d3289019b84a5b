#!/usr/bin/env bash
# Issue 15: __consumer_offsets is compacted by default and really cleaned.
# One node, offsets topic with 1 partition of 16 KiB segments; 10,000
# commits of one group for one partition (each its own batch, > 600 KB
# uncompacted: at least 61 bytes of batch header each); the cleaner must
# bring the partition under 64 KiB (about one record per key plus the
# active segment), and after a restart the group resumes at its last commit.
# Control: the same with log.cleaner.enable=false stays large.
. "$(dirname "$0")/lib.sh"
NAME=t_compaction_offsets
HERE=$(cd "$(dirname "$0")" && pwd)
N=10000
COMMON=(--set offsets.topic.num.partitions=1 --set offsets.topic.segment.bytes=16384 --set log.cleaner.backoff.ms=200)

size_of() {  # size_of NODE -> size_bytes of __consumer_offsets-0 on it
  curl -s "http://127.0.0.1:${SK_ADMIN_PORT[$1]}/v1/topics/__consumer_offsets" |
    "$SK_PY" -c 'import json,sys; print(json.load(sys.stdin)["partitions"][0]["size_bytes"])'
}

run() {  # run ENABLE -> prints the offsets partition's size after the commits settle
  sk_start_cluster 1 "${COMMON[@]}" --set log.cleaner.enable=$1
  BOOT=127.0.0.1:${SK_KAFKA_PORT[1]}
  out=$(timeout 120 "$SK_PY" "$HERE/clients/compact_check.py" "$BOOT" commits oc-topic oc-group $N 2>"$SK_TMP/commits.err")
  sk_check "cleaner=$1: $N commits made ($out)" test "$out" = "COMMITTED $N"
}

# control first: the same commits without the cleaner
run false
sleep 1
ctl=$(size_of 1)
sk_check "control: without the cleaner __consumer_offsets holds > 600 KB ($ctl)" test "${ctl:-0}" -gt 600000
sk_stop_node 1
rm -rf "$SK_TMP/data"

run true
size=""
for _ in $(seq 1 50); do
  size=$(size_of 1)
  [ -n "$size" ] && [ "$size" -lt 65536 ] && break
  sleep 0.2
done
sk_check "with the cleaner __consumer_offsets shrinks under 64 KiB (${size:-?} bytes, control $ctl)" \
  test -n "$size" -a "${size:-999999}" -lt 65536
sk_log "__consumer_offsets after $N commits: $ctl bytes without the cleaner, ${size:-?} with it"
sk_stop_node 1
sk_start_node 1 "${COMMON[@]}"
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node did not come back"
out=$(timeout 60 "$SK_PY" "$HERE/clients/compact_check.py" "$BOOT" committed oc-topic oc-group 2>"$SK_TMP/committed.err")
sk_check "after a restart the group resumes at its last commit ($out)" test "$out" = "COMMITTED $N"
sk_kill9_node 1
sk_start_node 1 "${COMMON[@]}"
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node did not come back after kill -9"
out=$(timeout 60 "$SK_PY" "$HERE/clients/compact_check.py" "$BOOT" committed oc-topic oc-group 2>"$SK_TMP/committed.err")
sk_check "after kill -9 and restart the group resumes at its last commit ($out)" test "$out" = "COMMITTED $N"
[ "$SK_FAILS" -eq 0 ] || { tail -n 5 "$SK_TMP"/*.err; sk_dump_logs; }
sk_summary "$NAME"
