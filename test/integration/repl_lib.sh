#!/usr/bin/env bash
# Helpers for the replication fault-injection tests (t_repl_*.sh), on top of
# lib.sh (source lib.sh first). Not a test itself (no t_ prefix).
#
#   repl_opts                 -> REPL_OPTS: --set flags for fast failure detection
#   repl_leader TOPIC [NODE..] -> partition 0's leader as the first answering node
#                               (admin /v1/topics/TOPIC) sees it; -1 if none
#   repl_wait_leader SECS TOPIC NOT [NODE..] -> polls until a leader other than
#                               NOT (and not -1) is named; prints it
#   repl_part FIELD TOPIC NODE -> one field of partition 0 on NODE's admin port
#   repl_proxy_cluster N      -> like sk_write_cluster_conf N, but every node's
#                               Kafka and controller listener is reached by its
#                               peers through test/tools/tcp_proxy.py (started
#                               here; control port PROXY_CTL); node i's config
#                               is $SK_TMP/cluster-i.conf; start with
#                               repl_start_node i [--set ...]
#   repl_proxy CMD...         -> one control command ("cut 2", "heal", "status")
set -u

# Faster than Kafka's defaults so that failures are detected within seconds on
# a loaded 2-core machine (same values as t_quorum_cluster.sh for the quorum).
repl_opts() {
  REPL_OPTS=(--set controller.quorum.fetch.timeout.ms=500 --set controller.quorum.election.timeout.ms=200
             --set broker.heartbeat.interval.ms=500 --set broker.session.timeout.ms=3000
             --set replica.lag.time.max.ms=3000 --set min.insync.replicas=2
             --set default.replication.factor=3 --set offsets.topic.replication.factor=3)
}

repl_adm() { curl -s --max-time 1 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }

repl_part() {  # FIELD TOPIC NODE
  repl_adm "$3" "/v1/topics/$2" | jq -r ".partitions[0].$1 | if type == \"array\" then join(\",\") else . end" 2>/dev/null
}

repl_leader() {
  local topic=$1 i l nodes=("${@:2}")
  [ ${#nodes[@]} -gt 0 ] || nodes=(1 2 3)
  for i in "${nodes[@]}"; do
    l=$(repl_part leader "$topic" "$i")
    case $l in ''|null) continue ;; esac
    echo "$l"; return 0
  done
  echo -1
}

repl_wait_leader() {  # SECS TOPIC NOT [NODE..]
  local secs=$1 topic=$2 not=$3 t0=$SECONDS l
  while [ $((SECONDS - t0)) -lt "$secs" ]; do
    l=$(repl_leader "$topic" "${@:4}")
    if [ "$l" != -1 ] && [ "$l" != "$not" ]; then echo "$l"; return 0; fi
    sleep 0.2
  done
  echo -1; return 1
}

repl_proxy_cluster() {
  local n=$1 i j
  sk_write_cluster_conf "$n"
  PROXY_KAFKA=(); PROXY_CTRL=(); local routes=()
  for ((i = 1; i <= n; i++)); do
    PROXY_KAFKA[i]=$(sk_free_port); PROXY_CTRL[i]=$(sk_free_port)
    routes+=("${PROXY_KAFKA[i]}:${SK_KAFKA_PORT[i]}:$i" "${PROXY_CTRL[i]}:${SK_CTRL_PORT[i]}:$i")
  done
  PROXY_CTL=$(sk_free_port)
  "$SK_PY" "$SK_ROOT/test/tools/tcp_proxy.py" --tag "$SK_TMP/cluster-" --control "$PROXY_CTL" "${routes[@]}" \
    > "$SK_TMP/proxy.log" 2>&1 &
  PROXY_PID=$!
  SK_PIDS+=("$PROXY_PID")
  sk_wait_port "$PROXY_CTL" 20 "$PROXY_PID" || sk_fail "tcp_proxy did not start"
  for ((i = 1; i <= n; i++)); do
    # node i reaches the other voters through their proxies; its own entry
    # must name its real controller port
    local voters=""
    for ((j = 1; j <= n; j++)); do
      local p=${PROXY_CTRL[j]}; [ "$j" = "$i" ] && p=${SK_CTRL_PORT[j]}
      voters+="${voters:+,}$j@127.0.0.1:$p"
    done
    sed -e "s/^controller.quorum.voters=.*/controller.quorum.voters=$voters/" \
        "$SK_TMP/cluster.conf" > "$SK_TMP/cluster-$i.conf"
    # everyone (peers and clients) is told the proxy address; clients
    # connect through it too, but the proxy never cuts a client
    sed -i -e "/^\[node.$i\]/a advertised.listeners=PLAINTEXT://127.0.0.1:${PROXY_KAFKA[i]}" "$SK_TMP/cluster-$i.conf"
  done
}

repl_start_node() {
  local i=$1; shift
  "$SK_BIN/skiff" --config "$SK_TMP/cluster-$i.conf" --node "$i" "${SK_NET_ARGS[@]}" "$@" >> "$SK_TMP/node-$i.log" 2>&1 &
  SK_NODE_PID[i]=$!
  SK_PIDS+=("$!")
}

repl_proxy() {
  local reply
  exec 7<>"/dev/tcp/127.0.0.1/$PROXY_CTL" || return 1
  echo "$*" >&7
  IFS= read -r -t 10 reply <&7
  exec 7>&-
  echo "$reply"
  case $reply in ok*) return 0 ;; *) return 1 ;; esac
}
