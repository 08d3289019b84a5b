#!/usr/bin/env bash
# Record batches written by real producers (issue 2): every
# test/fixtures/batches/NAME.bin that has a NAME.expect.jsonl is decoded with
# kpbatch (kpbatch --legacy for magic 0/1 message sets) and compared record by
# record with what the producer was asked to send:
#   offset, key, value, headers: exact (hex strings, null for null);
#   timestamp: exact when the expected line has a numeric "timestamp"; when it
#   is absent or null the producer chose it, so only its presence (a number)
#   is checked. (The rdkafka-* fixtures set explicit timestamps: exact.)
# Mutation checks prove the comparison and kpbatch's validation can fail.
# Needs: $SKIFF_TEST_DIR/tools/kpbatch, jq.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
kpbatch=${SKIFF_TEST_DIR:-$root/build/test}/tools/kpbatch
dir=$root/test/fixtures/batches
tmp=$(mktemp -d "${TMPDIR:-/tmp}/golden-batches.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0

[ -x "$kpbatch" ] || { echo "missing test tool: $kpbatch (build it with make)"; exit 1; }
command -v jq >/dev/null || { echo "jq not found"; exit 1; }
bad() { fail=$((fail+1)); echo "FAIL $*"; }

# Prints one line per difference between actual ($a) and expected ($e) records.
# shellcheck disable=SC2016  # jq program, not shell
JQ_CMP='def hexeq($f; $x; $y): if $x[$f] == $y[$f] then empty
          else "\($f): got \($x[$f] | tojson | .[0:120]), want \($y[$f] | tojson | .[0:120])" end;
if ($a|length) != ($e|length) then "record count: got \($a|length), want \($e|length)"
else range(0; $e|length) as $i | $a[$i] as $x | $e[$i] as $y |
  ( hexeq("offset"; $x; $y), hexeq("key"; $x; $y), hexeq("value"; $x; $y), hexeq("headers"; $x; $y),
    (if ($y.timestamp|type) == "number" then hexeq("timestamp"; $x; $y)
     elif ($x.timestamp|type) != "number" then "timestamp: missing" else empty end)
  ) | "record \($i): " + . end'

# magic byte of the first batch/message: offset 16 in both layouts
magic_of() { od -An -tu1 -j 16 -N1 "$1" | tr -d ' '; }
kpbatch_for() { if [ "$(magic_of "$1")" -le 1 ]; then "$kpbatch" --legacy "$1"; else "$kpbatch" "$1"; fi; }

# compare BIN EXPECT -> 0 if every record matches
compare() {
  kpbatch_for "$1" >"$tmp/act.jsonl" 2>"$tmp/err"; local rc=$?
  [ "$rc" -eq 0 ] || { echo "kpbatch exit $rc: $(head -c 300 "$tmp/err")"; return 1; }
  jq -n -r --slurpfile a "$tmp/act.jsonl" --slurpfile e "$2" "$JQ_CMP" >"$tmp/diff" 2>&1 \
    || { echo "jq failed: $(head -c 300 "$tmp/diff")"; return 1; }
  [ ! -s "$tmp/diff" ] || { head -n 10 "$tmp/diff"; return 1; }
}

# flip_byte SRC DST OFFSET: DST = SRC with the byte at OFFSET inverted
flip_byte() {
  cp "$1" "$2"
  local b; b=$(od -An -tu1 -j "$3" -N1 "$1" | tr -d ' ')
  printf '%b' "\\x$(printf %02x $(( b ^ 0xff )))" | dd of="$2" bs=1 seek="$3" conv=notrunc status=none
}

count=0
for bin in "$dir"/*.bin; do
  [ -e "$bin" ] || continue
  exp=${bin%.bin}.expect.jsonl
  [ -f "$exp" ] || continue
  count=$((count+1)); name=${bin##*/}
  if msg=$(compare "$bin" "$exp"); then pass=$((pass+1)); else bad "$name: $msg"; fi

  # Mutation: one byte flipped inside the CRC-covered region must be rejected.
  # v2: CRC-32C covers attributes (batch offset 21) to the end; flip the middle.
  # v0/v1: CRC-32 covers magic (offset 16) to the end of the first message;
  # offset 20 (inside the timestamp/key length) is covered in both versions.
  size=$(stat -c %s "$bin")
  if [ "$(magic_of "$bin")" -ge 2 ]; then off=$(( 21 + (size - 21) / 2 )); else off=20; fi
  flip_byte "$bin" "$tmp/flip.bin" "$off"
  kpbatch_for "$tmp/flip.bin" >/dev/null 2>&1; rc=$?
  if [ "$rc" -eq 1 ]; then pass=$((pass+1)); else bad "$name: byte $off flipped, kpbatch exit $rc, want 1"; fi
done
[ "$count" -gt 0 ] || { echo "no batch fixtures (*.bin with .expect.jsonl) in $dir"; exit 1; }

# Mutation of the expectation: a wrong key must be reported by the comparison.
base=$dir/rdkafka-none.bin
if [ -f "$base" ]; then
  jq -c 'if .offset == 0 then .key = "00" else . end' "${base%.bin}.expect.jsonl" >"$tmp/wrong.jsonl"
  if compare "$base" "$tmp/wrong.jsonl" >/dev/null; then bad "mutation: a wrong expected key was accepted"
  else pass=$((pass+1)); fi
  # A batch cut short by one byte must be rejected.
  head -c $(( $(stat -c %s "$base") - 1 )) "$base" >"$tmp/trunc.bin"
  "$kpbatch" "$tmp/trunc.bin" >/dev/null 2>&1; rc=$?
  if [ "$rc" -eq 1 ]; then pass=$((pass+1)); else bad "mutation: truncated batch gave kpbatch exit $rc, want 1"; fi
else
  bad "mutation base fixture missing: $base"
fi

echo "golden batches: $pass passed, $fail failed ($count batch files + mutation checks)"
[ "$fail" -eq 0 ]
