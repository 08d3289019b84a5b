#!/usr/bin/env bash
# Issue 18 benchmark: produce throughput through the authorizer. Two
# SASL_PLAINTEXT (PLAIN) nodes run side by side: one with no authorizer, one
# with authorizer.class.name=StandardAuthorizer and BENCH_ACL_N (10,000) ACL
# bindings (literal, prefixed and DENY ones, for other users and topics) plus
# the bench user's prefixed WRITE. The same librdkafka load (kload produce,
# BENCH_ACL_COUNT x 100 B, acks=1, one partition) alternates between the two,
# BENCH_ACL_REPEAT times; the medians and the ratio on/off are printed (the
# issue's goal: >= 0.95x). Figures are reported, not judged: exit 0 when
# every run delivered every message.
#
# env: SKIFF_BIN_DIR, SKIFF_TEST_DIR, BENCH_ACL_N (10000), BENCH_ACL_COUNT
#      (500000), BENCH_ACL_REPEAT (3)
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
[ -x "$kload" ] || { echo "missing $kload (build it with make)"; exit 1; }
command -v jq >/dev/null || { echo "jq not found"; exit 1; }
nacl=${BENCH_ACL_N:-10000}
count=${BENCH_ACL_COUNT:-500000}
repeat=${BENCH_ACL_REPEAT:-3}
status=0
res=$SK_TMP/results.jsonl
: > "$res"

declare -A PORT
for i in 1 2; do
  P=$(sk_free_port); C=$(sk_free_port); A=$(sk_free_port)
  SK_KAFKA_PORT[$i]=$P; SK_ADMIN_PORT[$i]=$A; PORT[$i]=$P
  authz=""
  [ "$i" = 2 ] && authz="authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
  cat > "$SK_TMP/node$i.conf" <<CONF
node.id=$i
process.roles=broker,controller
controller.quorum.voters=$i@127.0.0.1:$C
controller.listener.names=CONTROLLER
listeners=SASL_PLAINTEXT://127.0.0.1:$P,CONTROLLER://127.0.0.1:$C
listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_bench="bench-pw";
sasl.mechanism.inter.broker.protocol=PLAIN
super.users=User:admin
$authz
admin.listener=127.0.0.1:$A
log.dirs=$SK_TMP/data/node-$i
CONF
  "$SK_BIN/skiff" --config "$SK_TMP/node$i.conf" > "$SK_TMP/node-$i.log" 2>&1 &
  SK_NODE_PID[$i]=$!
  SK_PIDS+=("$!")   # stopped by lib.sh's exit trap, pass or fail
  sk_wait_port "$P" 30 "${SK_NODE_PID[$i]}" || sk_fail "node $i not up"
done
props=(-X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=PLAIN -X sasl.username=bench -X sasl.password=bench-pw)
aprops=(-X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=PLAIN -X sasl.username=admin -X sasl.password=admin-secret)
sk_log "loading $nacl ACL bindings into node 2"
made=$("$SK_PY" "$SK_ROOT/test/bench/acl_load.py" "127.0.0.1:${PORT[2]}" "$nacl" bench acl-bench) || sk_fail "ACL load failed"
sk_log "node 2 holds $made bindings"

for ((rep = 1; rep <= repeat; rep++)); do
  for i in 1 2; do
    t="acl-bench-$i-$rep"
    "$kload" create-topic --brokers "127.0.0.1:${PORT[$i]}" "${aprops[@]}" --topic "$t" --partitions 1 --timeout-s 20 \
      2>>"$SK_TMP/kload.err" || { echo "create-topic $t failed" >&2; status=1; }
    sk_log "run $rep/$repeat node $i: produce $count x 100 B"
    out=$("$kload" produce --brokers "127.0.0.1:${PORT[$i]}" "${props[@]}" --topic "$t" --count "$count" --size 100 \
          --acks 1 --timeout-s 180 2>>"$SK_TMP/kload.err") || { echo "kload on node $i failed" >&2; tail -5 "$SK_TMP/kload.err" >&2; status=1; }
    [ -n "$out" ] && jq -c --arg n "$i" '. + {node: $n}' <<<"$out" >> "$res"
  done
done
med() { jq -r --arg n "$1" 'select(.node == $n) | .msgs_per_s' "$res" | sort -g |
        awk '{ a[NR] = $1 } END { if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
off=$(med 1); on=$(med 2)
echo
echo "ACL bench: produce $count x 100 B, acks=1, median of $repeat"
printf '  authorizer off              %12s msgs/s\n' "${off:--}"
printf '  authorizer on, %6s ACLs  %12s msgs/s\n' "$made" "${on:--}"
if [ -n "$off" ] && [ -n "$on" ]; then
  awk -v a="$on" -v b="$off" 'BEGIN { printf "  ratio on/off                %12.3f (goal >= 0.95)\n", a / b }'
fi
exit $status
