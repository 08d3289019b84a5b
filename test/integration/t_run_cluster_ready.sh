#!/usr/bin/env bash
# etc/run-cluster.sh (what `make run` starts) prints one line
#   skiff: cluster ready: bootstrap H:P,H:P,H:P  admin http://H:P http://H:P http://H:P
# once every node's /v1/health is healthy with no node down. A user who
# creates a replication-factor-3 topic right after that line must not be
# refused: before it, the brokers may not be registered yet and CreateTopics
# answers "available brokers: 0". Here run-cluster.sh gets a 3-node config on
# free loopback ports with data under the test's temp dir (the quorum timings
# of etc/cluster.conf), the test waits for the line, then at once creates an
# RF 3 topic with skiffctl, ONE attempt, no retry; the line must list the 3
# Kafka listeners and the 3 admin URLs. run-cluster is stopped with SIGTERM
# (it stops its nodes) and no node of this test may be left.
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "t_run_cluster_ready: curl missing"; exit 1; }
command -v jq >/dev/null || { echo "t_run_cluster_ready: jq missing"; exit 1; }

sk_write_cluster_conf 3
{
  echo
  echo "# as etc/cluster.conf"
  echo "controller.quorum.fetch.timeout.ms=600"
  echo "controller.quorum.election.timeout.ms=250"
  # run-cluster.sh passes no --set: lib.sh's SK_NET_ARGS go in the file
  [ -z "${SKIFF_TEST_NET_THREADS:-}" ] || echo "num.network.threads=$SKIFF_TEST_NET_THREADS"
} > "$SK_TMP/timings.conf"
# top-level keys must come before the first [node.N] section
sed -i "/^listener.security.protocol.map=/r $SK_TMP/timings.conf" "$SK_TMP/cluster.conf"
CONF=$SK_TMP/cluster.conf
OUT=$SK_TMP/run-cluster.out
READY_WAIT_S=75   # run-cluster's own bound is 60 s

# pids of the skiff processes started with this test's config (the temp
# path is unique to this run), from /proc: never by process name
node_pids() {
  local f pid
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}; pid=${pid%/cmdline}
    tr '\0' ' ' 2>/dev/null < "$f" | grep -qF -- "--config $CONF " || continue
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$SK_BIN/skiff")" ] && echo "$pid"
  done
}

RC_PID=
# stops run-cluster by pid (SIGTERM: it stops its nodes), waits at most
# 20 s, then SIGKILLs whatever node of this test is left
stop_run_cluster() {
  local t=0 p
  if [ -n "$RC_PID" ]; then
    kill -TERM "$RC_PID" 2>/dev/null
    while kill -0 "$RC_PID" 2>/dev/null && [ "$t" -lt 200 ]; do sleep 0.1; t=$((t + 1)); done
    kill -KILL "$RC_PID" 2>/dev/null
    wait "$RC_PID" 2>/dev/null
    RC_PID=
  fi
  for p in $(node_pids); do kill -KILL "$p" 2>/dev/null; done
}
cleanup() {
  stop_run_cluster
  [ "${SK_FAILS:-0}" -eq 0 ] || { echo "---- run-cluster output (last 60 lines)"; tail -n 60 "$OUT"; }
  sk_cleanup
}
trap cleanup EXIT

sk_log "run-cluster.sh with 3 nodes: $SK_BOOTSTRAP"
SKIFF_BIN=$SK_BIN/skiff bash "$SK_ROOT/etc/run-cluster.sh" "$CONF" > "$OUT" 2>&1 &
RC_PID=$!

t0=$SECONDS
until grep -q '^skiff: cluster ready: ' "$OUT"; do
  kill -0 "$RC_PID" 2>/dev/null || { SK_FAILS=1; sk_fail "run-cluster.sh exited before the ready line"; }
  [ $((SECONDS - t0)) -lt "$READY_WAIT_S" ] || { SK_FAILS=1; sk_fail "no ready line within $READY_WAIT_S s"; }
  sleep 0.05
done
ready_s=$((SECONDS - t0))

# at once, one attempt: a refusal here is what the line exists to prevent
SKIFF_BROKERS=$SK_BOOTSTRAP timeout 30 "$SK_BIN/skiffctl" \
  topic create ready-rf3 -p 6 -r 3 > "$SK_TMP/create.out" 2>&1
rc=$?
sk_check "RF 3 topic created right after the ready line (exit $rc: $(tr '\n' ' ' < "$SK_TMP/create.out"))" test "$rc" = 0
sk_log "ready after ${ready_s} s: $(grep '^skiff: cluster ready: ' "$OUT")"

line=$(grep '^skiff: cluster ready: ' "$OUT")
sk_check "exactly one ready line" test "$(grep -c '^skiff: cluster ready: ' "$OUT")" = 1
want_admin=""
for i in 1 2 3; do want_admin+=" http://127.0.0.1:${SK_ADMIN_PORT[i]}"; done
sk_check "ready line lists the 3 bootstrap addresses ($SK_BOOTSTRAP)" \
  test "$(sed -n 's/^skiff: cluster ready: bootstrap \([^ ]*\)  admin .*/\1/p' <<<"$line")" = "$SK_BOOTSTRAP"
sk_check "ready line lists the 3 admin URLs ($want_admin)" \
  test "$(sed -n 's/^skiff: cluster ready: bootstrap [^ ]*  admin\(.*\)$/\1/p' <<<"$line")" = "$want_admin"
sk_check "3 nodes of this test running" test "$(node_pids | wc -l)" = 3

# the topic as every node sees it: 6 partitions of 3 replicas (bounded wait
# for the metadata to reach the followers)
layout() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}/v1/topics/ready-rf3" |
  jq -c '[(.partitions | length), ([.partitions[] | (.replicas | length)] | unique)]' 2>/dev/null; }
for i in 1 2 3; do
  t0=$SECONDS
  until [ "$(layout "$i")" = '[6,[3]]' ] || [ $((SECONDS - t0)) -ge 10 ]; do sleep 0.2; done
  sk_check "node $i: ready-rf3 has 6 partitions of 3 replicas ($(layout "$i"))" test "$(layout "$i")" = '[6,[3]]'
done

# SIGTERM to run-cluster stops every node
pid=$RC_PID
kill -TERM "$pid"
t0=$SECONDS
while kill -0 "$pid" 2>/dev/null && [ $((SECONDS - t0)) -lt 20 ]; do sleep 0.1; done
sk_check "run-cluster.sh exits within 20 s of SIGTERM" bash -c "! kill -0 $pid 2>/dev/null"
wait "$pid" 2>/dev/null
RC_PID=
sk_check "no node of this test left after run-cluster stopped ($(node_pids | tr '\n' ' '))" test -z "$(node_pids)"
sk_summary t_run_cluster_ready
