#!/usr/bin/env bash
# SCRAM credentials in a 3-node cluster (issue 17): every node formatted
# with the same `skiff format --add-scram`; the bootstrap credential is
# appended once, by whichever node is the first controller; a user created
# through a node that is not the controller (AlterUserScramCredentials is
# forwarded) logs in on every node; the controller is killed and the
# credentials still work on the others; a user created under the new
# controller reaches the old one when it restarts.
# Clients use the SASL_PLAINTEXT listener; nodes talk over a PLAINTEXT
# INTERNAL listener and a PLAINTEXT controller listener (SASL between
# nodes is the tls branch's outgoing side).
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "t_sasl_cluster: jq missing"; exit 1; }
HERE=$(cd "$(dirname "$0")" && pwd)
CHK="$SK_PY $HERE/clients/sasl_check.py"

voters=""
for i in 1 2 3; do
  SK_KAFKA_PORT[i]=$(sk_free_port); SASLP[i]=$(sk_free_port); SK_CTRL_PORT[i]=$(sk_free_port); SK_ADMIN_PORT[i]=$(sk_free_port)
  voters+="${voters:+,}$i@127.0.0.1:${SK_CTRL_PORT[i]}"
done
{
  echo "cluster.id=skiff-sasl-cluster"
  echo "process.roles=broker,controller"
  echo "controller.quorum.voters=$voters"
  echo "controller.listener.names=CONTROLLER"
  echo "listener.security.protocol.map=INTERNAL:PLAINTEXT,CLIENT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"
  echo "inter.broker.listener.name=INTERNAL"
  echo "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512"
  echo "super.users=User:admin"
  for i in 1 2 3; do
    echo "[node.$i]"
    echo "listeners=INTERNAL://127.0.0.1:${SK_KAFKA_PORT[i]},CLIENT://127.0.0.1:${SASLP[i]},CONTROLLER://127.0.0.1:${SK_CTRL_PORT[i]}"
    echo "admin.listener=127.0.0.1:${SK_ADMIN_PORT[i]}"
    echo "log.dirs=$SK_TMP/data/node-$i"
  done
} > "$SK_TMP/cluster.conf"
for i in 1 2 3; do
  "$SK_BIN/skiff" format --config "$SK_TMP/cluster.conf" --node "$i" \
    --add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]' 2>>"$SK_TMP/format.log" ||
    sk_fail "format node $i"
done
OPTS=(--set controller.quorum.fetch.timeout.ms=500 --set controller.quorum.election.timeout.ms=200
      --set broker.heartbeat.interval.ms=500 --set broker.session.timeout.ms=3000)
for i in 1 2 3; do sk_start_node "$i" "${OPTS[@]}"; done
for i in 1 2 3; do sk_wait_port "${SASLP[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i SASL port not up"; done

adm() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
controller() {  # controller NODES... -> the controller id all of them name
  local t=0 c
  while [ "$t" -lt 100 ]; do
    c=$(adm "$1" /v1/cluster | jq -r '.controller_id' 2>/dev/null)
    if [ -n "$c" ] && [ "$c" != -1 ] && [ "$c" != null ]; then echo "$c"; return 0; fi
    sleep 0.2; t=$((t + 1))
  done
  return 1
}
login_all() {  # login_all USER PW NODES... -> every node accepts (waits up to 10 s each)
  local u=$1 p=$2 i t; shift 2
  for i in "$@"; do
    t=0
    until $CHK "127.0.0.1:${SASLP[i]}" login "$u" "$p"; do
      sleep 0.2; t=$((t + 1)); [ "$t" -lt 50 ] || return 1
    done
  done
}
L=$(controller 1) || sk_fail "no controller"
sk_log "controller: node $L"
ok=0; for i in 1 2 3; do
  t=0; until $CHK "127.0.0.1:${SASLP[i]}" alter probe-$i probe-pw >/dev/null 2>&1; do sleep 0.3; t=$((t + 1)); [ "$t" -lt 30 ] || break; done
  [ "$t" -lt 30 ] && ok=$((ok + 1))
done
sk_check "admin (bootstrap) authenticates and alters through every node" test "$ok" -eq 3
sk_check "bootstrap appended exactly once in the cluster" \
  test "$(cat "$SK_TMP"/node-*.log | grep -c 'appended 1 bootstrap SCRAM')" -eq 1
F=$(( L % 3 + 1 ))   # a node that is not the controller: Alter is forwarded
sk_check_lines < <($CHK "127.0.0.1:${SASLP[F]}" alter carol carol-pw 2>&1)
sk_check "carol logs in on every node" login_all carol carol-pw 1 2 3
sk_log "kill -9 the controller (node $L)"
sk_kill9_node "$L"
others=(); for i in 1 2 3; do [ "$i" = "$L" ] || others+=("$i"); done
sk_check "carol still logs in on the others" login_all carol carol-pw "${others[@]}"
L2=""; t=0
while [ "$t" -lt 50 ]; do
  L2=$(adm "${others[0]}" /v1/cluster | jq -r '.controller_id' 2>/dev/null)
  [ -n "$L2" ] && [ "$L2" != -1 ] && [ "$L2" != "$L" ] && [ "$L2" != null ] && break
  sleep 0.2; t=$((t + 1))
done
sk_check "a new controller ($L2)" test -n "$L2" -a "$L2" != "$L" -a "$L2" != -1
sk_check_lines < <($CHK "127.0.0.1:${SASLP[${others[1]}]}" alter dave dave-pw 2>&1)
sk_check "dave logs in on the survivors" login_all dave dave-pw "${others[@]}"
sk_start_node "$L" "${OPTS[@]}"
sk_wait_port "${SASLP[L]}" 30 "${SK_NODE_PID[L]}" || sk_fail "node $L not back"
sk_check "the restarted node knows carol and dave" login_all dave dave-pw "$L"
sk_check "no second bootstrap append after failover" \
  test "$(cat "$SK_TMP"/node-*.log | grep -c 'appended 1 bootstrap SCRAM')" -eq 1
sk_summary t_sasl_cluster
