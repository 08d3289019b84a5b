#!/usr/bin/env bash
# The integration smoke test again, with every skiff process under valgrind
# memcheck: no invalid access, no use of uninitialised memory, no definite
# leak at exit. (The project promises a valgrind-clean smoke test.)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SKIFF_BIN_DIR:-$root/bin}
command -v valgrind >/dev/null || { echo "valgrind smoke: valgrind not installed"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/skiff-vg.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/skiff" <<WRAP
#!/usr/bin/env bash
exec valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite \\
  --log-file="$tmp/vg.%p.log" "$bin/skiff" "\$@"
WRAP
chmod +x "$tmp/skiff"
pass=0; fail=0
if SKIFF_BIN_DIR=$tmp bash "$root/test/integration/t_broker_smoke.sh" > "$tmp/smoke.log" 2>&1; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: smoke test under valgrind"; tail -n 30 "$tmp/smoke.log"
fi
logs=("$tmp"/vg.*.log)
if [ ! -e "${logs[0]}" ]; then
  fail=$((fail + 1)); echo "FAIL: no valgrind log: the wrapper never ran"
else
  for f in "${logs[@]}"; do
    # --quiet leaves a log empty unless valgrind found something
    if [ -s "$f" ]; then fail=$((fail + 1)); echo "FAIL: valgrind report $f:"; head -n 40 "$f"
    else pass=$((pass + 1)); fi
  done
fi
echo "valgrind smoke: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
