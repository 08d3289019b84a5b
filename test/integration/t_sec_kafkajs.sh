#!/usr/bin/env bash
# Issue 17, kafkajs 2.2.4 (test/js) over SSL, SASL_PLAINTEXT and SASL_SSL with
# PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512: produce + consume for every
# combination; on SASL_SSL + SCRAM-SHA-512 also a consumer group, admin calls
# and transactions (clients/sec_kafkajs.js). One node (sec_lib.sh).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sec_lib.sh"
JS_MODULES=$SK_ROOT/test/js/node_modules
[ -d "$JS_MODULES/kafkajs" ] || { echo "t_sec_kafkajs: kafkajs missing (etc/install-deps.sh runs npm ci in test/js)"; exit 1; }
# group.initial.rebalance.delay.ms=0: every check joins a fresh group, and
# the 3 s default wait for more members would pad each one (not under test)
sec_start --set group.initial.rebalance.delay.ms=0
CHK="$SK_ROOT/test/integration/clients/sec_kafkajs.js"
run() { sec_lines "kafkajs $1 $2 $3" env NODE_PATH="$JS_MODULES" timeout 150 node "$CHK" "127.0.0.1:$(sec_port "$1")" "$1" "$2" "$SEC_CERTS/ca.crt" "$3"; }
run SSL - pc
for mech in PLAIN SCRAM-SHA-256; do
  run SASL_PLAINTEXT "$mech" pc
  run SASL_SSL "$mech" pc
done
run SASL_PLAINTEXT SCRAM-SHA-512 pc
run SASL_SSL SCRAM-SHA-512 pc,group,admin,txn
sk_check "node ready after kafkajs" sec_ready
sk_stop_node 1
sk_summary t_sec_kafkajs
