#!/usr/bin/env bash
# The shipped binaries carry no test-only fault injection: storage's hooks
# (st_io.h: fail the Nth write/fsync/rename/truncate, skip fsync; st_cleaner.h:
# SIGKILL at a swap step) are compiled only into test programs (Makefile:
# FAULT_SRCS, -DSKIFF_FAULT_INJECTION). A test program built from the same
# sources must have them, so the check is not vacuous (nm sees symbols and
# the names are the right ones).
. "$(dirname "$0")/lib.sh"

# global hook functions and the static state behind them
HOOKS="st_io_inject st_io_inject_clear st_io_set_sync st_io_sync_enabled st_cleaner_set_crash_step g_crash_step g_after"
command -v nm >/dev/null || sk_fail "nm not found (binutils)"

syms() { nm "$1" 2>/dev/null | awk '{ print $NF }' | sort -u; }
has() { grep -qx "$2" "$1"; }
lacks() { ! grep -qx "$2" "$1"; }

for b in skiff skiffctl; do
  bin=$SK_BIN/$b
  sk_check "$b built" test -x "$bin"
  [ -x "$bin" ] || continue
  syms "$bin" > "$SK_TMP/$b.syms"
  # not stripped: an empty symbol table would make every check below pass
  sk_check "$b has a symbol table" test "$(wc -l < "$SK_TMP/$b.syms")" -gt 100
  for h in $HOOKS; do sk_check "$b has no $h" lacks "$SK_TMP/$b.syms" "$h"; done
done
# bin/skiff still goes through the shim: the hooks are gone, the syscalls not
sk_check "skiff has st_io_pwrite" has "$SK_TMP/skiff.syms" st_io_pwrite
sk_check "skiff has st_io_fsync" has "$SK_TMP/skiff.syms" st_io_fsync

# the control: a unit test program has every hook
ctl=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/test_st_io
if [ -x "$ctl" ]; then
  syms "$ctl" > "$SK_TMP/ctl.syms"
  for h in $HOOKS; do sk_check "test_st_io has $h" has "$SK_TMP/ctl.syms" "$h"; done
else
  echo "note: $ctl not built; the control (hooks present in a test program) is skipped"
fi
sk_summary t_no_test_hooks
