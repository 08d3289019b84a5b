#!/usr/bin/env bash
# Issue 16 finding 4: one CreateTopics of 15,000 partitions exhausted file
# descriptors (accept, produce and fetch failed). A node started with a soft
# open-file limit of 256 under a hard one of 1024 raises the soft limit to
# 1024 and derives its replicas-per-node limit (384, controller.h); creation
# beyond it is POLICY_VIOLATION naming the limit, and the node keeps
# accepting connections, producing and fetching (clients/fd_limit.py).
. "$(dirname "$0")/lib.sh"
NAME=t_fd_limit
LIMIT=384

sk_write_cluster_conf 1
(
  ulimit -Sn 256 && ulimit -Hn 1024 || exit 97
  exec "$SK_BIN/skiff" --config "$SK_TMP/cluster.conf" --node 1 "${SK_NET_ARGS[@]}"
) >> "$SK_TMP/node-1.log" 2>&1 &
SK_NODE_PID[1]=$!
SK_PIDS+=("$!")
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 "${SK_NODE_PID[1]}" || sk_fail "node not up"
pid=${SK_NODE_PID[1]}
sk_check "soft open-file limit raised to the hard one" \
  grep -Eq "^Max open files +1024 +1024" "/proc/$pid/limits"
sk_check "raise logged" grep -q "open-file limit raised from 256 to the hard limit 1024" "$SK_TMP/node-1.log"
sk_check "limit logged" grep -q "open-file limit 1024: at most $LIMIT partition replicas per node" "$SK_TMP/node-1.log"
sk_check_lines < <(/usr/bin/python3 "$(dirname "$0")/clients/fd_limit.py" "127.0.0.1:${SK_KAFKA_PORT[1]}" "$LIMIT" \
  2>"$SK_TMP/py.err")
fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
sk_log "node holds $fds descriptors of 1024"
sk_check "descriptors stay below the limit ($fds)" test "$fds" -lt 1000
sk_check "no accept or open failure logged" bash -c "! grep -Eqi 'too many open files|EMFILE' '$SK_TMP/node-1.log'"
sk_check "node still running" kill -0 "$pid"
[ "$SK_FAILS" -eq 0 ] || { tail -n 20 "$SK_TMP/py.err"; sk_dump_logs; }
sk_summary "$NAME"
