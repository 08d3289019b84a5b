#!/usr/bin/env bash
# Issue 15: a leader change during cleaning loses nothing. Three nodes, a
# compacted RF 3 topic, the cleaner throttled so that a pass takes seconds;
# the leader is killed -9 while its build runs, a new leader takes one more
# record per key (acks=all), the old leader comes back. After cleaning,
# every replica's log (segment files read directly) gives, per key, the
# last value produced, and no live key is missing.
. "$(dirname "$0")/lib.sh"
NAME=t_compaction_failover
HERE=$(cd "$(dirname "$0")" && pwd)
CC=("$SK_PY" "$HERE/clients/compact_check.py")
OPTS=(--set log.cleaner.backoff.ms=200 --set log.cleaner.io.max.bytes.per.second=200000
      --set controller.quorum.fetch.timeout.ms=1000 --set controller.quorum.election.timeout.ms=500
      --set broker.heartbeat.interval.ms=300 --set broker.session.timeout.ms=2500)

sk_start_cluster 3 "${OPTS[@]}"
adm() { curl -s --max-time 2 "http://127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
unfenced() {
  adm 1 /v1/cluster | "$SK_PY" -c 'import json,sys; b=json.load(sys.stdin)["brokers"]; sys.exit(not (len(b) == 3 and not any(x["fenced"] for x in b)))'
}
for _ in $(seq 1 100); do unfenced && break; sleep 0.2; done
timeout 30 "${CC[@]}" "$SK_BOOTSTRAP" create fo replication.factor=3 min.insync.replicas=2 segment.bytes=65536 segment.ms=1500 \
  >/dev/null 2>"$SK_TMP/create.err" || sk_fail "topic not created: $(tail -n 3 "$SK_TMP/create.err")"
timeout 60 "${CC[@]}" "$SK_BOOTSTRAP" produce fo 6000 60 > "$SK_TMP/latest1.txt" 2>"$SK_TMP/produce1.err"
sk_check "20 keys produced" test "$(grep -c '^LATEST ' "$SK_TMP/latest1.txt")" = 20
sleep 1.6
timeout 60 "${CC[@]}" "$SK_BOOTSTRAP" produce fo 20 0 > /dev/null 2>"$SK_TMP/produce2.err"  # rolls

leader_seen_by() { adm "$1" /v1/topics/fo | "$SK_PY" -c 'import json,sys; print(json.load(sys.stdin)["partitions"][0]["leader"])' 2>/dev/null; }
L=$(leader_seen_by 1)
sk_check "a leader ($L)" test -n "$L" -a "$L" != -1
seen=0
for _ in $(seq 1 100); do
  ls "$SK_TMP/data/node-$L/fo-0/"*.cleaned >/dev/null 2>&1 && { seen=1; break; }
  sleep 0.05
done
sk_check "the leader's build is running (.cleaned files) when it is killed" test "$seen" = 1
sk_kill9_node "$L"
O=$(( L % 3 + 1 ))
NL=""
for _ in $(seq 1 100); do
  NL=$(leader_seen_by "$O"); [ -n "$NL" ] && [ "$NL" != -1 ] && [ "$NL" != "$L" ] && break
  sleep 0.1
done
sk_check "a new leader ($NL) after killing $L" test -n "$NL" -a "$NL" != -1 -a "$NL" != "$L"
BOOT2=""
for i in 1 2 3; do [ "$i" = "$L" ] || BOOT2+="${BOOT2:+,}127.0.0.1:${SK_KAFKA_PORT[i]}"; done
timeout 60 "${CC[@]}" "$BOOT2" produce fo 20 0 > "$SK_TMP/latest3.txt" 2>"$SK_TMP/produce3.err"
sk_check "the new leader takes one more record per key" test "$(grep -c '^LATEST ' "$SK_TMP/latest3.txt")" = 20
sk_start_node "$L" "${OPTS[@]}" --set log.cleaner.io.max.bytes.per.second=1000000000
sk_wait_port "${SK_KAFKA_PORT[$L]}" 30 "${SK_NODE_PID[$L]}" || sk_fail "node $L did not restart"
synced() {  # every node: LEO = the new leader's, dirty ratio 0
  local want i
  want=$(adm "$NL" /v1/topics/fo | "$SK_PY" -c 'import json,sys; print(json.load(sys.stdin)["partitions"][0]["log_end_offset"])')
  for i in 1 2 3; do
    adm "$i" /v1/topics/fo | "$SK_PY" -c '
import json, sys
p = json.load(sys.stdin)["partitions"][0]
sys.exit(0 if p["log_end_offset"] == int(sys.argv[1]) and p["high_watermark"] == int(sys.argv[1]) else 1)' "$want" || return 1
  done
}
ok=0
for _ in $(seq 1 150); do synced && { ok=1; break; }; sleep 0.2; done
sk_check "the old leader caught up" test "$ok" = 1
cleaned() {  # every replica cleaned below its active segment
  local i
  for i in 1 2 3; do
    adm "$i" /v1/topics/fo | "$SK_PY" -c '
import json, sys
p = json.load(sys.stdin)["partitions"][0]
sys.exit(0 if p["cleaner_offset"] and p["cleaner_offset"] >= 6000 and p["dirty_ratio"] == 0 else 1)' || return 1
  done
}
ok=0
for _ in $(seq 1 100); do cleaned && { ok=1; break; }; sleep 0.2; done
sk_check "every replica cleaned (cleaner offset >= 6000, dirty ratio 0)" test "$ok" = 1
for i in 1 2 3; do sk_stop_node "$i"; done
for i in 1 2 3; do
  "$SK_PY" "$HERE/clients/segdump.py" "$SK_TMP/data/node-$i/fo-0" > "$SK_TMP/replica-$i.txt" 2>"$SK_TMP/segdump-$i.err"
  # last value per key over the whole log
  awk '{ last[$2] = $3 } END { for (k in last) print k, last[k] }' "$SK_TMP/replica-$i.txt" | sort > "$SK_TMP/last-$i.txt"
done
awk '$1 == "LATEST" { print $2, $4 }' "$SK_TMP/latest3.txt" | sort > "$SK_TMP/want.txt"
for i in 1 2 3; do
  sk_check "replica $i: the last value of every key is the last one produced ($(wc -l < "$SK_TMP/replica-$i.txt") records)" \
    cmp -s "$SK_TMP/last-$i.txt" "$SK_TMP/want.txt"
done
sk_check "cleaned: fewer records than produced on every replica" \
  awk 'END { exit !(NR > 0 && NR < 3000) }' "$SK_TMP/replica-1.txt" "$SK_TMP/replica-2.txt" "$SK_TMP/replica-3.txt"
[ "$SK_FAILS" -eq 0 ] || { tail -n 5 "$SK_TMP"/*.err; sk_dump_logs; }
sk_summary "$NAME"
