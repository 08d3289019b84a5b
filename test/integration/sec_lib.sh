#!/usr/bin/env bash
# Shared set-up of the issue 17 cross-client tests (t_sec_*.sh): one node
# with a listener of every security protocol, certificates from
# etc/gen-certs.sh, PLAIN users in the jaas configs and SCRAM users made by
# `skiff format --add-scram` before the first start. Source after lib.sh:
#   . "$(dirname "$0")/lib.sh"; . "$(dirname "$0")/sec_lib.sh"; sec_start
#
# Ports after sec_start: SEC_PORT[PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL|LIMITED]
# (LIMITED: SASL_PLAINTEXT with PLAIN only, for "mechanism not enabled"),
# SEC_ADMIN (plain HTTP admin port, for /readyz), SEC_CERTS (PEM dir).
# Users: alice / alice-secret for PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.
# The SSL listener asks for a client certificate (requested): a client
# without one is anonymous, one with an untrusted or expired one is refused.

SEC_USER=alice
SEC_PASSWORD=alice-secret
declare -A SEC_PORT

sec_write_conf() {
  local l lst="" adv="" name
  SEC_CERTS=$SK_TMP/certs
  bash "$SK_ROOT/etc/gen-certs.sh" "$SEC_CERTS" >/dev/null || sk_fail "etc/gen-certs.sh failed"
  for name in PLAINTEXT SSL SASL_PLAINTEXT SASL_SSL LIMITED; do
    SEC_PORT[$name]=$(sk_free_port)
    l="$name://127.0.0.1:${SEC_PORT[$name]}"
    lst+="${lst:+,}$l"; adv+="${adv:+,}$l"
  done
  SEC_CTRL=$(sk_free_port); SEC_ADMIN=$(sk_free_port)
  SK_ADMIN_PORT[1]=$SEC_ADMIN; SK_KAFKA_PORT[1]=${SEC_PORT[PLAINTEXT]}
  local jaas='org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="bob-secret";'
  cat > "$SK_TMP/cluster.conf" <<CONF
# written by test/integration/sec_lib.sh
node.id=1
process.roles=broker,controller
cluster.id=skiff-sec-test
listeners=$lst,CONTROLLER://127.0.0.1:$SEC_CTRL
advertised.listeners=$adv
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,LIMITED:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
controller.quorum.voters=1@127.0.0.1:$SEC_CTRL
admin.listener=127.0.0.1:$SEC_ADMIN
log.dirs=$SK_TMP/data/node-1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
ssl.keystore.type=PEM
ssl.keystore.location=$SEC_CERTS/node-1.pem
ssl.truststore.type=PEM
ssl.truststore.location=$SEC_CERTS/ca.crt
listener.name.ssl.ssl.client.auth=requested
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.plain.sasl.jaas.config=$jaas
listener.name.sasl_ssl.plain.sasl.jaas.config=$jaas
listener.name.limited.sasl.enabled.mechanisms=PLAIN
listener.name.limited.plain.sasl.jaas.config=$jaas
connection.failed.authentication.delay.ms=100
CONF
}

# sec_props PROTO MECH -> librdkafka properties, one "key=value" per line
# (MECH "-" for the protocols without SASL)
sec_props() {
  local proto=$1 mech=$2
  echo "security.protocol=$proto"
  case $proto in SSL|SASL_SSL) echo "ssl.ca.location=$SEC_CERTS/ca.crt" ;; esac
  case $proto in SASL_*)
    echo "sasl.mechanisms=$mech"; echo "sasl.username=$SEC_USER"; echo "sasl.password=$SEC_PASSWORD" ;;
  esac
}

# sec_port PROTO -> the listener port of that protocol
sec_port() { echo "${SEC_PORT[$1]}"; }

sec_ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:$SEC_ADMIN/readyz")" = 200 ]; }

# sec_kcat PROTO MECH kcat-args... (-b is added)
sec_kcat() {
  local proto=$1 mech=$2 p args=(); shift 2
  while IFS= read -r p; do args+=(-X "$p"); done < <(sec_props "$proto" "$mech")
  kcat -b "127.0.0.1:$(sec_port "$proto")" "${args[@]}" "$@"
}

# sec_start [--set k=v ...] -> config, format, start, wait until SCRAM works;
# extra arguments go to the node's command line (sk_start_node)
sec_start() {
  sec_write_conf
  "$SK_BIN/skiff" format --config "$SK_TMP/cluster.conf" \
    --add-scram "SCRAM-SHA-256=[name=alice,password=alice-secret]" \
    --add-scram "SCRAM-SHA-512=[name=alice,password=alice-secret]" > "$SK_TMP/format.log" 2>&1 ||
    { cat "$SK_TMP/format.log"; sk_fail "skiff format --add-scram failed"; }
  sk_start_node 1 "$@"
  sk_wait_port "${SEC_PORT[SASL_SSL]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node did not open its SASL_SSL port"
  local t=0
  until sec_ready; do sleep 0.2; t=$((t + 1)); [ $t -lt 150 ] || sk_fail "node not ready in 30 s"; done
  # the SCRAM users are committed by the first controller after start
  t=0
  until sec_kcat SASL_PLAINTEXT SCRAM-SHA-512 -L -m 5 >/dev/null 2>&1; do
    sleep 0.2; t=$((t + 1)); [ $t -lt 100 ] || sk_fail "SCRAM user alice not usable 20 s after start"
  done
}

# sec_lines WHAT command... -> runs a PASS/FAIL-line helper, counts its lines
# and checks it exited 0 (a helper that dies before printing fails too)
sec_lines() {
  local what=$1 rc; shift
  "$@" > "$SK_TMP/lines.out" 2> "$SK_TMP/lines.err"
  rc=$?
  sk_check_lines < "$SK_TMP/lines.out"
  [ "$rc" -eq 0 ] || tail -n 5 "$SK_TMP/lines.err"
  sk_check "$what: exit 0 (got $rc)" test "$rc" -eq 0
}
