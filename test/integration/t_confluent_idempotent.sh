#!/usr/bin/env bash
# confluent-kafka idempotent producer (acks=all, retries) through a proxy that
# loses some Produce answers after the broker has appended the batch, so the
# client retries batches the log already holds. Each message must be in the
# log exactly once, in order, at the offset its acknowledgement named.
# Control: the same through the proxy without idempotence must show
# duplicates (proves the retries really were forced and would be seen).
. "$(dirname "$0")/lib.sh"
NAME=t_confluent_idempotent
HERE=$(cd "$(dirname "$0")" && pwd)
N=20000; PARTS=3

PROXY_PORT=$(sk_free_port)
# every client (bootstrap and metadata) goes through the proxy
sk_start_cluster 1 --set num.partitions=$PARTS --set auto.create.topics.enable=true \
  --set advertised.listeners=PLAINTEXT://127.0.0.1:$PROXY_PORT
UP=127.0.0.1:${SK_KAFKA_PORT[1]}

sk_check_lines < <(timeout 200 "$SK_PY" "$HERE/clients/confluent_idem.py" \
  "$PROXY_PORT" "$UP" idem "$PARTS" "$N" 1 2>"$SK_TMP/idem.err")
sk_check "idempotent run printed all its checks" test $((SK_PASS + SK_FAILS)) -ge 11

# The control reuses the proxy port the node advertises (the first run has
# released it) with a topic of its own.
dups=$(timeout 200 "$SK_PY" "$HERE/clients/confluent_idem.py" \
  "$PROXY_PORT" "$UP" plain "$PARTS" 5000 0 2>"$SK_TMP/plain.err" | sed -n 's/^DUPLICATES //p')
sk_check "control: forced retries without idempotence do duplicate (got ${dups:-none})" \
  test "${dups:-0}" -gt 0
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { tail -n 20 "$SK_TMP/idem.err" "$SK_TMP/plain.err"; sk_dump_logs; }
sk_summary "$NAME"
