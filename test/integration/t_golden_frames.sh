#!/usr/bin/env bash
# Golden request frames (issue 2): every test/fixtures/golden/<client>/*.bin is
# one request frame captured from a real client (librdkafka, kafka-python,
# kafkajs). kpdump must decode it, re-encode it byte for byte (exit 0), and its
# output must contain the fields in the .json next to it, which were written
# from what the client was asked to send. Mutation checks at the end prove the
# checks can fail. Needs: $SKIFF_TEST_DIR/tools/kpdump, $SKIFF_TEST_DIR/tools/kpbatch, jq.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
tools=${SKIFF_TEST_DIR:-$root/build/test}/tools
kpdump=$tools/kpdump
kpbatch=$tools/kpbatch
tmp=$(mktemp -d "${TMPDIR:-/tmp}/golden-frames.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0

for t in "$kpdump" "$kpbatch"; do
  [ -x "$t" ] || { echo "missing test tool: $t (build it with make)"; exit 1; }
done
command -v jq >/dev/null || { echo "jq not found"; exit 1; }

ok()  { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL $*"; }

# Strict containment on top of jq's `contains` (which matches strings as
# substrings, so an expected "" or "kafkajs" would also match longer names):
# objects by key, arrays element-wise, scalars by equality.
# shellcheck disable=SC2016  # jq program, not shell
JQ_CHECK='def within($a): . as $e |
  if ($e|type) == "object" then ($a|type) == "object" and
     all($e|to_entries[]; .key as $k | ($a|has($k)) and (.value | within($a[$k])))
  elif ($e|type) == "array" then ($a|type) == "array" and
     all($e[]; . as $x | any($a[]; . as $y | $x | within($y)))
  else $e == $a end;
$acts[0] as $act | ($act | contains($exp)) and ($exp | within($act))'

# check_contains OUT_JSON EXP_JSON -> 0 if expected is contained in actual
check_contains() {
  jq -n -e --argjson exp "$(cat "$2")" --slurpfile acts "$1" "$JQ_CHECK" >/dev/null 2>&1
}

# run_kpdump FRAME OUT -> kpdump's exit status, stdout in OUT, stderr in OUT.err
run_kpdump() { "$kpdump" --frame "$1" >"$2" 2>"$2.err"; }

count=0
while IFS= read -r bin; do
  count=$((count+1))
  rel=${bin#"$root"/}
  exp=${bin%.bin}.json
  [ -f "$exp" ] || { bad "$rel: no expected ${exp##*/}"; continue; }
  run_kpdump "$bin" "$tmp/out"; rc=$?
  case $rc in
    0) ;;
    2) bad "$rel: decoded but re-encoding differs (kpdump exit 2)"; continue ;;
    *) bad "$rel: kpdump exit $rc: $(head -c 300 "$tmp/out.err")"; continue ;;
  esac
  if check_contains "$tmp/out" "$exp"; then ok; else
    bad "$rel: decoded fields do not contain the expected ones"
    echo "  expected: $(jq -c . "$exp" | head -c 1500)"
    echo "  actual:   $(head -c 1500 "$tmp/out")"
  fi
done < <(find "$root/test/fixtures/golden" -name '*.bin' -not -path '*/capture/*' | sort)
[ "$count" -gt 0 ] || { echo "no golden fixtures found under test/fixtures/golden"; exit 1; }

# --- mutations: each must be caught, or this test itself is broken ----------
prod=$root/test/fixtures/golden/librdkafka/produce-v7-none.bin
[ -f "$prod" ] || { echo "mutation base fixture missing: $prod"; exit 1; }
size=$(stat -c %s "$prod")

# 1. A wrong expectation must fail the containment check.
jq '.body.acks = 1 | .correlation_id += 1' "${prod%.bin}.json" >"$tmp/wrong.json"
run_kpdump "$prod" "$tmp/orig" || true
if check_contains "$tmp/orig" "$tmp/wrong.json"; then
  bad "mutation: a wrong expected acks/correlation_id was accepted"; else ok; fi

# 2. Truncated by one byte (size prefix now larger than the frame): decode error.
head -c $((size-1)) "$prod" >"$tmp/trunc.bin"
run_kpdump "$tmp/trunc.bin" "$tmp/out"; rc=$?
if [ "$rc" -eq 1 ]; then ok; else bad "mutation: truncated frame gave kpdump exit $rc, want 1"; fi

# 3. One trailing byte beyond the size prefix: decode error.
{ cat "$prod"; printf '\0'; } >"$tmp/long.bin"
run_kpdump "$tmp/long.bin" "$tmp/out"; rc=$?
if [ "$rc" -eq 1 ]; then ok; else bad "mutation: frame with a trailing byte gave kpdump exit $rc, want 1"; fi

# 4. One byte flipped in the middle of the record batch (CRC-covered region:
#    from the attributes at batch offset 21 to the end). kpdump treats records
#    as bytes, so it must either reject the frame or print different records;
#    kpbatch must reject the mutated batch and accept the original.
recs=$(jq -r '.body.topic_data[0].partition_data[0].records // empty' "$tmp/orig" 2>/dev/null)
if [ -z "$recs" ]; then
  bad "mutation: kpdump printed no records for $(basename "$prod")"
else
  hex=$(od -An -tx1 -v "$prod" | tr -d ' \n')
  pre=${hex%%"$recs"*}
  if [ "$pre" = "$hex" ] || [ $(( ${#pre} % 2 )) -ne 0 ]; then
    bad "mutation: kpdump's records hex not found (byte-aligned) in the frame"
  else
    start=$(( ${#pre} / 2 )); blen=$(( ${#recs} / 2 ))
    off=$(( start + 21 + (blen - 21) / 2 ))
    cp "$prod" "$tmp/flip.bin"
    b=$(od -An -tu1 -j "$off" -N1 "$prod" | tr -d ' ')
    printf '%b' "\\x$(printf %02x $(( b ^ 0xff )))" | dd of="$tmp/flip.bin" bs=1 seek="$off" conv=notrunc status=none
    run_kpdump "$tmp/flip.bin" "$tmp/flip.out"; rc=$?
    frecs=$(jq -r '.body.topic_data[0].partition_data[0].records // empty' "$tmp/flip.out" 2>/dev/null)
    if [ "$rc" -ne 0 ] || [ "$frecs" != "$recs" ]; then ok; else
      bad "mutation: kpdump printed identical records for a flipped batch byte"; fi
    dd if="$prod" of="$tmp/batch.bin" bs=1 skip="$start" count="$blen" status=none
    dd if="$tmp/flip.bin" of="$tmp/batch-flip.bin" bs=1 skip="$start" count="$blen" status=none
    "$kpbatch" "$tmp/batch.bin" >/dev/null 2>&1; rc=$?
    if [ "$rc" -eq 0 ]; then ok; else bad "control: kpbatch rejected the unmutated batch (exit $rc)"; fi
    "$kpbatch" "$tmp/batch-flip.bin" >/dev/null 2>&1; rc=$?
    if [ "$rc" -eq 1 ]; then ok; else bad "mutation: kpbatch accepted a batch with a flipped byte (exit $rc, want 1)"; fi
  fi
fi

echo "golden frames: $pass passed, $fail failed ($count fixtures + mutation checks)"
[ "$fail" -eq 0 ]
