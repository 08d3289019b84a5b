#!/usr/bin/env bash
# Issue 15: kill -9 during cleaning. One node, a compacted topic of ~2 MB in
# 64 KiB segments, the cleaner throttled (log.cleaner.io.max.bytes.per.second)
# so that a pass takes seconds: the node is killed twice while a build has
# .cleaned files on disk, then restarted unthrottled. Every restart must
# read consistently (each key's last record is the last value produced, no
# offset twice, offsets increasing), the last pass must finish (one record
# per key below the active segment), and no .cleaned / .swap file may be left.
. "$(dirname "$0")/lib.sh"
NAME=t_compaction_kill9
HERE=$(cd "$(dirname "$0")" && pwd)
CC=("$SK_PY" "$HERE/clients/compact_check.py")
# 800 KB/s: a pass reads the ~2.2 MB twice (map, then the .cleaned writes),
# ~2.7 s each, so the kill 0.1-0.9 s after the first .cleaned file lands
# inside the writes; a loaded box only makes the throttled phases longer
SLOW=(--set log.cleaner.backoff.ms=200 --set log.cleaner.io.max.bytes.per.second=800000)

sk_start_cluster 1 "${SLOW[@]}" --set log.cleaner.enable=false
BOOT=127.0.0.1:${SK_KAFKA_PORT[1]}
timeout 30 "${CC[@]}" "$BOOT" create big segment.bytes=65536 segment.ms=2000 >/dev/null 2>"$SK_TMP/create.err" ||
  sk_fail "topic not created: $(tail -n 3 "$SK_TMP/create.err")"
timeout 60 "${CC[@]}" "$BOOT" produce big 16000 120 > "$SK_TMP/latest.txt" 2>"$SK_TMP/produce.err"
sk_check "20 keys produced" test "$(grep -c '^LATEST ' "$SK_TMP/latest.txt")" = 20
sk_stop_node 1
PDIR=$SK_TMP/data/node-1/big-0

# consistent reads: per key the last record read is the last one produced;
# offsets strictly increasing
check_reads() {  # check_reads WHAT [exact]
  timeout 60 "${CC[@]}" "$BOOT" dump big > "$SK_TMP/dump.txt" 2>"$SK_TMP/dump.err"
  sk_check "$1: offsets strictly increasing ($(wc -l < "$SK_TMP/dump.txt") records)" \
    awk '$1 == "REC" { if (n++ && $3 <= last) exit 1; last = $3 } END { exit !(n > 0) }' "$SK_TMP/dump.txt"
  sk_check "$1: each key's last record is the last value produced" \
    awk 'FNR == NR { want[$2] = $3 " " $4; next } $1 == "REC" { got[$2] = $3 " " $4 }
         END { for (k in want) if (got[k] != want[k]) exit 1; for (k in got) if (!(k in want)) exit 1 }' \
    "$SK_TMP/latest.txt" "$SK_TMP/dump.txt"
  if [ "${2:-}" = exact ]; then
    sk_check "$1: one record per key in the cleaned part, 20 in the active segment" \
      test "$(grep -c '^REC ' "$SK_TMP/dump.txt")" = 40
  fi
}

for round in 1 2; do
  sk_start_node 1 "${SLOW[@]}"
  sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node did not start (round $round)"
  seen=0
  # the throttled build maps ~2.2 MB at 800 KB/s (2.7 s) before it writes
  # its first .cleaned file: wait up to ~15 s (a 5 s bound at 400 KB/s
  # failed on this box whenever the ls loop ran fast)
  for _ in $(seq 1 300); do
    if ls "$PDIR"/*.cleaned >/dev/null 2>&1; then seen=1; break; fi
    sleep 0.05
  done
  sk_check "round $round: a build is writing .cleaned files" test "$seen" = 1
  sleep 0.$((RANDOM % 9 + 1))
  sk_kill9_node 1
  sk_start_node 1 --set log.cleaner.enable=false
  sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node did not restart (round $round)"
  check_reads "after kill -9 (round $round)"
  sk_check "round $round: no .cleaned or .swap left after the restart" \
    bash -c "! ls '$PDIR'/*.cleaned '$PDIR'/*.swap 2>/dev/null | grep -q ."
  sk_stop_node 1
done

sk_start_node 1 --set log.cleaner.backoff.ms=200
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node did not start (final)"
# one more record per key after segment.ms: the segment rolls, so all the
# data above is cleanable and the active segment holds exactly these 20.
# A reopened segment's age counts from its file's mtime (storage/segment.c):
# wait until the active one is 2.1 s old, not 2.1 s from now.
"$SK_PY" - "$PDIR" <<'PY' || sk_fail "no active segment in $PDIR"
import glob, os, sys, time
active = max(glob.glob(os.path.join(sys.argv[1], "*.log")))
time.sleep(max(0.0, os.stat(active).st_mtime + 2.1 - time.time()))
PY
timeout 60 "${CC[@]}" "$BOOT" produce big 20 0 > "$SK_TMP/latest.txt" 2>"$SK_TMP/produce2.err"
ok=0
for _ in $(seq 1 100); do
  r=$(curl -s "http://127.0.0.1:${SK_ADMIN_PORT[1]}/v1/topics/big" |
      "$SK_PY" -c 'import json,sys; p=json.load(sys.stdin)["partitions"][0]; print(p["cleaner_offset"] > 0 and p["dirty_ratio"] == 0)')
  [ "$r" = True ] && { ok=1; break; }
  sleep 0.2
done
sk_check "final pass done (cleaner offset > 0, dirty ratio 0)" test "$ok" = 1
check_reads "after the final pass" exact
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { tail -n 5 "$SK_TMP"/*.err; sk_dump_logs; }
sk_summary "$NAME"
