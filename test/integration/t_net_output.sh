#!/usr/bin/env bash
# Issue 16 finding 3: a client that never reads its Fetch responses stops
# being served and is disconnected. With socket.write.stall.ms=3000, 4 raw
# connections each pipeline 8 Fetch requests for ~16 MB of records and never
# read: the node serves one Fetch per connection (reading pauses while more
# than 4 MiB of output waits), holds no copy of the records for Fetch v11
# (file ranges, sendfile: RSS grows by far less than 4 x 16 MB), and closes
# all of them after the stall timeout (/metrics reason="write_stall"). The
# same with Fetch v4 (records copied for old clients): closed, and RSS
# falls back once they are gone. A kcat consumer that reads is unaffected.
. "$(dirname "$0")/lib.sh"
NAME=t_net_output
A="$(dirname "$0")/clients/net_attack.py"
# under ASan (SKIFF_BIN_DIR=build-asan/bin) freed memory sits in its quarantine
# and allocator caches; let it go so the RSS checks measure skiff
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:allocator_release_to_os_interval_ms=100"

sk_start_cluster 1 --set socket.write.stall.ms=3000
PID=${SK_NODE_PID[1]}
ADMIN=127.0.0.1:${SK_ADMIN_PORT[1]}
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$PID/status"; }
metric() { curl -s "http://$ADMIN/metrics" | awk -v m="$1" '$1 == m {print int($2)}'; }

"$SK_PY" -c 'import sys; [sys.stdout.write("%05d" % i + "v" * 99994 + "\n") for i in range(170)]' > "$SK_TMP/big.txt"
timeout 60 kcat -P -b "$SK_BOOTSTRAP" -t big -X topic.metadata.refresh.interval.ms=100 < "$SK_TMP/big.txt" 2>"$SK_TMP/kcat.err"
n=$(timeout 30 kcat -C -b "$SK_BOOTSTRAP" -t big -p 0 -o beginning -e -q 2>/dev/null | wc -l)
sk_check "170 records of 100 kB stored ($n)" test "$n" -eq 170
base=$(rss_kb)
fetches0=$(metric 'skiff_requests_total{api="Fetch"}')

for v in 11 4; do
  "$SK_PY" "$A" noread 127.0.0.1 "${SK_KAFKA_PORT[1]}" 4 big 16000000 $v 7 > "$SK_TMP/noread$v.out" 2>&1 &
  APID=$!; SK_PIDS+=("$APID")
  sleep 2
  peak=$(rss_kb)
  fetches=$(metric 'skiff_requests_total{api="Fetch"}')
  sk_log "fetch v$v, 4 non-reading clients: RSS ${peak} kB (baseline ${base}), Fetch requests $((fetches - fetches0))"
  sk_check "v$v: non-reading connections not served on: at most 2 of 8 Fetches each ($((fetches - fetches0)) <= 8)" \
    test $((fetches - fetches0)) -le 8
  if [ "$v" = 11 ]; then
    sk_check "v11: records sent from the files, not copied (RSS +$((peak - base)) kB < 16 MB)" test $((peak - base)) -lt 16384
  fi
  # a client that reads is served meanwhile
  n=$(timeout 30 kcat -C -b "$SK_BOOTSTRAP" -t big -p 0 -o beginning -e -q 2>/dev/null | wc -l)
  sk_check "v$v: a reading consumer gets all 170 meanwhile ($n)" test "$n" -eq 170
  wait "$APID"
  sk_check "v$v: non-reading connections closed by the node ($(cat "$SK_TMP/noread$v.out" | tail -1))" \
    grep -q '^closed 4 of 4' "$SK_TMP/noread$v.out"
  fetches0=$(metric 'skiff_requests_total{api="Fetch"}')
done
stalls=$(curl -s "http://$ADMIN/metrics" | awk '$1 == "skiff_connections_closed_total{reason=\"write_stall\"}" {print int($2)}')
sk_check "8 write-stall closes counted ($stalls)" test "${stalls:-0}" -eq 8
sleep 1
after=$(rss_kb)
sk_check "RSS back near the baseline (+$((after - base)) kB < 16 MB)" test $((after - base)) -lt 16384
sk_check "node logged the stall" grep -q 'socket.write.stall.ms' "$SK_TMP/node-1.log"
sk_check "node still running" kill -0 "$PID"
[ "$SK_FAILS" -eq 0 ] || { cat "$SK_TMP"/*.err "$SK_TMP"/noread*.out; sk_dump_logs; }
sk_summary "$NAME"
