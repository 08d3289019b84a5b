#!/usr/bin/env bash
# kcat (librdkafka) against one skiff node: for each codec (none, gzip, snappy,
# lz4, zstd) produce 10,000 keyed messages with headers in two halves a
# timestamp apart, then consume from the beginning (also with fetch limits
# below one batch), from an offset (with and without a count) and from the
# timestamp; every output must equal, byte for byte, what the script itself
# wrote (key, value, headers, offset).
# Compressed topics must also take less disk than the uncompressed one (the
# admin port's size_bytes), which shows the codec really went over the wire.
. "$(dirname "$0")/lib.sh"
NAME=t_kcat_codecs
N=10000; HALF=5000
CODECS="none gzip snappy lz4 zstd"
KC=(timeout 60 kcat -q)
# consumers stop at the end (-e) once a Fetch comes back empty there: with
# librdkafka's default fetch.wait.max.ms (500) the broker holds that last
# Fetch 0.5 s, in each of the ~40 consumer runs below. What is compared is
# what they read, not how long the end is waited for.
KCC=("${KC[@]}" -X fetch.wait.max.ms=20)

sk_start_cluster 1 --set num.partitions=1 --set auto.create.topics.enable=true
BOOT=$SK_BOOTSTRAP; ADMIN=${SK_ADMIN_PORT[1]}
sk_log "node up: kafka $BOOT admin $ADMIN"

# Input "key<TAB>value" lines; values vary in length, repeat (so codecs have
# something to squeeze) and carry non-ASCII UTF-8.
"$SK_PY" - "$SK_TMP/in" <<'EOF'
import sys
with open(sys.argv[1], "w", encoding="utf-8") as f:
    for i in range(10000):
        body = ("payload-%d-" % (i % 97)) * (i % 13 + 1)
        f.write("k%05d\tv%05d-%s\u00e9\u2713\n" % (i, i, body))
EOF
HDRS="h1=alpha,trace=αβγ"
# expected consumer output: key TAB value TAB headers TAB offset
awk -v h="$HDRS" -F'\t' '{ printf "%s\t%s\t%s\t%d\n", $1, $2, h, NR - 1 }' "$SK_TMP/in" > "$SK_TMP/expect"
FMT='%k\t%s\t%h\t%o\n'

produce() {  # produce TOPIC CODEC FIRST_LINE COUNT
  tail -n +"$3" "$SK_TMP/in" | head -n "$4" |
    "${KC[@]}" -P -b "$BOOT" -t "$1" -p 0 -K '\t' -H h1=alpha -H 'trace=αβγ' \
      -X compression.codec="$2" -X linger.ms=20 -X request.required.acks=-1
}
consume() {  # consume TOPIC OUT kcat-args...
  local t=$1 out=$2; shift 2
  "${KCC[@]}" -C -b "$BOOT" -t "$t" -p 0 -e -f "$FMT" "$@" > "$out"
}
same() {  # same GOT WANT -> byte-for-byte equal, else show the first difference
  cmp -s "$1" "$2" && return 0
  echo "  $(basename "$1"): $(wc -l < "$1") lines, want $(wc -l < "$2")"
  diff "$1" "$2" | head -n 4
  return 1
}

for c in $CODECS; do
  t="codec-$c"
  sk_check "$c: produce first half" produce "$t" "$c" 1 "$HALF"
  # ts splits the halves: the first half's CreateTimes were taken before
  # its producer exited, the second's after ts (same clock, ms resolution);
  # the gaps only keep them off ts's millisecond
  sleep 0.1
  ts=$(( $(date +%s%3N) ))
  sleep 0.1
  sk_check "$c: produce second half" produce "$t" "$c" $((HALF + 1)) $((N - HALF))

  consume "$t" "$SK_TMP/$c.all" -o beginning
  sk_check "$c: from beginning equals input" same "$SK_TMP/$c.all" "$SK_TMP/expect"

  # fetch limits far below one batch: the broker must still return a whole
  # first batch (KIP-74) and the client must make progress to the end
  consume "$t" "$SK_TMP/$c.small" -o beginning -X fetch.message.max.bytes=1024 \
    -X fetch.max.bytes=4096 -X message.max.bytes=4096
  sk_check "$c: from beginning with 1 KiB fetch limits" same "$SK_TMP/$c.small" "$SK_TMP/expect"

  consume "$t" "$SK_TMP/$c.off" -o 7777
  tail -n +7778 "$SK_TMP/expect" > "$SK_TMP/want.off"
  sk_check "$c: from offset 7777" same "$SK_TMP/$c.off" "$SK_TMP/want.off"

  # starts inside a batch and stops inside another
  consume "$t" "$SK_TMP/$c.mid" -o 1234 -c 100
  sed -n '1235,1334p' "$SK_TMP/expect" > "$SK_TMP/want.mid"
  sk_check "$c: 100 from offset 1234" same "$SK_TMP/$c.mid" "$SK_TMP/want.mid"

  consume "$t" "$SK_TMP/$c.ts" -o "s@$ts"
  tail -n +$((HALF + 1)) "$SK_TMP/expect" > "$SK_TMP/want.ts"
  sk_check "$c: from timestamp $ts" same "$SK_TMP/$c.ts" "$SK_TMP/want.ts"

  # every record keeps its CreateTime: first half before ts, second after
  "${KCC[@]}" -C -b "$BOOT" -t "$t" -p 0 -e -o beginning -f '%o %T\n' > "$SK_TMP/$c.times"
  sk_check "$c: timestamps on the right side of $ts" awk -v ts="$ts" -v h="$HALF" -v n="$N" '
    ($1 < h && $2 >= ts) || ($1 >= h && $2 < ts) || $2 <= 0 { bad++ }
    END { if (NR != n || bad) { print "  " NR " records, " bad+0 " bad timestamps"; exit 1 } }' "$SK_TMP/$c.times"

  # A time that falls inside a (compressed) batch: the answer is the first
  # record stamped at or after it, not the start of its batch. Pick the
  # first record of the second half after offset 7000 whose stamp is larger
  # than its predecessor's; the want is computed from the stamps listed above.
  mid=$(awk '$1 > 7000 && $2 > prev { print $2; exit } { prev = $2 }' "$SK_TMP/$c.times")
  first=$(awk -v t="${mid:-0}" '$2 >= t { print $1; exit }' "$SK_TMP/$c.times")
  if [ -n "$mid" ] && [ -n "$first" ]; then
    consume "$t" "$SK_TMP/$c.ts2" -o "s@$mid"
    tail -n +$((first + 1)) "$SK_TMP/expect" > "$SK_TMP/want.ts2"
    sk_check "$c: from timestamp $mid inside a batch (offset $first)" same "$SK_TMP/$c.ts2" "$SK_TMP/want.ts2"
  else
    sk_check "$c: found a timestamp step after offset 7000" false
  fi
