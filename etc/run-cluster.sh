#!/usr/bin/env bash
# Starts every node that CONFIG describes (one [node.N] section each) in the
# foreground, prints the bootstrap list and the admin URLs, and stops all of
# them on Ctrl-C (or when any node exits).
# usage: etc/run-cluster.sh [CONFIG]     (default etc/cluster.conf)
set -u
conf=${1:-etc/cluster.conf}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${SKIFF_BIN:-$here/bin/skiff}
[ -x "$bin" ] || { echo "run-cluster: $bin not built (run make)" >&2; exit 1; }
[ -f "$conf" ] || { echo "run-cluster: no config file $conf" >&2; exit 1; }

nodes=$(sed -n 's/^[[:space:]]*\[node\.\([0-9][0-9]*\)\][[:space:]]*$/\1/p' "$conf")
[ -n "$nodes" ] || { echo "run-cluster: $conf has no [node.N] sections" >&2; exit 1; }

# value of KEY for node N: the section's line wins over the top-level one
value_of() {
  awk -v want="$2" -v key="$1" '
    /^[[:space:]]*\[/ { sect=$0; gsub(/[][[:space:]]/, "", sect); next }
    /^[[:space:]]*#/ || !/=/ { next }
    { k=$0; sub(/=.*/, "", k); gsub(/[[:space:]]/, "", k); if (k != key) next
      v=$0; sub(/^[^=]*=/, "", v); gsub(/^[[:space:]]+|[[:space:]]+$/, "", v)
      if (sect == "") top=v; else if (sect == "node." want) mine=v }
    END { print (mine != "" ? mine : top) }' "$conf"
}

pids=()
stop_all() {
  trap - INT TERM EXIT
  echo; echo "run-cluster: stopping ${#pids[@]} node(s)"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  exit 0
}
trap stop_all INT TERM EXIT

bootstrap=()
for n in $nodes; do
  mkdir -p "$here/data"
  # process substitution keeps $! the node's own pid (a pipe would give sed's)
  "$bin" --config "$conf" --node "$n" > >(sed -u "s/^/[node $n] /") 2>&1 &
  pids+=($!)
  l=$(value_of listeners "$n"); l=${l%%,*}; bootstrap+=("${l##*//}")
  echo "node $n: kafka ${l##*//}  admin http://$(value_of admin.listener "$n")"
done
echo "bootstrap servers: $(IFS=,; echo "${bootstrap[*]}")"
echo "Ctrl-C stops all nodes."
wait -n
echo "run-cluster: a node exited; stopping the others"
stop_all
