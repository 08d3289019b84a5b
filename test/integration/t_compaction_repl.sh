#!/usr/bin/env bash
# Issue 15: replicas compact independently (as in Kafka) and agree. Three
# nodes, a compacted topic with replication factor 3 (uncompressed, so the
# segment files can be read directly), 3,000 records over 20 keys plus 2
# tombstones, then one record per key after segment.ms (the roll). Each
# node's cleaner must clean its own replica (/v1/topics on each node: its
# cleaner offset > 0 and dirty ratio 0) and, after delete.retention.ms, the
# three replicas' segment files must hold the same records: below the
# active segment one per live key with its latest value, no tombstone.
. "$(dirname "$0")/lib.sh"
NAME=t_compaction_repl
HERE=$(cd "$(dirname "$0")" && pwd)
CC=("$SK_PY" "$HERE/clients/compact_check.py")

sk_start_cluster 3 --set log.cleaner.backoff.ms=200
BOOT=$SK_BOOTSTRAP
unfenced() {  # 0 once node 1 sees three unfenced brokers
  curl -s --max-time 1 "http://127.0.0.1:${SK_ADMIN_PORT[1]}/v1/cluster" |
    "$SK_PY" -c 'import json,sys; b=json.load(sys.stdin)["brokers"]; sys.exit(not (len(b) == 3 and not any(x["fenced"] for x in b)))'
}
for _ in $(seq 1 100); do unfenced && break; sleep 0.2; done
timeout 30 "${CC[@]}" "$BOOT" create rep replication.factor=3 segment.bytes=65536 segment.ms=1500 \
  >/dev/null 2>"$SK_TMP/create.err" || sk_fail "topic not created: $(tail -n 3 "$SK_TMP/create.err")"
CC_TOMBSTONES=1 timeout 60 "${CC[@]}" "$BOOT" produce rep 3000 60 > "$SK_TMP/latest.txt" 2>"$SK_TMP/produce.err"
sk_check "20 keys produced ($(grep -c '^LATEST ' "$SK_TMP/latest.txt"))" test "$(grep -c '^LATEST ' "$SK_TMP/latest.txt")" = 20
sleep 1.6
timeout 60 "${CC[@]}" "$BOOT" produce rep 20 0 > "$SK_TMP/latest2.txt" 2>"$SK_TMP/produce2.err"

replica_done() {  # replica_done NODE -> 0 when its replica is cleaned below the active segment
  curl -s "http://127.0.0.1:${SK_ADMIN_PORT[$1]}/v1/topics/rep" | "$SK_PY" -c '
import json, sys
p = json.load(sys.stdin)["partitions"][0]
sys.exit(0 if p["cleaner_offset"] and p["cleaner_offset"] > 3000 and p["dirty_ratio"] == 0 else 1)'
}
for i in 1 2 3; do
  ok=0
  for _ in $(seq 1 100); do replica_done "$i" && { ok=1; break; }; sleep 0.2; done
  sk_check "node $i cleaned its own replica" test "$ok" = 1
done
sleep 2.5   # delete.retention.ms (2 s): the tombstones' horizon passes, a pass drops them
sk_stop_node 1; sk_stop_node 2; sk_stop_node 3
for i in 1 2 3; do
  "$SK_PY" "$HERE/clients/segdump.py" "$SK_TMP/data/node-$i/rep-0" > "$SK_TMP/replica-$i.txt" 2>"$SK_TMP/segdump-$i.err"
done
sk_check "replica 2 has the same records as replica 1" cmp -s "$SK_TMP/replica-1.txt" "$SK_TMP/replica-2.txt"
sk_check "replica 3 has the same records as replica 1" cmp -s "$SK_TMP/replica-1.txt" "$SK_TMP/replica-3.txt"
# below the roll: exactly the latest record of each live key, no tombstone
awk '$1 < 3002' "$SK_TMP/replica-1.txt" | sort > "$SK_TMP/cleaned.txt"
awk '$1 == "LATEST" && $4 != "-" { print $3, $2, $4 }' "$SK_TMP/latest.txt" | sort > "$SK_TMP/want.txt"
sk_check "cleaned part: the latest record of each of the 18 live keys, no tombstone ($(wc -l < "$SK_TMP/cleaned.txt") records)" \
  cmp -s "$SK_TMP/cleaned.txt" "$SK_TMP/want.txt"
sk_check "18 live keys expected" test "$(wc -l < "$SK_TMP/want.txt")" = 18
[ "$SK_FAILS" -eq 0 ] || { tail -n 5 "$SK_TMP"/*.err; diff "$SK_TMP/cleaned.txt" "$SK_TMP/want.txt" | head; sk_dump_logs; }
sk_summary "$NAME"
