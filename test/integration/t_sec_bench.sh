#!/usr/bin/env bash
# Tests test/bench/run-sasl-ssl-bench.sh itself, small (2,000 x 100 B and
# 500 x 1 KiB, one run, 1 s of authentications): it exits 0, prints all four
# workload rows with numbers for both protocols and a ratio, a kTLS line, the
# three mechanisms' authentications per second (non-zero), and one verified
# JSON line per kload run. Needs i-tls + i-sasl (SASL_SSL). ~15 s.
. "$(dirname "$0")/lib.sh"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
[ -x "$kload" ] || { echo "missing test tool: $kload (build it with make)"; exit 1; }
export BENCH_SEC_COUNT1=2000 BENCH_SEC_COUNT2=500 BENCH_SEC_REPEAT=1 BENCH_AUTH_S=1 BENCH_AUTH_WORKERS=1
out=$SK_TMP/bench.txt
bash "$SK_ROOT/test/bench/run-sasl-ssl-bench.sh" > "$out" 2>&1
rc=$?
sk_check "bench exits 0 (got $rc)" test "$rc" -eq 0
for w in "produce 2000x100B" "consume 2000x100B" "produce 500x1024B" "consume 500x1024B"; do
  sk_check "row '$w' has two rates, two MB/s and a ratio" \
    awk -v w="$w" 'index($0, w) == 1 { n = split(substr($0, length(w) + 1), f, " ")
      ok = n == 5; for (i = 1; i <= n; i++) if (f[i] !~ /^[0-9.]+$/) ok = 0; found = 1 }
      END { exit !(found && ok) }' "$out"
done
sk_check "a kTLS line" grep -qE '^kTLS: (on|not used)' "$out"
for m in SCRAM-SHA-512 SCRAM-SHA-256 PLAIN; do
  sk_check "$m authentications/s > 0" awk -v m="$m" '$1 == m && $2 + 0 > 0 { f = 1 } END { exit !f }' "$out"
done
sk_check "8 kload JSON lines, every consume verified" \
  test "$(grep -c '^# {"mode"' "$out")" = 8 -a "$(grep '^# {"mode":"consume"' "$out" | grep -c '"verified":true')" = 4
[ "$SK_FAILS" -eq 0 ] || cat "$out"
sk_summary t_sec_bench
