#!/usr/bin/env bash
# The Java client of Apache Kafka 4.x (kafka-clients, pinned in
# test/java/fetch-kafka-clients.sh) against one node: Admin createTopics,
# describeCluster, describeTopics (DescribeTopicPartitions) and
# describeFeatures (test/java/src/AdminDescribe.java): a new cluster
# finalizes metadata.version 25, group.version 1 (issue 20) and
# transaction.version 2 (as Kafka 4.0 does).
. "$(dirname "$0")/lib.sh"
NAME=t_java_admin
CP=$("$SK_ROOT/test/java/build.sh" 2>"$SK_TMP/java-build.err") ||
  { cat "$SK_TMP/java-build.err"; sk_fail "java harness not built (test/java/build.sh)"; }

sk_start_cluster 1
sk_check_lines < <(timeout 120 "$SK_ROOT/test/java/run.sh" AdminDescribe "$SK_BOOTSTRAP" jadm 4 \
  metadata.version=25 group.version=1 transaction.version=2 2>"$SK_TMP/java.err")
sk_check "AdminDescribe ran all its checks" test "$((SK_PASS + SK_FAILS))" -ge 6
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { tail -n 30 "$SK_TMP/java.err"; sk_dump_logs; }
sk_summary "$NAME"
