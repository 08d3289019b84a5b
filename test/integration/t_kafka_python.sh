#!/usr/bin/env bash
# kafka-python (python3-kafka 2.0.2) against one node: KafkaAdminClient
# (create / describe / delete topics, error codes, describe / alter configs,
# create partitions), KafkaProducer (gzip, headers, timestamps, acks=all),
# KafkaConsumer (seek_to_beginning, seek, offsets_for_times, watermarks).
. "$(dirname "$0")/lib.sh"
NAME=t_kafka_python
HERE=$(cd "$(dirname "$0")" && pwd)

sk_start_cluster 1
sk_check_lines < <(timeout 180 "$SK_PY" "$HERE/clients/kafka_python_check.py" "$SK_BOOTSTRAP" 2>"$SK_TMP/kp.err")
sk_check "kafka_python_check ran all its checks" test $((SK_PASS + SK_FAILS)) -ge 28
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { tail -n 30 "$SK_TMP/kp.err"; sk_dump_logs; }
sk_summary "$NAME"
