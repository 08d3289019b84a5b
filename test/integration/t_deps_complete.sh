#!/usr/bin/env bash
# Every program the test and tool scripts call is installed by
# etc/install-deps.sh or comes with every Debian system (Priority: required,
# what a minbase debootstrap holds). A fresh Debian 12 once failed three
# tests this way: xxd, valgrind and ps (procps) were not in install-deps.sh.
#
# deps_scan.py lists the literal command words of the scripts; each one that
# is not a bash builtin/keyword or a function the scripts define is looked
# up on this machine (command -v), its file mapped to its package (dpkg -S,
# through /etc/alternatives and the /bin -> /usr/bin merge), and that package
# must be required or named in install-deps.sh's package lists.
. "$(dirname "$0")/lib.sh"
NAME=t_deps_complete
cd "$SK_ROOT" || exit 1
command -v dpkg-query >/dev/null || sk_fail "not a Debian system: dpkg-query missing"

# The scripts make test, make bench and make fuzz run (test/fixtures/*/capture
# scripts need a real Kafka and tshark and are run by hand: not scanned).
mapfile -t SCRIPTS < <(find test etc -name node_modules -prune -o -name '*.sh' -print |
                       grep -v '^test/fixtures/' | sort)
sk_check "found the scripts to scan (${#SCRIPTS[@]})" test "${#SCRIPTS[@]}" -ge 20

# install-deps.sh's packages: its *_PKGS lists and what it adds by hand.
DEPS_TEXT=$(cat etc/install-deps.sh)
PKGS=$(
  printf '%s\n' "$DEPS_TEXT" | sed -n '/^[A-Z_]*PKGS="/,/"/p' | sed 's/^[A-Z_]*PKGS="//; s/["\\]//g' | tr ' ' '\n'
  printf '%s\n' "$DEPS_TEXT" | grep -o 'missing+=([a-z0-9.+-]*)' | sed 's/missing+=(//; s/)//'
)
PKGS=$(printf '%s\n' "$PKGS" | grep -v '^$' | sort -u)
sk_check "install-deps.sh lists packages ($(printf '%s\n' "$PKGS" | wc -l))" test -n "$PKGS"

SKIP=$( { compgen -b; compgen -k; echo .; "$SK_PY" test/integration/deps_scan.py --functions "${SCRIPTS[@]}"; } | sort -u)
SCAN=$("$SK_PY" test/integration/deps_scan.py "${SCRIPTS[@]}") || sk_fail "deps_scan.py failed"
CMDS=$(printf '%s\n' "$SCAN" | awk '{print $1}' | sort -u | grep -vxF -f <(printf '%s\n' "$SKIP"))
# the scan must see the calls that once went unnoticed
for c in xxd valgrind ps; do sk_check "the scan sees '$c'" grep -qx "$c" <<<"$CMDS"; done

# The packages install-deps.sh brings: its lists and, recursively, their
# Depends and Pre-Depends (installing python3 installs python3-minimal).
OKPKGS=$(dpkg-query -W -f='${Package}\t${Priority}\t${Depends}, ${Pre-Depends}\n' | "$SK_PY" -c '
import re, sys
listed = set(sys.argv[1].split())
deps, ok = {}, set()
for line in sys.stdin:
    name, prio, d = (line.rstrip("\n").split("\t") + ["", ""])[:3]
    deps[name] = {re.sub(r"[ :(].*", "", a.strip()) for a in re.split(r"[,|]", d) if a.strip()}
    if prio == "required": ok.add(name)
todo = list(listed)
while todo:
    p = todo.pop()
    if p in ok: continue
    ok.add(p)
    todo.extend(deps.get(p, ()))
print("\n".join(sorted(ok)))' "$PKGS")

# For each command, the files whose owner may vouch for it: the file on the
# PATH, its target, their merged-/usr twins and, for an alternative (awk ->
# mawk or gawk), every provider. One dpkg-query -S for all of them.
declare -A WHERE FILES
PATHS=()
while read -r cmd; do
  [ -n "$cmd" ] || continue
  WHERE[$cmd]=$(printf '%s\n' "$SCAN" | awk -v c="$cmd" '$1 == c { print $2; exit }')
  path=$(command -v "$cmd") || { FILES[$cmd]=""; continue; }
  [ "${path:0:1}" = / ] || { FILES[$cmd]=""; continue; }
  fl="$path $(readlink -f "$path")"
  if [ "$(readlink "$path")" = "/etc/alternatives/$(basename "$path")" ]; then
    fl+=" $(update-alternatives --list "$(basename "$path")" 2>/dev/null | tr '\n' ' ')"
  fi
  all=""
  for f in $fl; do all+=" $f ${f#/usr} /usr$f"; done
  FILES[$cmd]=$all
  PATHS+=($all)
done <<<"$CMDS"
OWNERS=$(dpkg-query -S "${PATHS[@]}" 2>/dev/null | grep -v '^diversion' |
         awk -F': ' '{ n = split($1, p, ", "); for (i = 1; i <= n; i++) { sub(/:.*/, "", p[i]); print $2, p[i] } }' | sort -u)

while read -r cmd; do
  [ -n "$cmd" ] || continue
  reason="not installed here: its package cannot be known"
  if [ -n "${FILES[$cmd]}" ]; then
    seen=$(for f in ${FILES[$cmd]}; do awk -v f="$f" '$1 == f { print $2 }' <<<"$OWNERS"; done | sort -u)
    if [ -z "$seen" ]; then
      reason="$(command -v "$cmd") belongs to no Debian package"
    elif grep -qxF -f <(printf '%s\n' "$seen") <<<"$OKPKGS"; then
      reason=""
    else
      reason="from package(s) $(echo $seen | sed 's/ /, /g'): neither Priority required nor installed by install-deps.sh"
    fi
  fi
  [ -z "$reason" ] || echo "  $cmd (first call: ${WHERE[$cmd]}): $reason"
  sk_check "'$cmd' is provided" test -z "$reason"
done <<<"$CMDS"

sk_summary "$NAME"
