#!/usr/bin/env bash
# Fetch purgatory: a consumer waiting with a long fetch.wait.max.ms gets a
# new message as soon as it is produced (the append completes the waiting
# fetch), not when the 8 s wait times out.
. "$(dirname "$0")/lib.sh"

sk_start_cluster 1
B=127.0.0.1:${SK_KAFKA_PORT[1]}
echo "first" | kcat -b "$B" -P -t fw 2>/dev/null

# consumer: long max wait, min bytes 1; prints each message with a time stamp
kcat -b "$B" -C -t fw -o end -u -q -X fetch.wait.max.ms=8000 -X fetch.min.bytes=1 \
  -f '%s\n' > "$SK_TMP/got.txt" 2>/dev/null &
CPID=$!
SK_PIDS+=("$CPID")
sleep 2   # the consumer is now parked in the purgatory
t0=$(date +%s%N)
echo "second" | kcat -b "$B" -P -t fw 2>/dev/null
for ((i = 0; i < 60; i++)); do grep -q second "$SK_TMP/got.txt" && break; sleep 0.05; done
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
echo "delivered after ${ms} ms"
sk_check "message delivered" grep -q second "$SK_TMP/got.txt"
sk_check "delivered well before the 8 s wait ends (${ms} ms)" test "$ms" -lt 2500
kill "$CPID" 2>/dev/null; wait "$CPID" 2>/dev/null
sk_stop_node 1
sk_summary t_broker_fetch_wait
