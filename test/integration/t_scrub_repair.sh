#!/usr/bin/env bash
# Issue 16, finding 9: a byte flipped in a rolled segment of a follower is
# found by the scrubber and repaired from the leader. 3 nodes, RF 3,
# log.segment.bytes=30000, scrubber at 50 MB/s with a 300 ms pause between
# passes. 300 one-record batches of 1000 bytes are produced (acks=all) and
# replicated; a follower F is stopped cleanly, one byte inside the records
# of the 2nd batch of its first segment is flipped (inside that batch's
# CRC), F restarts (a clean restart does not re-check rolled segments). The
# scrubber logs the file and offset, counts it in /metrics, F truncates
# there and fetches the rest again: its log ends byte-identical to the
# leader's and F is back in the ISR. Round 2 damages the running follower
# while it is in the ISR: the leader drops it from the ISR at its first
# fetch below the HW, and it repairs and rejoins. Then the replicas are reordered with F
# first and a preferred election moves the leadership to F; a CRC-checking
# consumer reads every record's exact value from F.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/repl_lib.sh"
NAME=t_scrub_repair
HERE=$(cd "$(dirname "$0")" && pwd)
SC=(timeout 120 "$SK_PY" "$HERE/clients/seg_check.py")
RAW="$SK_PY $HERE/clients/reassign_raw.py"
command -v jq >/dev/null || { echo "$NAME: jq missing"; exit 1; }
TOPIC=sc; N=300; SIZE=1000
TS0=$(( $(date +%s%3N) - 3600000 ))

repl_opts
OPTS=("${REPL_OPTS[@]}" --set auto.create.topics.enable=true --set num.partitions=1 --set log.segment.bytes=30000
      --set skiff.scrubber.bytes.per.second=50000000 --set skiff.scrubber.pass.interval.ms=300)
sk_write_cluster_conf 3
for i in 1 2 3; do sk_start_node "$i" "${OPTS[@]}"; done
for i in 1 2 3; do sk_wait_port "${SK_ADMIN_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i not up"; done
poll() { local t=0 lim=$(($1 * 5)); shift; until "$@"; do sleep 0.2; t=$((t + 1)); [ "$t" -lt "$lim" ] || return 1; done; }
pstate() { repl_adm "$1" "/v1/topics/$TOPIC" | jq -r '.partitions[0] | "\(.leader) \(.isr | sort | map(tostring) | join(",")) \(.high_watermark) \(.log_end_offset)"' 2>/dev/null; }
synced() { local i; for i in 1 2 3; do [ "$(pstate "$i" | cut -d' ' -f2-)" = "1,2,3 $N $N" ] || return 1; done; }

poll 30 "${SC[@]}" produce "$SK_BOOTSTRAP" $TOPIC 0 0 $SIZE "$TS0" >/dev/null 2>&1  # auto-create, no records
"${SC[@]}" produce "$SK_BOOTSTRAP" $TOPIC 0 $N $SIZE "$TS0" || sk_fail "produce"
poll 30 synced || sk_fail "replicas not in sync: $(pstate 1)"
L=$(repl_leader $TOPIC); F=$(( L % 3 + 1 )); G=$(( F % 3 + 1 ))
sk_log "leader $L, damaged follower $F, other follower $G"

