#!/usr/bin/env bash
# Issue 15: the log cleaner runs in the broker. One node, compacted topics
# with small segment.ms written by confluent-kafka: after a pass a consumer
# from the beginning gets exactly the latest record per key (offsets,
# timestamps and headers unchanged), tombstones go after
# delete.retention.ms; every codec; committed and aborted transactions.
# log.cleaner.threads changed by AlterConfigs stops and restarts the
# cleaner. The cleaner's series in /metrics and the partition's cleaner offset in
# /v1/topics/{name} must have moved.
. "$(dirname "$0")/lib.sh"
NAME=t_compaction
HERE=$(cd "$(dirname "$0")" && pwd)

sk_start_cluster 1 --set log.cleaner.backoff.ms=200
BOOT=127.0.0.1:${SK_KAFKA_PORT[1]}
ADMIN=http://127.0.0.1:${SK_ADMIN_PORT[1]}

sk_check_lines < <(timeout 120 "$SK_PY" "$HERE/clients/compact_check.py" "$BOOT" codecs \
  none gzip snappy lz4 zstd 2>"$SK_TMP/codecs.err")
sk_check "codec checks all printed" test $((SK_PASS + SK_FAILS)) -ge 20
sk_check_lines < <(timeout 60 "$SK_PY" "$HERE/clients/compact_check.py" "$BOOT" txn 2>"$SK_TMP/txn.err")

# the cleaner keys act at run time: log.cleaner.threads=0 (AlterConfigs)
# stops it, 1 starts it again
CC=("$SK_PY" "$HERE/clients/compact_check.py")
passes() { curl -s "$ADMIN/metrics" | sed -n 's/^skiff_cleaner_passes_total //p'; }
timeout 30 "${CC[@]}" "$BOOT" alter-broker 1 log.cleaner.threads=0 log.cleaner.backoff.ms=200 2>"$SK_TMP/alter.err" ||
  sk_check "AlterConfigs log.cleaner.threads=0 accepted" false
timeout 30 "${CC[@]}" "$BOOT" create dyn >/dev/null 2>>"$SK_TMP/alter.err"
timeout 30 "${CC[@]}" "$BOOT" produce dyn 200 0 >/dev/null 2>>"$SK_TMP/alter.err"
sleep 0.4
timeout 30 "${CC[@]}" "$BOOT" produce dyn 20 0 >/dev/null 2>>"$SK_TMP/alter.err"   # rolls: 200 records cleanable
dyn_cleaned() { curl -s "$ADMIN/v1/topics/dyn" | "$SK_PY" -c 'import json,sys; sys.exit(json.load(sys.stdin)["partitions"][0]["cleaner_offset"] == 0)'; }
p0=$(passes); sleep 2; p1=$(passes)
sk_check "log.cleaner.threads=0 at run time: no pass ($p0 -> $p1)" test "$p0" = "$p1"
c0=1; dyn_cleaned || c0=0
sk_check "log.cleaner.threads=0 at run time: dyn not cleaned" test "$c0" = 0
timeout 30 "${CC[@]}" "$BOOT" alter-broker 1 log.cleaner.threads=1 log.cleaner.backoff.ms=200 2>>"$SK_TMP/alter.err"
ok=0
for _ in $(seq 1 25); do dyn_cleaned && { ok=1; break; }; sleep 0.2; done
sk_check "log.cleaner.threads=1 at run time: dyn cleaned" test "$ok" = 1

curl -s "$ADMIN/metrics" > "$SK_TMP/metrics.txt"
val() { sed -n "s/^$1 //p" "$SK_TMP/metrics.txt"; }
sk_check "skiff_cleaner_passes_total > 0 ($(val skiff_cleaner_passes_total))" \
  awk -v v="$(val skiff_cleaner_passes_total)" 'BEGIN { exit !(v > 0) }'
sk_check "skiff_cleaner_records_removed_total > 0" \
  awk -v v="$(val skiff_cleaner_records_removed_total)" 'BEGIN { exit !(v > 0) }'
rd=$(val skiff_cleaner_bytes_read_total)
wr=$(val skiff_cleaner_bytes_written_total)
sk_check "skiff_cleaner_bytes_read_total > written ($rd > $wr)" awk -v r="$rd" -v w="$wr" 'BEGIN { exit !(r > 0 && w > 0 && r > w) }'
last=$(val skiff_cleaner_last_pass_timestamp_seconds)
now=$(date +%s)
sk_check "skiff_cleaner_last_pass_timestamp_seconds recent ($last, now $now)" \
  awk -v v="$last" -v now="$now" 'BEGIN { exit !(v > now - 120 && v <= now + 1) }'
sk_check "skiff_cleaner_uncleanable_logs 0" test "$(val skiff_cleaner_uncleanable_logs)" = 0
curl -s "$ADMIN/v1/topics/cmp-none" > "$SK_TMP/topic.json"
sk_check "/v1/topics shows a cleaner offset > 0 and a dirty ratio ($(cat "$SK_TMP/topic.json" | head -c 300))" \
  "$SK_PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["partitions"][0]; sys.exit(not (p["cleaner_offset"] > 0 and 0 <= p["dirty_ratio"] <= 1))' "$SK_TMP/topic.json"
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { tail -n 20 "$SK_TMP/codecs.err" "$SK_TMP/txn.err"; sk_dump_logs; }
sk_summary "$NAME"
