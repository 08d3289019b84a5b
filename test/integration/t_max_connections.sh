#!/usr/bin/env bash
# max.connections is acted on, also when changed at run time: through
# confluent-kafka's AlterConfigs against a real node, a limit of 3 closes
# new connections beyond it at accept, and raising it serves them again.
# max.connections.per.ip likewise (2: 2 of 4 served); its override list is
# read at start only (AlterConfigs refuses it).
# num.io.threads is the worker pool's size, read at start: AlterConfigs
# refuses it, and a value above the pool's bound (64) is a config error.
. "$(dirname "$0")/lib.sh"
NAME=t_max_connections

sk_write_cluster_conf 1
cp "$SK_TMP/cluster.conf" "$SK_TMP/big.conf"
echo "num.io.threads=65" >> "$SK_TMP/big.conf"
"$SK_BIN/skiff" --config "$SK_TMP/big.conf" --node 1 > "$SK_TMP/big.out" 2>&1
rc=$?
sk_check "num.io.threads=65 refused at start (exit $rc)" test "$rc" -eq 2
sk_check "num.io.threads=65 message names the key" grep -q "num.io.threads" "$SK_TMP/big.out"

sk_start_cluster 1
sk_check_lines < <(/usr/bin/python3 "$(dirname "$0")/clients/max_conns.py" "$SK_BOOTSTRAP" 2>"$SK_TMP/py.err")
sk_check "node still running" kill -0 "${SK_NODE_PID[1]}"
[ "$SK_FAILS" -eq 0 ] || { tail -n 20 "$SK_TMP/py.err"; sk_dump_logs; }
sk_summary "$NAME"
