#!/usr/bin/env bash
# Runs one family of tests and prints a closing line "KIND: N passed, N failed"
# (also appended as "KIND N N" to $TEST_LOG_DIR/summary.txt for summary.sh).
# usage: run-tests.sh KIND test...   (KIND: unit | sim | integration[-...])
# Each test is an executable or a .sh script, one process with its own log
# ($TEST_LOG_DIR/KIND/NAME.log); exit 0 = pass. Output of a failing test is
# shown (its last 80 lines); passing tests show their last line.
#
# Integration kinds (KIND integration*) run in TEST_LANES parallel lanes
# (default 2): the scripts mostly wait on sockets and timers, so two at a
# time on a 2-core box roughly halves the wall time. Each lane takes the
# next script from one queue, longest first (test/integration/durations.txt,
# measured; a script not listed there counts as 30 s), so the lanes end
# together. Results are printed as each script ends, one block at a time.
# Each lane gets its own slice of 20000-31999 for lib.sh's sk_free_port
# (SK_PORT_LO / SK_PORT_HI): two scripts can never race for a port between
# its pick and its bind. A script with a line "# test-solo: REASON" (CPU or
# time measurements, process or fd limits: it cannot share the box) runs
# alone after the lanes, with the whole port range.
# Other families run one test at a time unless TEST_LANES is set.
# The closing lines give each lane's busy time and the wall time;
# $TEST_LOG_DIR/KIND/durations.txt has this run's seconds per script (the
# format of test/integration/durations.txt, to refresh it).
set -u
kind=$1; shift
top=${TEST_LOG_DIR:-build/test-logs}
logdir=$top/$kind
mkdir -p "$logdir"
here=$(cd "$(dirname "$0")" && pwd)
case $kind in
  integration*) lanes=${TEST_LANES:-2} ;;
  *) lanes=${TEST_LANES:-1} ;;
esac
case $lanes in ''|*[!0-9]*|0) echo "run-tests: TEST_LANES=$lanes: expected a number >= 1" >&2; exit 2 ;; esac

work=$(mktemp -d "$logdir/.run.XXXXXX") || exit 2
child=; pids=()
trap 'rm -rf "$work"' EXIT
# Ctrl-C / TERM: stop the running test or the lanes by pid (a lane stops its
# script, whose EXIT trap stops its nodes)
trap 'for p in $child "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done; exit 130' INT TERM
: > "$work/results"

# run_one TEST LANE -> runs it with its log, prints its block under the
# print lock, appends "PASS|FAIL NAME SECONDS" to the results file
run_one() {
  local t=$1 lane=$2 name log start rc secs out
  name=$(basename "$t")
  log="$logdir/$name.log"
  start=$(date +%s)
  # in the background and waited for, so a lane stopped by TERM stops its
  # script too (whose EXIT trap stops its nodes)
  if [ "${t##*.}" = "sh" ]; then bash "$t" >"$log" 2>&1 & else "$t" >"$log" 2>&1 & fi
  child=$!
  wait "$child"; rc=$?
  child=
  secs=$(( $(date +%s) - start ))
  if [ "$rc" -eq 0 ]; then
    out=$(printf '  PASS %-40s %3ss  %s' "$name" "$secs" "$(tail -n 1 "$log")")
  else
    out=$(printf '  FAIL %-40s %3ss  (exit %s)%s\n' "$name" "$secs" "$rc" "${lane:+ [lane $lane]}"
          sed 's/^/    | /' "$log" | tail -n 80)
  fi
  {
    flock 9
    printf '%s\n' "$out"
    if [ "$rc" -eq 0 ]; then echo "PASS $name $secs $lane"; else echo "FAIL $name $secs $lane"; fi >> "$work/results"
  } 9>"$work/print.lock"
}

# sequential: unit, sim, or TEST_LANES=1
if [ "$lanes" -eq 1 ]; then
  for t in "$@"; do run_one "$t" ""; done
else
  # split: solo scripts, and the rest ordered longest first
  solo=(); shared=()
  for t in "$@"; do
    if [ "${t##*.}" = "sh" ] && grep -q '^# test-solo:' "$t"; then solo+=("$t"); else shared+=("$t"); fi
  done
  durations=$here/integration/durations.txt
  for t in "${shared[@]}"; do
    n=$(basename "$t")
    d=$(awk -v n="$n" '$2 == n { print $1; exit }' "$durations" 2>/dev/null)
    printf '%s\t%s\n' "${d:-30}" "$t"
  done | sort -s -t$'\t' -k1,1nr | cut -f2 > "$work/queue"
  echo 0 > "$work/next"
  total=$(wc -l < "$work/queue")
  echo "$kind: ${#shared[@]} scripts in $lanes lanes, ${#solo[@]} alone after${SKIFF_TEST_NET_THREADS:+; num.network.threads=$SKIFF_TEST_NET_THREADS}"
  # next_test -> the queue's next script, or status 1 when it is empty
  next_test() {
    local i
    {
      flock 8
      i=$(cat "$work/next")
      [ "$i" -lt "$total" ] || return 1
      echo $((i + 1)) > "$work/next"
    } 8>"$work/queue.lock"
    sed -n "$((i + 1))p" "$work/queue"
  }
  width=$(( 12000 / lanes ))
  wall0=$(date +%s)
  for ((l = 1; l <= lanes; l++)); do
    (
      child=
      trap '[ -z "$child" ] || kill -TERM "$child" 2>/dev/null; exit 143' TERM
      export SK_PORT_LO=$(( 20000 + (l - 1) * width )) SK_PORT_HI=$(( 20000 + l * width - 1 ))
      while t=$(next_test); do run_one "$t" "$l"; done
    ) &
    pids+=("$!")
  done
  for p in "${pids[@]}"; do wait "$p"; done
  lanes_wall=$(( $(date +%s) - wall0 ))
  for t in "${solo[@]}"; do run_one "$t" solo; done
  wall=$(( $(date +%s) - wall0 ))
  busy=$(awk '{ s[$4] += $3; n[$4]++ } END { for (l in s) printf "%s %s %s\n", l, s[l], n[l] }' "$work/results" | sort -k1,1n | awk '$1 != "solo" { print } $1 == "solo" { s = $0 } END { if (s != "") print s }' |
         awk '{ printf "%s%s %ss (%s)", (NR > 1 ? ", " : ""), ($1 == "solo" ? "solo" : "lane " $1), $2, $3 }')
  echo "$kind: wall ${wall}s (lanes ${lanes_wall}s); busy: $busy"
fi
awk '{ print $3 "\t" $2 }' "$work/results" | sort -t$'\t' -k1,1nr > "$logdir/durations.txt"
pass=$(grep -c '^PASS ' "$work/results")
fail=$(grep -c '^FAIL ' "$work/results")
failed=$(awk '$1 == "FAIL" { printf " %s", $2 }' "$work/results")
[ "$fail" -eq 0 ] || echo "$kind: failed:$failed"
echo "$kind: $pass passed, $fail failed"
echo "$kind $pass $fail" >> "$top/summary.txt"
[ "$fail" -eq 0 ] && [ $((pass + fail)) -eq $# ]
