#!/usr/bin/env bash
# The Makefile's contract (issue 14, "Build and start"):
#  - `make` builds bin/ (skiff, skiffctl) and no test program;
#  - once built, nothing is rebuilt: bin/ is up to date and `make run`
#    compiles nothing before it starts the cluster;
#  - a test program, once linked, stays up to date. Its own object used to be
#    an "intermediate" file that make deleted after linking, so every later
#    make compiled all of them again.
# Only `make -q` (question) and `make -n` (dry run) are used: nothing is
# built or deleted, so this is safe while other tests use the tree. A fresh
# dry run goes to a build dir under the temp dir that is never created.
. "$(dirname "$0")/lib.sh"
# a clean make: no jobserver, flags or variables of a make that runs this test
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES GNUMAKEFLAGS
mk() { make -C "$SK_ROOT" --no-print-directory "$@"; }
# a line of `make -n` output that builds something: compile / link (-o),
# archive, code generation
build_steps() { grep -E ' -o |^ar |protoc-c|kpgen' || true; }

[ -x "$SK_ROOT/bin/skiff" ] && [ -x "$SK_ROOT/bin/skiffctl" ] ||
  sk_fail "bin/skiff and bin/skiffctl must be built first (make)"

# 1. bin/ is up to date
mk -q bin/skiff bin/skiffctl; rc=$?
sk_check "make -q bin/skiff bin/skiffctl: up to date (exit $rc)" test "$rc" = 0
mk -q all; rc=$?
sk_check "make -q all (the default goal): up to date (exit $rc)" test "$rc" = 0

# 2. `make run` compiles nothing (-n prints the cluster start, never runs it)
steps=$(mk -n run 2>&1 | build_steps)
sk_check "make -n run: no build step${steps:+ ($steps)}" test -z "$steps"
sk_check "make -n run: starts etc/run-cluster.sh" bash -c "make -C '$SK_ROOT' --no-print-directory -n run 2>&1 | grep -q 'run-cluster.sh etc/cluster.conf'"

# 3. every test program already built is still up to date
# (only those whose source still exists: a stale one has no rule any more)
progs=()
for p in "$SK_ROOT"/build/test/test_* "$SK_ROOT"/build/test/sim_* "$SK_ROOT"/build/test/bench_* "$SK_ROOT"/build/test/tools/*; do
  [ -f "$p" ] && [ -x "$p" ] || continue
  n=${p##*/}
  case $p in
    */tools/*) src=test/tools/$n.c ;;
    */test_*) src=test/unit/$n.c ;;
    */sim_*) src=test/sim/$n.c ;;
    *) src=test/bench/$n.c ;;
  esac
  [ -f "$SK_ROOT/$src" ] && progs+=("${p#"$SK_ROOT"/}")
done
if [ ${#progs[@]} -gt 0 ]; then
  mk -q "${progs[@]}"; rc=$?
  stale=$(mk -n "${progs[@]}" 2>&1 | build_steps | head -n 3)
  sk_check "make -q on the ${#progs[@]} built test programs: up to date (exit $rc)${stale:+; would run: $stale}" test "$rc" = 0
else
  sk_log "no test program built yet; check 3 skipped"
fi

# 4. what `make` builds, from nothing (dry run into a build dir never made)
fresh=(B="$SK_TMP/fresh/build" BIN="$SK_TMP/fresh/bin")
mk -n "${fresh[@]}" > "$SK_TMP/fresh-all.txt" 2>&1
sk_check "fresh make: links bin/skiff" grep -qF -- "-o $SK_TMP/fresh/bin/skiff " "$SK_TMP/fresh-all.txt"
sk_check "fresh make: links bin/skiffctl" grep -qF -- "-o $SK_TMP/fresh/bin/skiffctl " "$SK_TMP/fresh-all.txt"
tests=$(grep -E "$SK_TMP/fresh/build/(obj/)?test/" "$SK_TMP/fresh-all.txt" | head -n 3)
sk_check "fresh make: builds no test program or test object${tests:+ ($tests)}" test -z "$tests"
sk_check "fresh make: nothing was written" test ! -e "$SK_TMP/fresh"

# the test targets do build them (so check 4 looks at the right paths)
mk -n "${fresh[@]}" test-unit > "$SK_TMP/fresh-unit.txt" 2>&1
sk_check "fresh make test-unit: builds the unit test programs" \
  grep -qE -- "-o $SK_TMP/fresh/build/test/test_[a-z0-9_]+ " "$SK_TMP/fresh-unit.txt"
sk_summary t_make_nothing_to_do
