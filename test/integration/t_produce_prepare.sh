#!/usr/bin/env bash
# Produce's CRC and record checks done before the state loop (issue 19,
# broker/api/prepare.h): kcat (librdkafka) produces 3,000 keyed messages
# per codec (none, gzip, snappy, lz4, zstd) with acks=all to one node; each
# topic is read back byte for byte (batches below message.max.bytes=20000,
# which rawproduce.py needs), and the node's
# skiff_produce_batches_prechecked_total must grow with each codec's
# produce (the batches were appended on the verdict of the check made
# before dispatch, not checked a second time). Then hand-built bad batches
# (clients/rawproduce.py: CRC, lengths, counts, magic, control, size) must
# get the same error codes as without the hook and never be stored.
. "$(dirname "$0")/lib.sh"
NAME=t_produce_prepare
HERE=$(cd "$(dirname "$0")" && pwd)
MSG_MAX=20000
N=3000
KC=(timeout 60 kcat -q)

# 2 network loops whatever the suite's setting: with one the hook does not run
sk_start_cluster 1 --set num.network.threads=2 --set num.partitions=1 --set auto.create.topics.enable=true --set message.max.bytes=$MSG_MAX
BOOT=$SK_BOOTSTRAP; ADMIN=127.0.0.1:${SK_ADMIN_PORT[1]}
metric() { curl -s "http://$ADMIN/metrics" | awk -v m="$1" '$1 == m {print int($2)}'; }

"$SK_PY" - "$SK_TMP/in" "$N" <<'PY'
import sys
with open(sys.argv[1], "w", encoding="utf-8") as f:
    for i in range(int(sys.argv[2])):
        f.write("k%05d\tv%05d-%s\n" % (i, i, ("body-%d-" % (i % 31)) * (i % 11 + 1)))
PY
awk -F'\t' '{ printf "%s\t%s\t%d\n", $1, $2, NR - 1 }' "$SK_TMP/in" > "$SK_TMP/expect"

last=$(metric skiff_produce_batches_prechecked_total)
sk_check "the counter is exported" test -n "$last"
for c in none gzip snappy lz4 zstd; do
  "${KC[@]}" -P -b "$BOOT" -t "pp-$c" -p 0 -K '\t' -X compression.codec="$c" -X linger.ms=10 -X batch.size=15000 \
    -X request.required.acks=-1 < "$SK_TMP/in" 2>>"$SK_TMP/kcat.err"
  "${KC[@]}" -C -b "$BOOT" -t "pp-$c" -p 0 -o beginning -c "$N" -e -f '%k\t%s\t%o\n' \
    > "$SK_TMP/out-$c" 2>>"$SK_TMP/kcat.err"
  sk_check "$c: $N messages read back byte for byte" cmp -s "$SK_TMP/expect" "$SK_TMP/out-$c"
  now=$(metric skiff_produce_batches_prechecked_total)
  sk_check "$c: batches appended on the precheck's verdict ($last -> $now)" test "${now:-0}" -gt "${last:-0}"
  last=$now
done

# bad batches: the same codes as the full checks, nothing stored
printf 'seed\n' | "${KC[@]}" -b "$BOOT" -P -t raw-produce -p 0 2>>"$SK_TMP/kcat.err"
before=$((SK_PASS + SK_FAILS))
timeout 120 "$SK_PY" "$HERE/clients/rawproduce.py" "$BOOT" raw-produce "$MSG_MAX" > "$SK_TMP/rawproduce.out" 2>&1
sk_check_lines < "$SK_TMP/rawproduce.out"
sk_check "rawproduce ran all its cases" test $((SK_PASS + SK_FAILS - before)) -ge 15
want=$(sed -n 's/^STORED //p' "$SK_TMP/rawproduce.out" | tr ' ' '\n')
got=$("${KC[@]}" -b "$BOOT" -C -t raw-produce -p 0 -o 1 -e -f '%s\n' 2>>"$SK_TMP/kcat.err")
sk_check "the log holds exactly the accepted batches" test -n "$want" -a "$got" = "$want"
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { cat "$SK_TMP/kcat.err"; sk_dump_logs; }
sk_summary "$NAME"