done

# Eight producers at once (mixed codecs) into one partition, then four
# consumers at once: nothing lost, each producer's messages in its order.
PAR=8; PER=2000
for ((j = 0; j < PAR; j++)); do
  set -- $CODECS; shift $((j % 5)); codec=$1
  seq -f "p$j-%05g" 1 $PER |
    "${KC[@]}" -P -b "$BOOT" -t parallel -p 0 -X compression.codec="$codec" -X linger.ms=5 \
      -X request.required.acks=-1 2>"$SK_TMP/par-$j.err" &
  par_pids+=($!)
done
par_rc=0
for p in "${par_pids[@]}"; do wait "$p" || par_rc=1; done
sk_check "$PAR concurrent producers finished" test $par_rc -eq 0
for ((j = 0; j < 4; j++)); do
  "${KCC[@]}" -C -b "$BOOT" -t parallel -p 0 -o beginning -e -f '%s\n' > "$SK_TMP/par-read-$j" &
  par_cons+=($!)
done
for p in "${par_cons[@]}"; do wait "$p"; done
for ((j = 0; j < PAR; j++)); do seq -f "p$j-%05g" 1 $PER; done | sort > "$SK_TMP/par-want"
for ((j = 0; j < 4; j++)); do
  sort "$SK_TMP/par-read-$j" > "$SK_TMP/par-got"
  sk_check "concurrent consumer $j: all $((PAR * PER)) messages, none twice" same "$SK_TMP/par-got" "$SK_TMP/par-want"
done
in_order() {  # each producer's own messages keep their order in the log
  local j
  for ((j = 0; j < PAR; j++)); do
    grep "^p$j-" "$SK_TMP/par-read-0" | sort -c 2>/dev/null || { echo "  producer $j out of order"; return 1; }
  done
}
sk_check "each producer's messages in its own order" in_order

# Negative controls: the comparison must notice one changed byte and one
# missing record, or the checks above prove nothing.
sed '5000s/v04999/v04998/' "$SK_TMP/expect" > "$SK_TMP/expect.bad"
sk_check "control: one changed byte is detected" eval '! same "$SK_TMP/none.all" "$SK_TMP/expect.bad" >/dev/null'
sed '9999d' "$SK_TMP/expect" > "$SK_TMP/expect.short"
sk_check "control: one missing record is detected" eval '! same "$SK_TMP/none.all" "$SK_TMP/expect.short" >/dev/null'

# The codec reached the log: compressed partitions are smaller on disk.
size_of() {
  curl -sf --max-time 10 "http://127.0.0.1:$ADMIN/v1/topics/codec-$1" | jq -e '.partitions[0].size_bytes'
}
plain=$(size_of none); [[ $plain =~ ^[0-9]+$ ]] || plain=0
sk_check "admin reports size_bytes for codec-none ($plain)" test "$plain" -gt 0
for c in gzip snappy lz4 zstd; do
  sz=$(size_of "$c"); [[ $sz =~ ^[0-9]+$ ]] || sz=0
  sk_check "$c: stored compressed ($sz bytes vs $plain plain)" \
    test "$sz" -gt 0 -a $((sz * 10)) -lt $((plain * 6))
done

kill -0 "${SK_NODE_PID[1]}" 2>/dev/null || sk_fail "node died"
sk_summary "$NAME"
