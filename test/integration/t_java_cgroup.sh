#!/usr/bin/env bash
# The Java client of Apache Kafka 4.x (kafka-clients, pinned in
# test/java/fetch-kafka-clients.sh) with group.protocol=consumer (KIP-848)
# in a group of three against one node (test/java/src/ConsumerGroup3.java):
# disjoint complete assignments, every record consumed once, commits with
# member epochs, Admin describeConsumerGroups (ConsumerGroupDescribe).
. "$(dirname "$0")/lib.sh"
NAME=t_java_cgroup
"$SK_ROOT/test/java/build.sh" >/dev/null 2>"$SK_TMP/java-build.err" ||
  { cat "$SK_TMP/java-build.err"; sk_fail "java harness not built (test/java/build.sh)"; }

sk_start_cluster 1 --set group.consumer.heartbeat.interval.ms=500 --set offsets.topic.num.partitions=3
sk_check_lines < <(timeout 150 "$SK_ROOT/test/java/run.sh" ConsumerGroup3 "$SK_BOOTSTRAP" jcg 6 60 jgroup \
  2>"$SK_TMP/java.err")
sk_check "ConsumerGroup3 ran all its checks" test "$((SK_PASS + SK_FAILS))" -ge 7
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { tail -n 30 "$SK_TMP/java.err"; sk_dump_logs; }
sk_summary "$NAME"
