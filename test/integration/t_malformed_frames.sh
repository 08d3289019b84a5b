#!/usr/bin/env bash
# Raw-socket abuse of one node (clients/rawframes.py): garbage, truncated,
# zero, negative and oversized sizes, unknown API key, unsupported versions,
# ApiVersions v99 (the v0-layout UNSUPPORTED_VERSION answer), a pipelined
# burst; then hand-built Produce requests with bad batches (clients/
# rawproduce.py: CRC, lengths, counts, magic, control, size, unknown topic or
# partition, acks=0) that must be refused and never stored. Afterwards the
# node must still be running and kcat must still work.
. "$(dirname "$0")/lib.sh"
NAME=t_malformed_frames
HERE=$(cd "$(dirname "$0")" && pwd)
REQ_MAX=1048576
MSG_MAX=20000

sk_start_cluster 1 --set socket.request.max.bytes=$REQ_MAX --set message.max.bytes=$MSG_MAX \
  --set num.partitions=1 --set auto.create.topics.enable=true
BOOT=$SK_BOOTSTRAP

sk_check_lines < <(timeout 120 "$SK_PY" "$HERE/clients/rawframes.py" "$BOOT" "$REQ_MAX" 2>&1)
sk_check "rawframes ran all its cases" test $((SK_PASS + SK_FAILS)) -ge 20

# Hand-built Produce requests: bad batches refused with Kafka's error codes
# and never stored, good ones stored (read back with kcat).
printf 'seed\n' | timeout 30 kcat -q -b "$BOOT" -P -t raw-produce -p 0 2>"$SK_TMP/kcat.err"
before=$((SK_PASS + SK_FAILS))
timeout 120 "$SK_PY" "$HERE/clients/rawproduce.py" "$BOOT" raw-produce "$MSG_MAX" > "$SK_TMP/rawproduce.out" 2>&1
sk_check_lines < "$SK_TMP/rawproduce.out"
sk_check "rawproduce ran all its cases" test $((SK_PASS + SK_FAILS - before)) -ge 15
want=$(sed -n 's/^STORED //p' "$SK_TMP/rawproduce.out" | tr ' ' '\n')
got=$(timeout 30 kcat -q -b "$BOOT" -C -t raw-produce -p 0 -o 1 -e -f '%s\n' 2>>"$SK_TMP/kcat.err")
sk_check "the log holds exactly the accepted batches: $(echo $got)" test -n "$want" -a "$got" = "$want"

sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
timeout 30 kcat -b "$BOOT" -L -J > "$SK_TMP/meta.json" 2>"$SK_TMP/kcat.err"
sk_check "kcat -L still works" jq -e '.brokers | length == 1' "$SK_TMP/meta.json" >/dev/null
printf 'a:1\nb:2\n' | timeout 30 kcat -q -b "$BOOT" -P -t after-abuse -K: -p 0 2>>"$SK_TMP/kcat.err"
timeout 30 kcat -q -b "$BOOT" -C -t after-abuse -p 0 -o beginning -e -f '%k=%s\n' > "$SK_TMP/after" 2>>"$SK_TMP/kcat.err"
sk_check "kcat produce+consume still works" test "$(cat "$SK_TMP/after")" = $'a=1\nb=2'
[ "$SK_FAILS" -eq 0 ] || { cat "$SK_TMP/kcat.err"; sk_dump_logs; }
sk_summary "$NAME"
