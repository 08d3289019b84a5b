#!/usr/bin/env bash
# Self-test of test/tools/kload (the benchmark load tool) against librdkafka's
# in-process mock cluster: JSON lines parse, counts match, the consumer sees
# every sequence intact; and the checks can fail (missing, corrupt and
# duplicated messages, an unreachable broker, bad options all exit non-zero).
# Needs: $SKIFF_TEST_DIR/tools/kload, jq. Takes ~20 s.
. "$(dirname "$0")/lib.sh"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
[ -x "$kload" ] || { echo "missing test tool: $kload (build it with make)"; exit 1; }
command -v jq >/dev/null || { echo "jq not found"; exit 1; }
N=20000

# phase FILE MODE -> that phase's JSON line (empty if absent)
phase() { jq -c --arg m "$2" 'select(.mode == $m)' "$1" 2>/dev/null; }
# jtrue FILE MODE JQ_EXPR -> 0 if the phase's line satisfies the expression
jtrue() { phase "$1" "$2" | jq -e "$3" >/dev/null 2>&1; }
# run NAME ARGS... -> runs kload, stdout to $SK_TMP/NAME.json, exit code to RC
run() {
  local name=$1; shift
  "$kload" "$@" >"$SK_TMP/$name.json" 2>"$SK_TMP/$name.err"; RC=$?
  sed 's/^/  /' "$SK_TMP/$name.json"
}

good_produce=".msgs == $N and .errors == 0 and .timeout == false and .bytes == $N * 100
  and .msgs_per_s > 0 and .p50_ms <= .p99_ms and .p99_ms <= .p999_ms"
good_consume=".msgs == $N and .distinct == $N and .verified == true and .missing == 0
  and .corrupt == 0 and .duplicates == 0 and .out_of_order == 0 and .errors == 0"

for codec in none lz4; do
  sk_log "mock-bench $N x 100 B, $codec, 2 partitions"
  run "bench-$codec" mock-bench --topic "t-$codec" --count "$N" --size 100 \
    --compression "$codec" --partitions 2 --timeout-s 60
  f=$SK_TMP/bench-$codec.json
  sk_check "$codec: exit 0" [ "$RC" -eq 0 ]
  sk_check "$codec: every line is JSON" jq -e . "$f" >/dev/null
  sk_check "$codec: exactly two lines" [ "$(wc -l <"$f")" -eq 2 ]
  sk_check "$codec: produce figures" jtrue "$f" produce "$good_produce"
  sk_check "$codec: consume verified all sequences" jtrue "$f" consume "$good_consume"
done

sk_log "idempotent, acks=all, zstd, small batches"
run idem mock-bench --topic t-idem --count 5000 --size 64 --acks all --idempotent \
  --compression zstd --batch-bytes 4096 --timeout-s 60
sk_check "idempotent: exit 0" [ "$RC" -eq 0 ]
sk_check "idempotent: all delivered and verified" \
  jtrue "$SK_TMP/idem.json" consume '.distinct == 5000 and .verified == true'

sk_log "separate processes against kload mock-serve (the mode used against skiff)"
"$kload" mock-serve --topic t-sep --partitions 3 --timeout-s 60 >"$SK_TMP/serve.json" 2>&1 &
SK_PIDS+=("$!"); serve_pid=$!
for _ in $(seq 1 50); do [ -s "$SK_TMP/serve.json" ] && break; sleep 0.1; done
boot=$(jq -r .bootstraps "$SK_TMP/serve.json" 2>/dev/null)
sk_check "mock-serve printed its bootstrap servers" grep -q '^127\.0\.0\.1:[0-9]' <<<"$boot"
run sep-produce produce --brokers "$boot" --topic t-sep --count "$N" --size 200 --rate 100000
sk_check "produce process: exit 0" [ "$RC" -eq 0 ]
sk_check "produce process: all delivered" jtrue "$SK_TMP/sep-produce.json" produce ".msgs == $N"
run sep-consume consume --brokers "$boot" --topic t-sep --count "$N" --group kload-test --timeout-s 60
sk_check "consume process with a group: exit 0" [ "$RC" -eq 0 ]
sk_check "consume process: verified" jtrue "$SK_TMP/sep-consume.json" consume \
  ".distinct == $N and .verified == true and .bytes == $N * 200"
kill -TERM "$serve_pid" 2>/dev/null; wait "$serve_pid"
sk_check "mock-serve stops on SIGTERM with exit 0" [ $? -eq 0 ]

# --- the checks must be able to fail --------------------------------------
sk_log "consume more than was produced, short timeout"
run short mock-bench --topic t-short --count 2000 --consume-count 2500 --timeout-s 3
sk_check "missing messages: exit non-zero" [ "$RC" -ne 0 ]
sk_check "missing messages: timeout and 500 missing reported" \
  jtrue "$SK_TMP/short.json" consume '.timeout == true and .missing == 500 and .verified == false'

sk_log "one corrupted payload"
run corrupt mock-bench --topic t-corrupt --count 2000 --inject-corrupt 1234 --timeout-s 20
sk_check "corrupt payload: exit non-zero" [ "$RC" -ne 0 ]
sk_check "corrupt payload: reported" jtrue "$SK_TMP/corrupt.json" consume '.corrupt == 1 and .verified == false and .timeout == false'

sk_log "one duplicated message, with and without --strict"
run dup mock-bench --topic t-dup --count 2000 --inject-dup 77 --timeout-s 20
sk_check "duplicate, lenient: exit 0" [ "$RC" -eq 0 ]
sk_check "duplicate, lenient: counted" jtrue "$SK_TMP/dup.json" consume '.duplicates == 1 and .distinct == 2000'
run dup-strict mock-bench --topic t-dup --count 2000 --inject-dup 77 --strict --timeout-s 20
sk_check "duplicate, strict: exit non-zero" [ "$RC" -ne 0 ]

sk_log "unreachable broker"
port=$(sk_free_port)
run dead produce --brokers "127.0.0.1:$port" --topic t --count 10 --timeout-s 2
sk_check "unreachable broker: exit non-zero" [ "$RC" -ne 0 ]
sk_check "unreachable broker: nothing delivered" jtrue "$SK_TMP/dead.json" produce '.msgs == 0 and .errors + (if .timeout then 1 else 0 end) > 0'

run badopt produce --brokers 127.0.0.1:1 --topic t --count 10 --no-such-option
sk_check "unknown option: exit 2" [ "$RC" -eq 2 ]
run badnum produce --brokers 127.0.0.1:1 --topic t --count -5
sk_check "negative count: exit 2" [ "$RC" -eq 2 ]

sk_summary "kload mock"
