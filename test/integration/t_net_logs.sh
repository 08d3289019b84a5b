#!/usr/bin/env bash
# Issue 16 finding 11: one log line per malformed connection no more. 300
# connections each send a request with an unknown api key and 300 more a
# negative frame size; the node closes every one of them but prints at most
# 5 lines per cause per 10 s, then one line counting what it suppressed, and
# /metrics counts the suppressed lines. (Before: 600 lines.)
. "$(dirname "$0")/lib.sh"
NAME=t_net_logs
A="$(dirname "$0")/clients/net_attack.py"

sk_start_cluster 1
PID=${SK_NODE_PID[1]}
ADMIN=127.0.0.1:${SK_ADMIN_PORT[1]}
metric() { curl -s "http://$ADMIN/metrics" | awk -v m="$1" '$1 == m {print int($2)}'; }

"$SK_PY" "$A" garbage 127.0.0.1 "${SK_KAFKA_PORT[1]}" 300 > "$SK_TMP/garbage.out"
"$SK_PY" - 127.0.0.1 "${SK_KAFKA_PORT[1]}" <<'PY'
import socket, struct, sys
for _ in range(300):
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
    s.sendall(struct.pack(">i", -5))
    s.settimeout(5)
    try:
        s.recv(1)
    except OSError:
        pass
    s.close()
PY
bad=$(metric 'skiff_connections_closed_total{reason="bad_frame"}')
sk_check "300 negative frames closed ($bad)" test "${bad:-0}" -eq 300
lines=$(grep -c 'closing connection' "$SK_TMP/node-1.log")
sk_log "close lines for 600 malformed connections: $lines"
sk_check "at most 10 close lines for 600 malformed connections ($lines)" test "$lines" -le 10
sk_check "both causes logged at least once" test "$lines" -ge 2
sleep 11.5   # the window ends; the once-a-second pass prints the counts
sk_check "suppressed count printed" grep -Eq '[0-9]+ more lines like ".*" suppressed' "$SK_TMP/node-1.log"
sup=$(metric skiff_log_lines_suppressed_total)
sk_check "suppressed lines counted in /metrics ($sup >= 590)" test "${sup:-0}" -ge 590
grep 'suppressed' "$SK_TMP/node-1.log"
sk_check "node still running" kill -0 "$PID"
[ "$SK_FAILS" -eq 0 ] || sk_dump_logs
sk_summary "$NAME"
