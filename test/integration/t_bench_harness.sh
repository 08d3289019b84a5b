#!/usr/bin/env bash
# Tests test/bench/run-broker-bench.sh itself (not skiff): with a small count,
# (1) without a skiff binary it prints the mock-only table and exits 0;
# (2) with test/bench/fake-skiff.py standing in for bin/skiff (a port
#     forwarder to a kload mock-serve) it prints all four rows with skiff and
#     mock figures, a ratio and a CPU column, and 8 verified JSON lines;
# (3) with a fake skiff that drops every connection it must exit non-zero.
# Needs: $SKIFF_TEST_DIR/tools/kload, jq, /usr/bin/python3. Takes ~15-30 s.
. "$(dirname "$0")/lib.sh"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
bench=$SK_ROOT/test/bench/run-broker-bench.sh
[ -x "$kload" ] || { echo "missing test tool: $kload (build it with make)"; exit 1; }
command -v jq >/dev/null || { echo "jq not found"; exit 1; }
export KLOAD=$kload SKIFF_TEST_DIR=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}
export BENCH_COUNT=10000 BENCH_CREATE_TIMEOUT_S=1

mkdir -p "$SK_TMP/nobin" "$SK_TMP/fakebin"
printf '#!/bin/sh\nexec /usr/bin/python3 %s/test/bench/fake-skiff.py "$@"\n' "$SK_ROOT" \
  >"$SK_TMP/fakebin/skiff"
chmod +x "$SK_TMP/fakebin/skiff"

# row FILE WORKLOAD -> that table row's columns after the workload name
row() { grep -E "^$2 +" "$1" | sed -E "s/^$2 +//"; }
# numeric_cols FILE WORKLOAD N -> 0 if the row's first N columns are numbers
numeric_cols() {
  row "$1" "$2" | awk -v n="$3" '{ for (i = 1; i <= n; i++) if ($i !~ /^[0-9.]+$/) exit 1 } END { exit NR != 1 }'
}

# The mock-only run starts no node and picks no port, and nothing it checks
# depends on time (120 s kload bound): it runs alongside the fake-skiff run.
sk_log "no skiff binary (in the background) and fake skiff (forwarder to a mock)"
SKIFF_BIN_DIR=$SK_TMP/nobin bash "$bench" >"$SK_TMP/mock-only.txt" 2>&1 & MOCK_PID=$!
SK_PIDS+=("$MOCK_PID")
SKIFF_BIN_DIR=$SK_TMP/fakebin bash "$bench" >"$SK_TMP/fake.txt" 2>&1; fake_rc=$?
wait "$MOCK_PID"; rc=$?

sk_log "no skiff binary"
cat "$SK_TMP/mock-only.txt"
sk_check "mock-only: exit 0" [ "$rc" -eq 0 ]
sk_check "mock-only: says skiff is not built" grep -q "skiff not built.*mock-only figures:" "$SK_TMP/mock-only.txt"
for w in "produce none" "produce lz4" "consume none" "consume lz4"; do
  sk_check "mock-only: $w has a mock figure" \
    bash -c "grep -E '^$w +- +[0-9]+ +- +-\$' '$SK_TMP/mock-only.txt' >/dev/null"
done

sk_log "fake skiff (forwarder to a mock)"
rc=$fake_rc
cat "$SK_TMP/fake.txt"
sk_check "fake skiff: exit 0" [ "$rc" -eq 0 ]
sk_check "fake skiff: no 'not built' line" bash -c "! grep -q 'not built' '$SK_TMP/fake.txt'"
for w in "produce none" "produce lz4" "consume none" "consume lz4"; do
  sk_check "fake skiff: $w has skiff, mock, ratio and cpu figures" numeric_cols "$SK_TMP/fake.txt" "$w" 4
done
sed -n 's/^# //p' "$SK_TMP/fake.txt" >"$SK_TMP/fake.jsonl"
sk_check "fake skiff: 8 JSON lines" [ "$(jq -c . "$SK_TMP/fake.jsonl" | wc -l)" -eq 8 ]
# jq_ok FILE PROGRAM -> 0 if PROGRAM over all JSON values of FILE yields true
jq_ok() { jq -e -s "$2" "$1" >/dev/null; }
sk_check "fake skiff: every consume verified $BENCH_COUNT" \
  jq_ok "$SK_TMP/fake.jsonl" "[.[] | select(.mode == \"consume\") | .verified and .distinct == $BENCH_COUNT] | length == 4 and all"

sk_log "fake skiff that drops every connection"
FAKE_SKIFF_BROKEN=1 BENCH_TIMEOUT_S=2 SKIFF_BIN_DIR=$SK_TMP/fakebin bash "$bench" \
  >"$SK_TMP/broken.txt" 2>&1; rc=$?
tail -n 12 "$SK_TMP/broken.txt"
sk_check "broken skiff: exit non-zero" [ "$rc" -ne 0 ]
sk_check "broken skiff: mock figure still printed" \
  bash -c "grep -E '^produce none +[^ ]+ +[0-9]+ ' '$SK_TMP/broken.txt' >/dev/null"

sk_summary "bench harness"
