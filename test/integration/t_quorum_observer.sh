#!/usr/bin/env bash
# A broker-only node (an observer of the metadata quorum) added to a running
# 3-voter cluster whose log prefix is already gone behind snapshots catches
# up by FetchSnapshot: it loads the image, registers, and answers Metadata
# and the admin port like the voters.
. "$(dirname "$0")/lib.sh"
QM="$SK_PY $SK_ROOT/test/integration/quorum_meta.py"
command -v jq >/dev/null || { echo "t_quorum_observer: jq missing"; exit 1; }

sk_write_cluster_conf 4
conf=$SK_TMP/cluster.conf
grep -q '^process.roles' "$conf" ||
  sed -i 's/^cluster.id=.*/&\nprocess.roles=broker,controller\ncontroller.listener.names=CONTROLLER\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT/' "$conf"
# node 4: broker only, not a voter, no controller listener
sed -i "s/,4@127.0.0.1:${SK_CTRL_PORT[4]}//" "$conf"
sed -i "s#^listeners=PLAINTEXT://127.0.0.1:${SK_KAFKA_PORT[4]},CONTROLLER://127.0.0.1:${SK_CTRL_PORT[4]}#listeners=PLAINTEXT://127.0.0.1:${SK_KAFKA_PORT[4]}\nprocess.roles=broker#" "$conf"
OPTS=(--set metadata.log.max.record.bytes.between.snapshots=200 --set broker.heartbeat.interval.ms=500)
for i in 1 2 3; do sk_start_node "$i" "${OPTS[@]}"; done
for i in 1 2 3; do sk_wait_port "${SK_ADMIN_PORT[i]}" 30 || sk_fail "node $i admin port not up"; done
adm() { curl -s --max-time 2 "127.0.0.1:${SK_ADMIN_PORT[$1]}$2"; }
boot="127.0.0.1:${SK_KAFKA_PORT[1]},127.0.0.1:${SK_KAFKA_PORT[2]},127.0.0.1:${SK_KAFKA_PORT[3]}"
for t in one two three four; do sk_check "create $t" $QM create "$boot" "$t" 2 3; done
sleep 1
sk_check "voters took snapshots" grep -q "metadata snapshot at offset" "$SK_TMP/node-1.log"

sk_start_node 4 "${OPTS[@]}"
sk_wait_port "${SK_ADMIN_PORT[4]}" 30 || sk_fail "node 4 admin port not up"
topics_of() { adm "$1" /v1/topics | jq -c '[.topics[].name] | sort'; }
same() { [ "$(topics_of 4)" = "$(topics_of 1)" ] && [ "$(adm 1 /v1/cluster | jq '[.brokers[] | select(.fenced == false)] | length')" = 4 ]; }
t=0; while ! same; do sleep 0.2; t=$((t + 1)); [ "$t" -lt 100 ] || break; done
sk_check "observer has every topic: $(topics_of 4)" test "$(topics_of 4)" = "$(topics_of 1)"
sk_check "observer loaded a snapshot" grep -q "installed metadata snapshot" "$SK_TMP/node-4.log"
sk_check "observer registered and unfenced (4 live brokers)" \
  test "$(adm 1 /v1/cluster | jq '[.brokers[] | select(.fenced == false)] | length')" = 4
sk_check "observer is not a voter" test "$(adm 4 /v1/quorum | jq -r .role)" != leader
L=$(adm 1 /v1/quorum | jq -r .leader_id)
sk_check "leader lists node 4 as an observer" \
  bash -c "curl -s 127.0.0.1:${SK_ADMIN_PORT[$L]}/v1/quorum | jq -e '[.observers[].node_id] | index(4) != null' >/dev/null"
m4=$($QM metadata "127.0.0.1:${SK_KAFKA_PORT[4]}")
m1=$($QM metadata "127.0.0.1:${SK_KAFKA_PORT[1]}")
sk_check "observer's Metadata answer equals a voter's ($m4)" test "$m4" = "$m1"
# a voter restarted from its snapshot file + the log after it
sk_stop_node 2
sk_start_node 2 "${OPTS[@]}"
sk_wait_port "${SK_ADMIN_PORT[2]}" 30 || sk_fail "node 2 did not restart"
t=0; while [ "$(topics_of 2)" != "$(topics_of 1)" ]; do sleep 0.2; t=$((t + 1)); [ "$t" -lt 100 ] || break; done
sk_check "voter restarted from its snapshot has every topic: $(topics_of 2)" test "$(topics_of 2)" = "$(topics_of 1)"
sk_check "a snapshot file was there to restart from" \
  bash -c "ls $SK_TMP/data/node-2/__cluster_metadata-0/*.checkpoint >/dev/null 2>&1"

sk_summary t_quorum_observer
