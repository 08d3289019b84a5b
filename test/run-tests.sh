#!/usr/bin/env bash
# Runs one family of tests and prints a closing line "N passed, N failed".
# usage: run-tests.sh KIND test...   (KIND: unit | sim | integration)
# Each test is an executable or a .sh script; exit 0 = pass. Output of a
# failing test is shown in full; passing tests show their last line.
set -u
kind=$1; shift
pass=0; fail=0; failed=()
logdir=${TEST_LOG_DIR:-build/test-logs}/$kind
mkdir -p "$logdir"
for t in "$@"; do
  name=$(basename "$t")
  log="$logdir/$name.log"
  start=$(date +%s)
  if [ "${t##*.}" = "sh" ]; then cmd=(bash "$t"); else cmd=("$t"); fi
  if "${cmd[@]}" >"$log" 2>&1; then
    pass=$((pass+1))
    printf '  PASS %-40s %3ss  %s\n' "$name" "$(( $(date +%s) - start ))" "$(tail -n 1 "$log")"
  else
    rc=$?
    fail=$((fail+1)); failed+=("$name")
    printf '  FAIL %-40s %3ss  (exit %s)\n' "$name" "$(( $(date +%s) - start ))" "$rc"
    sed 's/^/    | /' "$log" | tail -n 80
  fi
done
echo "$kind: $pass passed, $fail failed"
echo "$kind $pass $fail" >> "${TEST_LOG_DIR:-build/test-logs}/summary.txt"
[ "$fail" -eq 0 ]
