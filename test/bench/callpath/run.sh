#!/usr/bin/env bash
# test/bench/callpath/run.sh BINDIR OUTDIR — 3 nodes of BINDIR/skiff (built
# with -finstrument-functions and hooks.o, see README.md), topic "tr" with
# RF 3, one warm-up batch then the measured batch (kcat, acks=all), each
# node's trace in OUTDIR/trace-N.txt and the leader in OUTDIR/leader.txt.
. "$(dirname "$0")/../../integration/lib.sh"
SK_BIN=$1; OUT=$2; mkdir -p "$OUT"; rm -f "$OUT"/trace-*.txt
sk_write_cluster_conf 3
for i in 1 2 3; do SKIFF_TRACE_OUT=$OUT/trace-$i.txt sk_start_node "$i"; done
for i in 1 2 3; do sk_wait_port "${SK_KAFKA_PORT[i]}" 60 "${SK_NODE_PID[i]}" || sk_fail "node $i"; done
sleep 3
$SK_PY "$SK_ROOT/test/integration/quorum_meta.py" create "$SK_BOOTSTRAP" tr 1 3 || sk_fail create
sleep 3
echo warm | kcat -b "$SK_BOOTSTRAP" -P -t tr -p 0 -X acks=all
sleep 1
echo measured-batch | kcat -b "$SK_BOOTSTRAP" -P -t tr -p 0 -X acks=all
sleep 1
kcat -b "$SK_BOOTSTRAP" -L -t tr | grep -i "partition 0" > "$OUT/leader.txt"
for i in 1 2 3; do sk_stop_node "$i"; done
