#!/usr/bin/env bash
# Issue 17, confluent-kafka-python (Debian's, /usr/bin/python3) over SSL, SASL_PLAINTEXT and
# SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512: produce + consume for
# every combination; on SASL_SSL + SCRAM-SHA-512 also a consumer group of two
# members, admin calls (create / list / delete topic) and transactions (a
# committed and an aborted one, read_committed)
# (clients/sec_py_check.py).
# One node (sec_lib.sh); it stays ready throughout.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sec_lib.sh"
# group.initial.rebalance.delay.ms=0: the group checks join fresh groups, and
# the 3 s default wait for more members would pad each one (not under test)
sec_start --set group.initial.rebalance.delay.ms=0
CHK="$SK_ROOT/test/integration/clients/sec_py_check.py"
CA=$SEC_CERTS/ca.crt

client=confluent
run() { sec_lines "$client $1 $2 $3" timeout 120 "$SK_PY" "$CHK" "$client" "127.0.0.1:$(sec_port "$1")" "$1" "$2" "$CA" "$3"; }
run SSL - pc
for mech in PLAIN SCRAM-SHA-256; do
  run SASL_PLAINTEXT "$mech" pc
  run SASL_SSL "$mech" pc
done
run SASL_PLAINTEXT SCRAM-SHA-512 pc
run SASL_SSL SCRAM-SHA-512 pc,group,admin,txn
sk_check "node ready after confluent" sec_ready
sk_stop_node 1
sk_summary t_sec_confluent