sk_stop_node "$F"
seg=$(ls "$SK_TMP/data/node-$F/$TOPIC-0"/*.log | sort | head -1)
lseg="$SK_TMP/data/node-$L/$TOPIC-0/$(basename "$seg")"
# flip a byte inside the records of the 2nd batch; print that batch's offset
flip() {
  "$SK_PY" - "$1" <<'PY'
import struct, sys
f = open(sys.argv[1], "r+b")
h = f.read(61)
second = 12 + struct.unpack(">i", h[8:12])[0]
f.seek(second); h2 = f.read(61)
f.seek(second + 200); b = f.read(1)
f.seek(second + 200); f.write(bytes([b[0] ^ 0x20]))
print(struct.unpack(">q", h2[:8])[0])
PY
}
bad=$(flip "$seg")
differs() { ! cmp -s "$1" "$2"; }
sk_check "the damaged follower's segment now differs from the leader's" differs "$seg" "$lseg"
sk_start_node "$F" "${OPTS[@]}"
sk_wait_port "${SK_ADMIN_PORT[F]}" 30 "${SK_NODE_PID[F]}" || sk_fail "node $F not back"
found() { grep -q "scrub found a corrupt batch.*$(basename "$seg") at byte [0-9]* (offset $bad)" "$SK_TMP/node-$F.log"; }
sk_check "the scrubber names the file and offset $bad" poll 30 found
sk_check "the follower truncates and fetches again" \
  poll 10 grep -q "$TOPIC-0: corrupt batch at offset $bad .*truncated to it, fetching the rest again from leader $L" \
  "$SK_TMP/node-$F.log"
mx() { repl_adm "$F" /metrics | awk -v m="$1" '$1 == m { print $2 }'; }
sk_check "skiff_scrub_corruptions_total is 1 ($(mx skiff_scrub_corruptions_total))" [ "$(mx skiff_scrub_corruptions_total)" = 1 ]
sk_check "skiff_scrub_bytes_total counts ($(mx skiff_scrub_bytes_total))" [ "$(mx skiff_scrub_bytes_total)" -gt 0 ]
sk_check "all replicas in sync and in the ISR again" poll 30 synced
# followers roll on their own (a fetched set rolls as a whole), so compare
# the partition's bytes end to end, not file by file
all_bytes() { cat $(ls "$SK_TMP/data/node-$1/$TOPIC-0"/*.log | sort) | md5sum; }
same_log() { [ "$(all_bytes "$F")" = "$(all_bytes "$L")" ]; }
sk_check "the repaired log is byte-identical to the leader's" poll 10 same_log

# round 2, on the running follower while it is in the ISR: damage in its
# last rolled segment. It has lost committed data: the leader takes it out
# of the ISR at its first fetch below the HW (not after
# replica.lag.time.max.ms), then it catches up and rejoins.
lmx() { repl_adm "$L" /metrics | awk -v m="$1" '$1 == m { print $2 }'; }
shrinks0=$(lmx skiff_isr_shrinks_total)
seg=$(ls "$SK_TMP/data/node-$F/$TOPIC-0"/*.log | sort | tail -2 | head -1)
bad=$(flip "$seg")
sk_check "round 2: the scrubber finds offset $bad in the live follower" poll 30 found
sk_check "round 2: skiff_scrub_corruptions_total is 2" poll 5 test "$(mx skiff_scrub_corruptions_total)" = 2
shrunk() { [ "$(lmx skiff_isr_shrinks_total)" -gt "$shrinks0" ]; }
sk_check "round 2: the leader took the follower out of the ISR" poll 10 shrunk
sk_check "round 2: all replicas in sync and in the ISR again" poll 30 synced
sk_check "round 2: the repaired log is byte-identical to the leader's" poll 10 same_log

# leadership to F: replicas reordered [F, L, G], then a preferred election
ANY="127.0.0.1:${SK_KAFKA_PORT[$L]}"
sk_check "reassignment to [$F,$L,$G] accepted" test "$($RAW alter "$ANY" $TOPIC 0 "$F,$L,$G" | tail -1)" = "$TOPIC 0 0"
leader_is_f() { [ "$(repl_leader $TOPIC "$F")" = "$F" ] && [ "$(repl_leader $TOPIC "$L")" = "$F" ]; }
elect() { $RAW elect "$ANY" 1 0 $TOPIC 0 >/dev/null 2>&1; leader_is_f; }
sk_check "the repaired follower $F leads after a preferred election" poll 30 elect
sk_check_lines < <("${SC[@]}" check "127.0.0.1:${SK_KAFKA_PORT[$F]}" $TOPIC $N $SIZE "$TS0" 1)
for i in 1 2 3; do sk_stop_node "$i"; done
sk_summary $NAME
