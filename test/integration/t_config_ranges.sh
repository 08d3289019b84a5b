#!/usr/bin/env bash
# Issue 16 finding 7: config values are range-checked as Kafka does, and
# capped where Kafka's range is open but a value would do damage here
# (segment.index.bytes / log.index.size.max.bytes <= 64 MiB,
# max.message.bytes / message.max.bytes <= 1 GiB): the config file and
# --set refuse at start with the key and range; CreateTopics, AlterConfigs
# and IncrementalAlterConfigs answer INVALID_CONFIG naming key and range
# (clients/config_ranges.py, confluent-kafka + a raw frame).
. "$(dirname "$0")/lib.sh"
NAME=t_config_ranges

sk_write_cluster_conf 1
# start-up refusals: exit 2, one line naming the key and the range
cp "$SK_TMP/cluster.conf" "$SK_TMP/bad.conf"
echo "log.index.size.max.bytes=2147483647" >> "$SK_TMP/bad.conf"
timeout 15 "$SK_BIN/skiff" --config "$SK_TMP/bad.conf" --node 1 > "$SK_TMP/bad.out" 2>&1
rc=$?
sk_check "config file log.index.size.max.bytes=2147483647 refused (exit $rc)" test "$rc" -eq 2
sk_check "file message names key, line and cap" \
  grep -q "bad.conf:[0-9]*: log.index.size.max.bytes=2147483647: expected an integer in \[4, 67108864\]" "$SK_TMP/bad.out"
timeout 15 "$SK_BIN/skiff" --config "$SK_TMP/cluster.conf" --node 1 --set message.max.bytes=2147483647 > "$SK_TMP/set.out" 2>&1
rc=$?
sk_check "--set message.max.bytes=2147483647 refused (exit $rc)" test "$rc" -eq 2
sk_check "--set message names key and cap" \
  grep -q -- "--set message.max.bytes=2147483647: expected an integer in \[0, 1073741824\] (skiff caps it" "$SK_TMP/set.out"
timeout 15 "$SK_BIN/skiff" --config "$SK_TMP/cluster.conf" --node 1 --set num.recovery.threads.per.data.dir=0 > "$SK_TMP/st.out" 2>&1
rc=$?
sk_check "--set of a stored key below Kafka's range refused (exit $rc)" test "$rc" -eq 2
grep -q "num.recovery.threads.per.data.dir" "$SK_TMP/st.out" || cat "$SK_TMP/st.out"

sk_start_node 1
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node not up"
sk_check_lines < <(/usr/bin/python3 "$(dirname "$0")/clients/config_ranges.py" "127.0.0.1:${SK_KAFKA_PORT[1]}" 1 \
  2>"$SK_TMP/py.err")
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { tail -n 20 "$SK_TMP/py.err"; sk_dump_logs; }
sk_summary "$NAME"
