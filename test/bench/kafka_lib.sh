#!/usr/bin/env bash
# shellcheck disable=SC2034  # the KF_* results are read by the scripts that source this
# Apache Kafka (the JVM broker) for side-by-side benchmarks: format and start
# N KRaft nodes (each a combined broker+controller, static voters) on free
# loopback ports with data under $SK_TMP, stop them by pid. Source it after
# test/integration/lib.sh (sk_free_port, $SK_TMP, $SK_PIDS: lib.sh's exit
# trap kills every node started here, pass or fail).
#
# kf_prepare            -> 0 and KF_CP set (the classpath), or 1 with the
#                          reason in KF_WHY (jars not fetched, no java)
# kf_start_cluster N    -> KF_NODE_PID[i], KF_PORT[i] (i = 1..N), KF_BOOTSTRAP;
#                          returns 1 with KF_WHY when a node did not come up
# kf_stop_cluster       -> SIGTERM every node, SIGKILL what is left after 15 s
#
# Settings are Kafka's defaults, except what a cluster of fewer than three
# nodes needs (internal topics' replication factor 1) and the listeners. The
# JVM gets what bin/kafka-server-start.sh gives it by default (1 GB heap, G1
# with its pause goal): that is how a default install runs.
# env: JAVA (java on PATH: 17 is enough for the 4.x server), SKIFF_KAFKA_DIR
KF_JVM_OPTS=(-Xmx1G -Xms1G -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20
  -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent
  -XX:MaxInlineLevel=15 -Djava.awt.headless=true)
KF_JAVA=${JAVA:-java}
KF_NODE_PID=(); KF_PORT=(); KF_BOOTSTRAP=; KF_WHY=; KF_CP=

kf_prepare() {
  local lib
  command -v "$KF_JAVA" >/dev/null || { KF_WHY="no java ($KF_JAVA)"; return 1; }
  lib=$(bash "$SK_ROOT/test/bench/fetch-kafka-broker.sh" 2>"$SK_TMP/kafka-fetch.err") || {
    KF_WHY="fetch-kafka-broker.sh failed: $(tr '\n' ' ' <"$SK_TMP/kafka-fetch.err" | cut -c 1-300)"
    return 1
  }
  KF_CP=$(find "$lib" -maxdepth 1 -name '*.jar' | sort | tr '\n' ':')
  KF_VERSION=$(find "$lib" -maxdepth 1 -name 'kafka_2.13-*.jar' -printf '%f\n' | sed 's/^kafka_2.13-//; s/\.jar$//')
  # Warnings and the start line only: the broker's INFO logging would cost
  # the JVM CPU that skiff's quieter log does not.
  cat >"$SK_TMP/kafka-log4j2.properties" <<'EOF'
status = error
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.out.ref = OUT
logger.start.name = kafka.server.KafkaRaftServer
logger.start.level = info
EOF
}

# kf_write_conf N I CTRLVOTERS -> $SK_TMP/kafka/node-I/server.properties
kf_write_conf() {
  local n=$1 i=$2 voters=$3 d=$SK_TMP/kafka/node-$2
  mkdir -p "$d"
  {
    echo "process.roles=broker,controller"
    echo "node.id=$i"
    echo "controller.quorum.voters=$voters"
    echo "listeners=PLAINTEXT://127.0.0.1:${KF_PORT[i]},CONTROLLER://127.0.0.1:${KF_CTRL_PORT[i]}"
    echo "advertised.listeners=PLAINTEXT://127.0.0.1:${KF_PORT[i]}"
    echo "controller.listener.names=CONTROLLER"
    echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    echo "log.dirs=$d/data"
    if [ "$n" -lt 3 ]; then
      # Kafka's defaults are 3 for these; a smaller cluster could not create
      # its internal topics (what Kafka's own single-node example sets).
      echo "offsets.topic.replication.factor=$n"
      echo "transaction.state.log.replication.factor=$n"
      echo "transaction.state.log.min.isr=$n"
    fi
  } >"$d/server.properties"
}

