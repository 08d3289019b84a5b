#!/usr/bin/env bash
# confluent-kafka 2.12.1 from PyPI (librdkafka 2.12.1, KIP-848 consumer
# protocol), pinned, installed into a venv under build/ when PyPI is
# reachable (else one SKIP line): three group.protocol=consumer members on
# six partitions, and a classic and a consumer-protocol member on one group
# (the migration rules: refused while the other kind is active, taken over
# once empty, committed offsets kept) — clients/cgroup_confluent.py.
. "$(dirname "$0")/lib.sh"
NAME=t_cgroup_confluent
VENV=${SKIFF_CK_VENV:-$SK_ROOT/build/venv-ck}
if ! "$VENV/bin/python" -c 'import confluent_kafka as c; assert c.version() == "2.12.1"' 2>/dev/null; then
  rm -rf "$VENV"
  if ! { "$SK_PY" -m venv "$VENV" && timeout 120 "$VENV/bin/pip" install -q confluent-kafka==2.12.1; } >"$SK_TMP/pip.log" 2>&1; then
    echo "SKIP $NAME: confluent-kafka 2.12.1 not installable (PyPI unreachable?)"; tail -3 "$SK_TMP/pip.log"
    echo "$NAME: 0 passed, 0 failed (skipped)"; exit 0
  fi
fi
sk_start_cluster 1 --set group.consumer.heartbeat.interval.ms=500 --set group.initial.rebalance.delay.ms=0 \
  --set offsets.topic.num.partitions=3
B=127.0.0.1:${SK_KAFKA_PORT[1]}
for t in t6 m6; do SKIFF_BROKERS=$B "$SK_BIN/skiffctl" topic create $t -p 6 -r 1 >/dev/null || sk_fail "create $t"; done
seq 1 60 | sed 's/^/k&:v/' | SKIFF_BROKERS=$B "$SK_BIN/skiffctl" produce t6 -K : >/dev/null || sk_fail "produce t6"
seq 1 30 | sed 's/^/k&:v/' | SKIFF_BROKERS=$B "$SK_BIN/skiffctl" produce m6 -K : >/dev/null || sk_fail "produce m6"
PY=$SK_ROOT/test/integration/clients/cgroup_confluent.py
sk_check_lines < <(timeout 60 "$VENV/bin/python" "$PY" three "$B" t6 60 2>&1)
sk_check_lines < <(timeout 60 "$VENV/bin/python" "$PY" mix "$B" m6 2>&1)
sk_check "ran all checks" test "$((SK_PASS + SK_FAILS))" -ge 9
[ "$SK_FAILS" -eq 0 ] || sk_dump_logs
sk_summary "$NAME"
