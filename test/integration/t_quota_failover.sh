#!/usr/bin/env bash
# Client quotas across a controller failover and a full restart (issue 18).
# Three nodes: quotas set through a node that is not the controller
# (AlterClientQuotas forwarded), seen by DescribeClientQuotas on every node;
# the controller is killed -9, a new one is elected, the old quotas are
# still listed and a new AlterClientQuotas commits through the new
# controller; after a full restart of all three, every node lists the same.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "t_quota_failover: jq missing"; exit 1; }

OPTS=(--set controller.quorum.fetch.timeout.ms=500 --set controller.quorum.election.timeout.ms=300
      --set broker.heartbeat.interval.ms=300 --set broker.session.timeout.ms=2500)
sk_start_cluster 3 "${OPTS[@]}"
adm() { curl -s --max-time 3 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
waitfor() {  # waitfor SECONDS command... (polls every 0.2 s)
  local t=0
  until "${@:2}" >/dev/null 2>&1; do sleep 0.2; t=$((t + 1)); [ "$t" -lt $(($1 * 5)) ] || return 1; done
}
healthy() { [ "$(adm "$1" /v1/health | jq -r .healthy)" = true ]; }
all_healthy() { healthy 1 && healthy 2 && healthy 3; }
waitfor 30 all_healthy || sk_fail "cluster not healthy within 30 s"
CTL() { local i=$1; shift; "$SK_BIN/skiffctl" quota "$@" -b "127.0.0.1:${SK_KAFKA_PORT[$i]}"; }
ctrl() { adm "$1" /v1/health | jq -r .controller_id; }

K=$(ctrl 1)
case $K in 1|2|3) ;; *) sk_fail "no controller id ($K)";; esac
O=$(( K % 3 + 1 ))   # a node that is not the controller: the Alter is forwarded
sk_log "controller $K; setting quotas through node $O"
sk_check "set (alice) through a non-controller" CTL $O set --user alice --producer-byte-rate 1048576 --consumer-byte-rate 2097152
sk_check "set (alice, app) through a non-controller" CTL $O set --user alice --client-id app --request-percentage 25
sk_check "set default user through a non-controller" CTL $O set --default --producer-byte-rate 524288
# the forwarding node answers once it fetched past the controller's answer,
# which can be a moment before it applies the commit (cluster/forward.c):
# wait for the four rows rather than read them at once
four_rows() { [ "$(CTL $O list | grep -c -E 'alice|<default>')" -eq 4 ]; }
sk_check "three entities (four keys) listed" waitfor 10 four_rows
ref=$(CTL $O list)
echo "$ref"
same_on() { [ "$(CTL "$1" list)" = "$ref" ]; }
for i in 1 2 3; do sk_check "node $i lists the same quotas" waitfor 10 same_on $i; done

sk_log "kill -9 the controller (node $K)"
sk_kill9_node "$K"
new_ctrl() { local c; c=$(ctrl "$O"); [ -n "$c" ] && [ "$c" != null ] && [ "$c" != "$K" ] && [ "$c" != -1 ]; }
sk_check "a new controller is elected" waitfor 20 new_ctrl
sk_log "new controller $(ctrl "$O")"
sk_check "quotas still listed after the failover" same_on "$O"
sk_check "a new quota commits through the new controller" waitfor 10 CTL $O set --client-id batch --consumer-byte-rate 65536
batch_row() { CTL $O list | grep -Eq '^- +batch +consumer_byte_rate +65536'; }
sk_check "the new quota is listed" waitfor 10 batch_row
ref=$(CTL $O list)

sk_log "full restart of all three nodes"
for i in 1 2 3; do [ "$i" = "$K" ] || sk_stop_node "$i"; done
for i in 1 2 3; do sk_start_node "$i" "${OPTS[@]}"; done
for i in 1 2 3; do sk_wait_port "${SK_KAFKA_PORT[i]}" 30 "${SK_NODE_PID[i]}" || sk_fail "node $i did not come back"; done
waitfor 30 all_healthy || sk_fail "cluster not healthy after the restart"
for i in 1 2 3; do sk_check "node $i lists the same quotas after the restart" waitfor 10 same_on $i; done

for i in 1 2 3; do sk_stop_node "$i"; done
sk_summary t_quota_failover