kf_start_cluster() {
  local n=$1 i voters="" boot="" id t pids=()
  KF_NODE_PID=(); KF_PORT=(); KF_CTRL_PORT=()
  for ((i = 1; i <= n; i++)); do
    KF_PORT[i]=$(sk_free_port); KF_CTRL_PORT[i]=$(sk_free_port)
    voters+="${voters:+,}$i@127.0.0.1:${KF_CTRL_PORT[i]}"
    boot+="${boot:+,}127.0.0.1:${KF_PORT[i]}"
  done
  KF_BOOTSTRAP=$boot
  rm -rf "$SK_TMP/kafka"
  # A cluster id is 16 random bytes, base64url without padding (what
  # `kafka-storage.sh random-uuid` prints; one JVM start less).
  id=$("$SK_PY" -c 'import base64, uuid; print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))')
  for ((i = 1; i <= n; i++)); do kf_write_conf "$n" "$i" "$voters"; done
  # Formats run side by side: each is a JVM start of ~3 CPU s.
  for ((i = 1; i <= n; i++)); do
    "$KF_JAVA" -cp "$KF_CP" -Dlog4j2.configurationFile="$SK_TMP/kafka-log4j2.properties" \
      kafka.tools.StorageTool format -t "$id" -c "$SK_TMP/kafka/node-$i/server.properties" \
      >"$SK_TMP/kafka/node-$i/format.log" 2>&1 &
    pids+=("$!"); SK_PIDS+=("$!")
  done
  for ((i = 1; i <= n; i++)); do
    wait "${pids[i - 1]}" || { KF_WHY="format of node $i failed: $(tail -n 3 "$SK_TMP/kafka/node-$i/format.log")"; return 1; }
  done
  for ((i = 1; i <= n; i++)); do
    "$KF_JAVA" "${KF_JVM_OPTS[@]}" -Dlog4j2.configurationFile="$SK_TMP/kafka-log4j2.properties" \
      -cp "$KF_CP" kafka.Kafka "$SK_TMP/kafka/node-$i/server.properties" \
      >"$SK_TMP/kafka/node-$i/server.log" 2>&1 &
    KF_NODE_PID[i]=$!; SK_PIDS+=("$!")
  done
  # Up = its start line logged (after the broker registered with the quorum
  # and caught up with the metadata log), not just the port open.
  for ((i = 1; i <= n; i++)); do
    t=0
    until grep -q 'Kafka Server started' "$SK_TMP/kafka/node-$i/server.log"; do
      kill -0 "${KF_NODE_PID[i]}" 2>/dev/null || {
        KF_WHY="node $i exited: $(tail -n 5 "$SK_TMP/kafka/node-$i/server.log" | tr '\n' ' ' | cut -c 1-400)"; return 1; }
      sleep 0.5; t=$((t + 1))
      [ "$t" -lt 360 ] || { KF_WHY="node $i not started after 180 s"; return 1; }
    done
  done
}

kf_stop_cluster() {
  local i t=0 alive
  for i in "${!KF_NODE_PID[@]}"; do kill -TERM "${KF_NODE_PID[i]}" 2>/dev/null; done
  while :; do
    alive=0
    for i in "${!KF_NODE_PID[@]}"; do kill -0 "${KF_NODE_PID[i]}" 2>/dev/null && alive=1; done
    [ "$alive" = 1 ] || break
    sleep 0.2; t=$((t + 1))
    # The last voter of a combined cluster can wait for a quorum that is
    # gone; nothing of it is kept, so it need not finish cleanly.
    [ "$t" -lt 75 ] || { for i in "${!KF_NODE_PID[@]}"; do kill -KILL "${KF_NODE_PID[i]}" 2>/dev/null; done; }
  done
  for i in "${!KF_NODE_PID[@]}"; do wait "${KF_NODE_PID[i]}" 2>/dev/null; done
  KF_NODE_PID=()
} 2>/dev/null   # bash's "Killed" notice for a node that needed SIGKILL
