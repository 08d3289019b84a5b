#!/usr/bin/env bash
# kpbatch decodes every client fixture (kafka-python kp-*, librdkafka rk-*: v2
# batches with each codec, legacy magic 0/1 sets incl. compressed wrappers) to exactly the records the
# client was asked to write, and rejects a corrupted copy with exit 1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
fix="$here/../fixtures/batches"
kpbatch="${SKIFF_TEST_DIR:-$here/../../build/test}/tools/kpbatch"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
for f in "$fix"/kp-v*.bin "$fix"/rk-v*.bin; do
  name=$(basename "$f" .bin)
  case "$name" in *-v2-*) args=() ;; *) args=(--legacy) ;; esac
  if ! "$kpbatch" "${args[@]}" "$f" >"$tmp/out" 2>"$tmp/err" || ! cmp -s "$tmp/out" "$fix/$name.jsonl"; then
    echo "FAIL decode $name: $(cat "$tmp/err")"; diff "$tmp/out" "$fix/$name.jsonl" | head -5; fail=1
  fi
  # flip one byte inside the checksummed part of the first batch/message
  cp "$f" "$tmp/bad"; printf '\x5a' | dd of="$tmp/bad" bs=1 seek=30 conv=notrunc status=none
  "$kpbatch" "${args[@]}" "$tmp/bad" >/dev/null 2>&1; rc=$?
  [ "$rc" -eq 1 ] || { echo "FAIL corrupt $name: exit $rc, want 1"; fail=1; }
  # a cut file (partial last batch / message) is an error too
  head -c $(( $(wc -c <"$f") - 1 )) "$f" >"$tmp/cut"
  "$kpbatch" "${args[@]}" "$tmp/cut" >/dev/null 2>&1; rc=$?
  [ "$rc" -eq 1 ] || { echo "FAIL truncated $name: exit $rc, want 1"; fail=1; }
  n=$((n+1))
done
# a v2 file read as legacy is rejected, not misread
"$kpbatch" --legacy "$fix/kp-v2-none.bin" >/dev/null 2>&1; rc=$?
[ "$rc" -eq 1 ] || { echo "FAIL v2 as legacy: exit $rc, want 1"; fail=1; }
[ "$n" -gt 0 ] || { echo "no fixtures found in $fix"; exit 1; }
[ "$fail" -eq 0 ] && echo "kpbatch: $n fixtures decoded; corruption and truncation detected in each"
exit $fail
