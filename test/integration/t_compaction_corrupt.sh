#!/usr/bin/env bash
# Issue 15: an uncleanable log (corrupt segment) is reported and skipped,
# never crashes the node. One node, two compacted topics; the node is
# stopped, the first 32 bytes of records of the first segment of one are
# overwritten, the node restarts (clean shutdown: the log opens without a
# scan). The cleaner must give up on that log (/metrics
# skiff_cleaner_uncleanable_logs 1, /v1/topics "uncleanable": true, one log
# line), still clean the other, and the node must keep serving.
. "$(dirname "$0")/lib.sh"
NAME=t_compaction_corrupt
HERE=$(cd "$(dirname "$0")" && pwd)
CC=("$SK_PY" "$HERE/clients/compact_check.py")

sk_start_cluster 1 --set log.cleaner.enable=false
BOOT=127.0.0.1:${SK_KAFKA_PORT[1]}
ADMIN=http://127.0.0.1:${SK_ADMIN_PORT[1]}
for t in bad good; do
  timeout 30 "${CC[@]}" "$BOOT" create $t segment.bytes=65536 segment.ms=604800000 >/dev/null 2>"$SK_TMP/create.err" ||
    sk_fail "topic $t not created"
  timeout 60 "${CC[@]}" "$BOOT" produce $t 3000 60 > "$SK_TMP/latest-$t.txt" 2>"$SK_TMP/produce.err"
  sk_check "$t: 20 keys produced" test "$(grep -c '^LATEST ' "$SK_TMP/latest-$t.txt")" = 20
done
sk_stop_node 1
SEG=$SK_TMP/data/node-1/bad-0/00000000000000000000.log
sk_check "bad-0's first segment holds batches ($(stat -c %s "$SEG"))" test "$(stat -c %s "$SEG")" -gt 50000
printf '\377%.0s' $(seq 1 32) | dd of="$SEG" bs=1 seek=61 conv=notrunc status=none

sk_start_node 1 --set log.cleaner.backoff.ms=200
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node did not restart"
sk_wait_port "${SK_ADMIN_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "admin port not up"
metric() { curl -s "$ADMIN/metrics" | sed -n "s/^$1 //p"; }
flag() { curl -s "$ADMIN/v1/topics/$1" | "$SK_PY" -c 'import json,sys; p=json.load(sys.stdin)["partitions"][0]; print(p["uncleanable"], p["cleaner_offset"])'; }
ok=0
for _ in $(seq 1 75); do
  [ "$(metric skiff_cleaner_uncleanable_logs)" = 1 ] && { ok=1; break; }
  sleep 0.2
done
sk_check "skiff_cleaner_uncleanable_logs is 1" test "$ok" = 1
ok=0
for _ in $(seq 1 50); do
  [ "$(flag good | cut -d' ' -f2)" -gt 0 ] 2>/dev/null && { ok=1; break; }
  sleep 0.2
done
sk_check "the other compacted log is still cleaned" test "$ok" = 1
sk_check "/v1/topics/bad says uncleanable ($(flag bad))" test "$(flag bad | cut -d' ' -f1)" = True
sk_check "/v1/topics/good is not uncleanable" test "$(flag good | cut -d' ' -f1)" = False
sk_check "the log names the uncleanable partition" grep -q "bad-0 is uncleanable" "$SK_TMP/node-1.log"
timeout 30 "${CC[@]}" "$BOOT" produce good 20 0 > "$SK_TMP/more.txt" 2>"$SK_TMP/more.err"
sk_check "node still serves produce" test "$(grep -c '^LATEST ' "$SK_TMP/more.txt")" = 20
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { tail -n 5 "$SK_TMP"/*.err; sk_dump_logs; }
sk_summary "$NAME"
