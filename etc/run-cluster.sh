#!/usr/bin/env bash
# Starts every node that CONFIG describes (one [node.N] section each) in the
# foreground and stops all of them on Ctrl-C / SIGTERM (or when any node
# exits). Once every node's admin port answers GET /v1/health with
# "healthy":true and no node down (every broker registered and unfenced, a
# controller elected), it prints one line, the signal that clients may start:
#
#   skiff: cluster ready: bootstrap H:P,H:P,H:P  admin http://H:P http://H:P http://H:P
#
# Before that line a CreateTopics with replication factor 3 can be refused
# (no broker registered yet). Health is polled with curl every 0.2 s for at
# most SKIFF_READY_TIMEOUT_S (60) seconds; past that it says which nodes are
# not healthy and why, and keeps the cluster running.
# usage: etc/run-cluster.sh [CONFIG]     (default etc/cluster.conf)
#   env: SKIFF_BIN (bin/skiff), SKIFF_READY_TIMEOUT_S (60),
#        SKIFF_ADMIN_CURL (extra curl arguments for an authenticated admin
#        port, e.g. "--cacert data/certs/ca.crt -u admin:admin-secret"; a
#        node with admin.security.protocol=SSL is polled over https)
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

# the Kafka address clients use for node N: the first advertised listener
# (else listener) that is not a controller listener
client_addr() {
  local l name all ctrl=",$(value_of controller.listener.names "$1"),"
  l=$(value_of advertised.listeners "$1"); [ -n "$l" ] || l=$(value_of listeners "$1")
  IFS=, read -ra all <<<"$l"
  for l in "${all[@]}"; do
    name=${l%%://*}; name=${name//[[:space:]]/}
    [[ $ctrl == *",$name,"* ]] || { echo "${l##*//}"; return; }
  done
}

# scheme://host:port of node N's admin listener (skiff's default when the
# file has none)
admin_addr() {
  local a s=http
  a=$(value_of admin.listener "$1")
  [ "$(value_of admin.security.protocol "$1")" = SSL ] && s=https
  echo "$s://${a:-127.0.0.1:9644}"
}

# health ADDR -> prints the node's /v1/health answer (empty when it gives
# none); status 0 when it is healthy with no node down
health() {
  local h
  # shellcheck disable=SC2086
  h=$(curl -s --max-time 2 ${SKIFF_ADMIN_CURL:-} "$1/v1/health" 2>/dev/null)
  echo "$h"
  [[ $h == *'"healthy":true'* && $h == *'"nodes_down":[]'* ]]
}

pids=()
stop_all() {
  local st=${1:-0}
  trap - INT TERM EXIT
  echo; echo "run-cluster: stopping ${#pids[@]} node(s)"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  exit "$st"
}
trap stop_all INT TERM EXIT

ids=(); bootstrap=(); admins=()
for n in $nodes; do
  # process substitution keeps $! the node's own pid (a pipe would give sed's)
  "$bin" --config "$conf" --node "$n" > >(sed -u "s/^/[node $n] /") 2>&1 &
  pids+=($!); ids+=("$n")
  bootstrap+=("$(client_addr "$n")"); admins+=("$(admin_addr "$n")")
  echo "node $n: kafka ${bootstrap[-1]}  admin ${admins[-1]}"
done

limit_s=${SKIFF_READY_TIMEOUT_S:-60}
echo "run-cluster: ${#pids[@]} node(s) started; waiting (up to ${limit_s} s) until every node reports healthy"
start_s=$SECONDS
while :; do
  bad=()
  for i in "${!admins[@]}"; do
    h=$(health "${admins[i]}") || bad+=("node ${ids[i]} ${admins[i]}/v1/health: ${h:-no answer}")
  done
  if [ ${#bad[@]} -eq 0 ]; then
    urls=$(printf ' %s' "${admins[@]}")
    echo "skiff: cluster ready: bootstrap $(IFS=,; echo "${bootstrap[*]}")  admin${urls}"
    break
  fi
  for i in "${!pids[@]}"; do
    kill -0 "${pids[i]}" 2>/dev/null && continue
    echo "run-cluster: node ${ids[i]} exited before the cluster was ready; stopping the others"
    stop_all 1
  done
  if [ $((SECONDS - start_s)) -ge "$limit_s" ]; then
    echo "run-cluster: cluster NOT ready after ${limit_s} s; the nodes keep running. Not healthy:"
    printf '  %s\n' "${bad[@]}"
    break
  fi
  sleep 0.2
done
echo "Ctrl-C stops all nodes."
wait -n
echo "run-cluster: a node exited; stopping the others"
stop_all 1
