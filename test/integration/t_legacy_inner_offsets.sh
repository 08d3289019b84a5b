#!/usr/bin/env bash
# Compressed legacy message sets whose inner offsets repeat (issue 22).
# Sarama with its default version (0.8.2) puts every inner message of a gzip
# or snappy wrapper at offset 0; Kafka ignores magic 0 inner offsets and
# rewrites non-sequential magic 1 ones, so such a producer must be able to
# write. clients/legacy_produce.py sends Produce v0/v1/v2 with magic 0 and 1
# sets (gzip, raw and xerial snappy; inner offsets 0,0,0 / 5,6,7 / 0,1,2);
# every one must be accepted at the next offset, and a real consumer (kcat,
# librdkafka) must read every record back once, in order, with consecutive
# offsets.
. "$(dirname "$0")/lib.sh"
NAME=t_legacy_inner_offsets
HERE=$(cd "$(dirname "$0")" && pwd)
TOPIC=legacy-inner

sk_start_cluster 1 --set num.partitions=1 --set auto.create.topics.enable=true
BOOT=$SK_BOOTSTRAP
# create the topic (empty): a metadata request with auto-creation
timeout 30 kcat -b "$BOOT" -L -t "$TOPIC" >/dev/null 2>"$SK_TMP/kcat.err"
for _ in $(seq 1 50); do
  timeout 10 kcat -b "$BOOT" -L -t "$TOPIC" -J 2>>"$SK_TMP/kcat.err" |
    jq -e '.topics[0].partitions | length == 1' >/dev/null 2>&1 && break
  sleep 0.2
done

timeout 180 "$SK_PY" "$HERE/clients/legacy_produce.py" "$BOOT" "$TOPIC" > "$SK_TMP/legacy.out" 2>&1
sk_check_lines < <(grep -v "^STORED " "$SK_TMP/legacy.out")
sk_check "legacy_produce.py ran all its cases" test "$(grep -c '^PASS \|^FAIL ' "$SK_TMP/legacy.out")" -eq 45

want=$(sed -n 's/^STORED //p' "$SK_TMP/legacy.out" | tr ' ' '\n')
n=$(printf '%s\n' "$want" | grep -c .)
timeout 60 kcat -q -b "$BOOT" -C -t "$TOPIC" -p 0 -o beginning -c "$n" -e -f '%o %s\n' \
  > "$SK_TMP/consumed" 2>>"$SK_TMP/kcat.err"
expect=$(printf '%s\n' "$want" | awk 'NF { print NR - 1, $0 }')
sk_check "kcat reads all $n records once, in order, at offsets 0..$((n - 1))" \
  test -n "$want" -a "$(cat "$SK_TMP/consumed")" = "$expect"
sk_check "no record past the last one" \
  test "$(timeout 30 kcat -q -b "$BOOT" -C -t "$TOPIC" -p 0 -o "$n" -e -f '%o\n' 2>>"$SK_TMP/kcat.err" | wc -l)" -eq 0

[ "$SK_FAILS" -eq 0 ] || { diff <(echo "$expect") "$SK_TMP/consumed" | head -20; cat "$SK_TMP/kcat.err"; sk_dump_logs; }
sk_summary "$NAME"
