#!/usr/bin/env bash
# Adds up the per-family counts that run-tests.sh recorded; prints the total
# as the closing line and fails when anything failed or nothing ran.
set -u
f=$1
[ -f "$f" ] || { echo "tests: 0 passed, 1 failed"; echo "no test results recorded" >&2; exit 1; }
read -r p x < <(awk '{p+=$2; x+=$3} END {print p+0, x+0}' "$f")
echo "tests: $p passed, $x failed"
[ "$x" -eq 0 ] && [ "$p" -gt 0 ]
