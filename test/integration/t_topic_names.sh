#!/usr/bin/env bash
# Issue 16 finding 6: topic names from the wire follow Kafka's rule in
# CreateTopics, Metadata auto-create and Produce, and a name holding a NUL
# is refused, never cut at the NUL ("a\0b" used to create and write "a").
# Raw frames against one real node (clients/topic_names.py).
. "$(dirname "$0")/lib.sh"
NAME=t_topic_names

sk_start_cluster 1 --set auto.create.topics.enable=true
sk_check_lines < <(/usr/bin/python3 "$(dirname "$0")/clients/topic_names.py" "127.0.0.1:${SK_KAFKA_PORT[1]}" \
  2>"$SK_TMP/py.err")
sk_check "the NUL refusal is logged as such" grep -q "holds a NUL byte" "$SK_TMP/node-1.log"
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { tail -n 20 "$SK_TMP/py.err"; sk_dump_logs; }
sk_summary "$NAME"
