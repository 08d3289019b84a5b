#!/usr/bin/env bash
# Issue 16 network benchmarks, one node on 127.0.0.1 (free ports); figures
# are reported, not judged (the goals are in the issue; the assertions live
# in test/integration/t_net_*.sh). Peak VmRSS is sampled every 0.2 s.
#  1. partial: 30 connections each announce a 100 MiB frame and send ~99 MiB
#     of it, with queued.max.request.bytes=268435456 (goal: RSS < 400 MB)
#     while a kcat producer and consumer run (do they still work?); RSS
#     after the attackers close.
#  2. idle: RSS with 10,000 idle connections (the soft RLIMIT_NOFILE is
#     raised for the node and the client if the hard limit allows).
#  3. noread: 20 connections that never read 50 MB Fetch answers, Fetch v11
#     (records sent from the files) and v4 (records copied for old
#     clients), socket.write.stall.ms at its default (60 s): RSS held 5 s in.
# env: SKIFF_BIN_DIR; NBENCH_ONLY="partial idle noread" (a subset)
# shellcheck source-path=SCRIPTDIR/../integration
. "$(dirname "$0")/../integration/lib.sh"
A="$(dirname "$0")/../integration/clients/net_attack.py"
only=${NBENCH_ONLY:-partial idle noread}
[ -x "$SK_BIN/skiff" ] || { echo "missing $SK_BIN/skiff (build it with make)"; exit 1; }
command -v kcat >/dev/null || { echo "kcat not found"; exit 1; }
hard=$(ulimit -Hn)
want=12000
if [ "$hard" = unlimited ] || [ "$hard" -ge "$want" ]; then ulimit -Sn "$want"; else ulimit -Sn "$hard"; fi
echo "net bench: soft RLIMIT_NOFILE $(ulimit -Sn), $(nproc) cores"

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# peak_rss PID SECONDS -> peak VmRSS (kB) over that time
peak_rss() {
  local pid=$1 n=$(( $2 * 5 )) peak=0 r i
  for ((i = 0; i < n; i++)); do r=$(rss_kb "$pid"); [ "$r" -gt "$peak" ] && peak=$r; sleep 0.2; done
  echo "$peak"
}
metric() { curl -s "http://127.0.0.1:${SK_ADMIN_PORT[1]}/metrics" | awk -v m="$1" '$1 == m {print int($2)}'; }
restart() {
  [ -n "${SK_NODE_PID[1]:-}" ] && sk_stop_node 1
  rm -rf "$SK_TMP/data"
  sk_start_cluster 1 "$@"
  PID=${SK_NODE_PID[1]}
}

if [[ " $only " == *" partial "* ]]; then
  restart --set queued.max.request.bytes=268435456
  base=$(rss_kb "$PID")
  "$SK_PY" "$A" partial 127.0.0.1 "${SK_KAFKA_PORT[1]}" 30 104857600 103809024 25 > "$SK_TMP/partial.out" 2>&1 &
  apid=$!; SK_PIDS+=("$apid")
  sleep 3
  (
    t0=$(date +%s%N)
    seq 1 20000 | sed 's/^/bench-/' | timeout 60 kcat -P -b "$SK_BOOTSTRAP" -t netbench 2>/dev/null; prc=$?
    got=$(timeout 60 kcat -C -b "$SK_BOOTSTRAP" -t netbench -o beginning -e -q 2>/dev/null | grep -c '^bench-')
    echo "kcat producer exit $prc, consumer got $got of 20000 in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  ) > "$SK_TMP/kcat.out" &
  kpid=$!
  peak=$(peak_rss "$PID" 15)
  used=$(metric skiff_request_memory_bytes); waiting=$(metric skiff_request_memory_waiting_connections)
  wait "$kpid"
  wait "$apid"
  sleep 2
  after=$(rss_kb "$PID")
  echo "partial: 30 x 100 MiB partial frames, budget 256 MiB: RSS baseline ${base} kB, peak ${peak} kB, after close ${after} kB;" \
       "request memory ${used} B, ${waiting} connections waiting; attackers $(cat "$SK_TMP/partial.out"); $(cat "$SK_TMP/kcat.out")"
fi

if [[ " $only " == *" idle "* ]]; then
  restart
  base=$(rss_kb "$PID")
  "$SK_PY" "$A" many 127.0.0.1 "${SK_KAFKA_PORT[1]}" 10000 12 > "$SK_TMP/many.out" 2>&1 &
  apid=$!; SK_PIDS+=("$apid")
  for _ in $(seq 1 240); do grep -q '^served' "$SK_TMP/many.out" && break; sleep 0.5; done
  sleep 1
  held=$(rss_kb "$PID"); open=$(metric skiff_connections'{listener="kafka"}'); fds=$(metric skiff_open_fds)
  wait "$apid"; sleep 1
  echo "idle: $(cat "$SK_TMP/many.out"): RSS baseline ${base} kB, with the connections open ${held} kB" \
       "($(( (held - base) * 1024 / 10000 )) B per connection), ${open} open, ${fds} fds; after close $(rss_kb "$PID") kB"
fi

if [[ " $only " == *" noread "* ]]; then
  restart
  "$SK_PY" -c 'import sys; [sys.stdout.write("%06d" % i + "r" * 99993 + "\n") for i in range(520)]' |
    timeout 120 kcat -P -b "$SK_BOOTSTRAP" -t noread -X topic.metadata.refresh.interval.ms=100 2>/dev/null
  for v in 11 4; do
    base=$(rss_kb "$PID")
    "$SK_PY" "$A" noread 127.0.0.1 "${SK_KAFKA_PORT[1]}" 20 noread 52428800 $v 6 > "$SK_TMP/noread.out" 2>&1 &
    apid=$!; SK_PIDS+=("$apid")
    peak=$(peak_rss "$PID" 5)
    wait "$apid"; sleep 1
    echo "noread: 20 connections never reading 50 MB Fetch v$v answers: RSS baseline ${base} kB, peak ${peak} kB" \
         "(+$(( (peak - base) / 1024 )) MB), after they close $(rss_kb "$PID") kB"
  done
fi
sk_stop_node 1
