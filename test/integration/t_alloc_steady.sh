#!/usr/bin/env bash
# Steady-state produce and fetch allocate nothing per request (issue 19):
# nodes run under an LD_PRELOAD shim counting malloc/calloc/realloc/memalign
# of all their threads (test/bench/alloc/malloc_count.c); one confluent-kafka
# producer and consumer warm up, then a measured phase on the same
# connections. Checked: allocations during the measured phase stay under one
# per 20 requests answered (the node's timers may allocate; a request path
# that allocates gives >= 1 per request: 2-3.5 before the block pool, and
# ~10 per acks=all request with the replication driver's waits), and the
# node's skiff_mem_pool_blocks_total{event="fresh"} stays as flat.
#   1 node: Produce (acks=1) and Fetch (small answers: many Fetches).
#   3 nodes, RF 3, acks=all: Produce on the leaders plus the followers'
#   replica Fetches, allocations summed over the three nodes.
. "$(dirname "$0")/lib.sh"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
shim=$SK_TMP/malloc_count.so
cc -O2 -shared -fPIC -pthread -o "$shim" "$SK_ROOT/test/bench/alloc/malloc_count.c" || sk_fail "cannot build the shim"
[ -x "$kload" ] || sk_fail "missing $kload"

start_counted() {   # start_counted N: a cluster of N nodes, each under the shim with its own count file
  local n=$1 i
  sk_write_cluster_conf "$n"
  for ((i = 1; i <= n; i++)); do
    MALLOC_COUNT_OUT=$SK_TMP/mc-$i LD_PRELOAD=$shim sk_start_node "$i" --set num.partitions=4 \
      --set broker.heartbeat.interval.ms=300
  done
  for ((i = 1; i <= n; i++)); do
    sk_wait_port "${SK_KAFKA_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i kafka port not up"
    sk_wait_port "${SK_ADMIN_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i admin port not up"
  done
  files=; admins=
  for ((i = 1; i <= n; i++)); do
    files+=${files:+,}$SK_TMP/mc-$i; admins+=${admins:+,}127.0.0.1:${SK_ADMIN_PORT[i]}
  done
}

check_phase() {   # check_phase LABEL JSON-LINE
  local label=$1 line=$2 req al
  req=$(jq -r .requests <<<"$line"); al=$(jq -r .allocations <<<"$line")
  sk_log "$label: $req requests, $al allocations"
  sk_check "$label: requests were answered ($req)" test "$req" -ge 200
  sk_check "$label: $al allocations over $req requests (< 1 per 20)" test $((al * 20)) -lt "$req"
  # the node's own view (skiff_mem_pool_blocks_total{event="fresh"}): the
  # pool filled during the warm-up, and got (almost) nothing new after
  local f0 fr
  f0=$(jq -r .pool_fresh_start <<<"$line"); fr=$(jq -r .pool_fresh <<<"$line")
  sk_check "$label: the pool metric counted the warm-up's blocks ($f0)" test "$f0" -gt 0
  sk_check "$label: $fr fresh pool blocks over $req requests (< 1 per 20)" test $((fr * 20)) -lt "$req"
}

run_client() {   # run_client TOPIC ACKS [consume] -> the JSON lines, checked
  local out
  out=$("$SK_PY" "$SK_ROOT/test/integration/clients/alloc_steady.py" "$SK_BOOTSTRAP" "$1" 4 "$2" \
    "$files" "$admins" "${3:-}" 2>>"$SK_TMP/client.err") || { cat "$SK_TMP/client.err"; sk_fail "client: $out"; }
  grep '^FAIL' <<<"$out" && sk_fail "client failed"
  printf '%s\n' "$out"
}

# --- 1 node: Produce and Fetch
start_counted 1
"$kload" create-topic --brokers "$SK_BOOTSTRAP" --topic steady --partitions 4 --timeout-s 20 >/dev/null ||
  sk_fail "create-topic steady"
mapfile -t lines < <(run_client steady 1 consume)
[ "${#lines[@]}" -eq 2 ] || sk_fail "client printed ${#lines[@]} phases: ${lines[*]}"
check_phase "1 node, Produce acks=1" "${lines[0]}"
check_phase "1 node, Fetch" "${lines[1]}"
sk_stop_node 1

# --- 3 nodes, RF 3, acks=all (a new cluster: the 1-node one's metadata names other voters)
rm -rf "$SK_TMP/data"
start_counted 3
unfenced3() { test "$(curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[1]}/v1/cluster" |
  jq '[.brokers[] | select(.fenced == false)] | length' 2>/dev/null)" = 3; }
t=0; until unfenced3; do sleep 0.2; t=$((t + 1)); [ "$t" -lt 150 ] || sk_fail "3 unfenced brokers not seen"; done
"$kload" create-topic --brokers "$SK_BOOTSTRAP" --topic steady3 --partitions 4 --replication 3 \
  --timeout-s 30 >/dev/null || sk_fail "create-topic steady3"
mapfile -t lines < <(run_client steady3 all)
[ "${#lines[@]}" -eq 1 ] || sk_fail "client printed ${#lines[@]} phases: ${lines[*]}"
check_phase "3 nodes, Produce acks=all" "${lines[0]}"
for i in 1 2 3; do sk_stop_node "$i"; done
sk_summary t_alloc_steady
