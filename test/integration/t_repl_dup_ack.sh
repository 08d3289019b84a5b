#!/usr/bin/env bash
# Issue 6 regression (nemesis loss): an idempotent producer's RETRIED batch
# with acks=all must be answered only once the high watermark covers it, like
# the original append. Before the fix the duplicate was answered at once with
# its original offsets, so a leader holding an unreplicated tail (e.g. just
# restarted after kill -9, or with its followers stopped) acknowledged
# records the ISR did not have; a follower then took over and they were lost.
# Here: 3 nodes, RF 3, min.insync 2; both followers SIGSTOPped (the quorum is
# then gone too, so the ISR cannot shrink); the batch times out unacknowledged;
# its retry must NOT be acknowledged; after SIGCONT the retry is acknowledged
# at the original offsets, and the records are stored once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/repl_lib.sh"
command -v jq >/dev/null || { echo "t_repl_dup_ack: jq missing"; exit 1; }
T=dupack

repl_opts
sk_start_cluster 3 "${REPL_OPTS[@]}"
sk_check "create $T (1 partition, RF 3)" $SK_PY "$SK_ROOT/test/integration/quorum_meta.py" create "$SK_BOOTSTRAP" $T 1 3
L=$(repl_wait_leader 20 $T -1) || sk_fail "no leader for $T"
t0=$SECONDS   # the whole ISR, so that stopping the followers freezes the HW
until [ "$(repl_part isr $T "$L" | tr ',' '\n' | grep -c .)" = 3 ] || [ $((SECONDS - t0)) -ge 30 ]; do sleep 0.2; done
F1=$((L % 3 + 1)); F2=$(((L + 1) % 3 + 1))
sk_log "leader node $L, isr $(repl_part isr $T "$L"), followers $F1 $F2"

# dup_py CMD ... against the leader's Kafka port: "init" -> pid;
# "send PID SEQ TIMEOUT_MS" -> "ERR BASE" of an acks=all produce of 3
# records (the same bytes for the same SEQ: a retry).
dup_py() {
PYTHONPATH="$(dirname "$0")/clients" "$SK_PY" - "${SK_KAFKA_PORT[L]}" "$T" "$@" <<'PY'
import socket, struct, sys
from kwire import recv_exact  # clients/kwire.py: an answer read to its end
def recv_all(s, n):
    return recv_exact(s, n) or b""
from kafka.record.default_records import DefaultRecordBatchBuilder
port, topic, cmd = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3]
s = socket.create_connection(("127.0.0.1", port), timeout=30)
def call(key, ver, body):
    p = struct.pack(">hhih", key, ver, 7, 1) + b"t" + body
    s.sendall(struct.pack(">i", len(p)) + p)
    n = struct.unpack(">i", recv_all(s, 4))[0]
    return recv_all(s, n)[4:]
if cmd == "init":
    _, err, pid, epoch = struct.unpack(">ihqh", call(22, 0, struct.pack(">hi", -1, 60000))[:16])
    print(pid if err == 0 else -1, file=sys.stdout)
    if err: print("InitProducerId error %d" % err, file=sys.stderr)
    sys.exit(0)
pid, seq, timeout_ms = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
b = DefaultRecordBatchBuilder(2, 0, False, pid, 0, seq, 1 << 20)
for i in range(3): b.append(i, 1000 + i, b"k", b"v%d" % (seq + i), [])
rec = bytes(b.build())
body = struct.pack(">hhii", -1, -1, timeout_ms, 1) + struct.pack(">h", len(topic)) + topic
body += struct.pack(">ii", 1, 0) + struct.pack(">i", len(rec)) + rec
d = call(0, 3, body)
l = struct.unpack(">h", d[4:6])[0]
_, err, base = struct.unpack(">ihq", d[6 + l + 4:6 + l + 4 + 14])
print(err, base)
PY
}

t0=$SECONDS; PID=-1   # retriable at first (producer id block from the controller)
until [ "${PID:--1}" -ge 0 ] || [ $((SECONDS - t0)) -ge 30 ]; do PID=$(dup_py init); [ "${PID:--1}" -ge 0 ] || sleep 0.5; done
[ "${PID:--1}" -ge 0 ] || sk_fail "InitProducerId on the leader: no producer id"
r=$(dup_py send "$PID" 0 15000)
sk_check "acks=all batch seq 0 with the whole ISR: acknowledged at offset 0 ($r)" test "$r" = "0 0"

kill -STOP "${SK_NODE_PID[F1]}" "${SK_NODE_PID[F2]}"
r=$(dup_py send "$PID" 3 1500)
sk_log "seq 3 with both followers stopped: $r"
sk_check "seq 3 not acknowledged while the followers are stopped ($r)" test "${r%% *}" != 0
r=$(dup_py send "$PID" 3 1500)
sk_log "retried seq 3 with both followers stopped: $r"
sk_check "its retry (a duplicate on the leader) is not acknowledged either ($r)" test "${r%% *}" != 0
kill -CONT "${SK_NODE_PID[F1]}" "${SK_NODE_PID[F2]}"

# once replicated, the retry is acknowledged at the original offsets
t0=$SECONDS; r=""
until [ "$r" = "0 3" ] || [ $((SECONDS - t0)) -ge 40 ]; do
  r=$(dup_py send "$PID" 3 3000); [ "$r" = "0 3" ] || sleep 0.5
done
sk_log "retried seq 3 after SIGCONT: $r (after $((SECONDS - t0)) s)"
sk_check "after SIGCONT the retry is acknowledged at its original offset 3 ($r)" test "$r" = "0 3"
# the ISR may still move (the followers were fenced while stopped): the next
# batch is retried like a client would, and must land right after, once
t0=$SECONDS; r=""
until [ "$r" = "0 6" ] || [ $((SECONDS - t0)) -ge 40 ]; do
  r=$(dup_py send "$PID" 6 3000); [ "$r" = "0 6" ] || sleep 0.5
done
sk_check "the next batch follows at offset 6 (seq 3 stored once) ($r)" test "$r" = "0 6"

for i in 1 2 3; do kill -CONT "${SK_NODE_PID[i]}" 2>/dev/null; sk_stop_node "$i"; done
sk_summary t_repl_dup_ack
