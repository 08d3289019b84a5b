#!/usr/bin/env bash
# Issue 17 benchmark: the same librdkafka load tool (kload) against one skiff
# node over PLAINTEXT and over SASL_SSL (SCRAM-SHA-512) in the same run:
# produce and consume BENCH_SEC_COUNT1 x 100 B (1M) and BENCH_SEC_COUNT2 x
# 1 KiB (200k), acks=1, uncompressed, one partition per topic. Prints
# msgs/s and MB/s per protocol and the ratio SASL_SSL / PLAINTEXT (the
# issue's goal: consume over TLS >= 0.7x plaintext where kTLS is
# available), whether the node sent fetch data through kTLS (its log line
# per TLS connection, and /proc/net/tls_stat when the kernel has it), and
# end-to-end authentications per second over the wire (test/bench/
# scram_bench.py: SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN, a new connection
# each; bench_scram.c times the server-side exchange alone). Figures are
# reported, not judged: exit 0 when every run delivered and verified every
# message and every authentication succeeded.
#
# env: SKIFF_BIN_DIR (bin/), SKIFF_TEST_DIR (build/test), BENCH_SEC_COUNT1
#      (1000000), BENCH_SEC_COUNT2 (200000), BENCH_SEC_REPEAT (3 runs of each
#      workload, medians shown), BENCH_TIMEOUT_S (180 per kload run),
#      BENCH_AUTH_S (5 s per mechanism), BENCH_AUTH_WORKERS (2)
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/sec_lib.sh"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
[ -x "$kload" ] || { echo "missing $kload (build it with make)"; exit 1; }
command -v jq >/dev/null || { echo "jq not found"; exit 1; }
c1=${BENCH_SEC_COUNT1:-1000000}
c2=${BENCH_SEC_COUNT2:-200000}
timeout_s=${BENCH_TIMEOUT_S:-180}
repeat=${BENCH_SEC_REPEAT:-3}
status=0
res=$SK_TMP/results.jsonl
: > "$res"

sec_start
sk_log "node up: PLAINTEXT :$(sec_port PLAINTEXT), SASL_SSL :$(sec_port SASL_SSL)"
tls_before=$(cat /proc/net/tls_stat 2>/dev/null | tr -s ' ' | tr '\n' ';')

# kload_run PROTO ARGS... -> kload with PROTO's properties, JSON tagged
kload_run() {
  local proto=$1 out p props=(); shift
  while IFS= read -r p; do props+=(-X "$p"); done < <(sec_props "$proto" SCRAM-SHA-512)
  out=$("$kload" "$@" --brokers "127.0.0.1:$(sec_port "$proto")" "${props[@]}" --timeout-s "$timeout_s" \
        2>>"$SK_TMP/kload.err") || {
    echo "kload $1 over $proto failed; stderr:" >&2; tail -n 20 "$SK_TMP/kload.err" >&2; status=1; }
  [ -n "$out" ] && jq -c --arg p "$proto" '. + {proto: $p}' <<<"$out" >> "$res"
}

# each workload BENCH_SEC_REPEAT times, the two protocols taking turns so
# the machine's noise (a shared box) falls on both; the table shows medians
for ((rep = 1; rep <= repeat; rep++)); do
  for w in "$c1:100" "$c2:1024"; do
    count=${w%%:*}; size=${w##*:}
    for proto in PLAINTEXT SASL_SSL; do
      t="sec-$proto-$size-$rep"
      "$kload" create-topic --brokers "127.0.0.1:$(sec_port PLAINTEXT)" --topic "$t" --partitions 1 \
        --timeout-s 20 2>>"$SK_TMP/kload.err" || echo "create-topic $t failed; relying on auto-create" >&2
      sk_log "run $rep/$repeat $proto: produce + consume $count x $size B"
      kload_run "$proto" produce --topic "$t" --count "$count" --size "$size" --acks 1
      kload_run "$proto" consume --topic "$t" --count "$count"
    done
  done
done
tls_after=$(cat /proc/net/tls_stat 2>/dev/null | tr -s ' ' | tr '\n' ';')

# figure PROTO MODE SIZE FIELD -> the median over the runs ("-" when none)
figure() {
  local v
  v=$(jq -r --arg p "$1" --arg m "$2" --arg t "sec-$1-$3-" --arg f "$4" \
    'select(.proto == $p and .mode == $m and (.topic | startswith($t))) | .[$f]' "$res" |
    sort -g | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }')
  echo "${v:--}"
}

auth=$SK_TMP/auth.jsonl
: > "$auth"
for mech in SCRAM-SHA-512 SCRAM-SHA-256 PLAIN; do
  "$SK_PY" "$SK_ROOT/test/bench/scram_bench.py" "127.0.0.1:$(sec_port SASL_PLAINTEXT)" "$mech" alice alice-secret \
    "${BENCH_AUTH_S:-5}" "${BENCH_AUTH_WORKERS:-2}" >> "$auth" || { echo "auth bench $mech had failures" >&2; status=1; }
done
sk_check "node ready after the bench" sec_ready || status=1
sk_stop_node 1

echo
printf '%-22s %14s %14s %9s %9s %9s\n' workload "PLAINTEXT m/s" "SASL_SSL m/s" "PT MB/s" "SSL MB/s" ratio
for w in "$c1:100" "$c2:1024"; do
  count=${w%%:*}; size=${w##*:}
  for mode in produce consume; do
    a=$(figure PLAINTEXT "$mode" "$size" msgs_per_s); b=$(figure SASL_SSL "$mode" "$size" msgs_per_s)
    ma=$(figure PLAINTEXT "$mode" "$size" mb_per_s); mb=$(figure SASL_SSL "$mode" "$size" mb_per_s)
    r=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", b / a; else print "-" }')
    printf '%-22s %14s %14s %9s %9s %9s\n' "$mode ${count}x${size}B" "$a" "$b" "$ma" "$mb" "$r"
  done
done
echo "(medians of $repeat runs; ratio = SASL_SSL / PLAINTEXT msgs/s; acks=1, 1 partition, SCRAM-SHA-512 over TLS)"
if grep -q 'kTLS send on' "$SK_TMP/node-1.log"; then
  echo "kTLS: on for the SASL_SSL listener (fetch data left by sendfile): $(grep -m1 'kTLS send on' "$SK_TMP/node-1.log")"
else
  echo "kTLS: not used: $(grep -m1 'read-encrypt-write' "$SK_TMP/node-1.log" || echo 'no TLS path line in the node log')"
fi
[ -n "$tls_after" ] && echo "/proc/net/tls_stat before: $tls_before after: $tls_after"
printf '%-16s %12s %8s\n' mechanism "auths/s" workers
jq -r '[.mechanism, .auths_per_s, .workers] | @tsv' "$auth" | awk -F'\t' '{ printf "%-16s %12s %8s\n", $1, $2, $3 }'
echo "(auths/s: new TCP connection + SaslHandshake + SaslAuthenticate (2 rounds for SCRAM) on SASL_PLAINTEXT)"
sed 's/^/# /' "$res" "$auth"
exit "$status"
