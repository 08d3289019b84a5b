#!/usr/bin/env bash
# A Fetch answer's file ranges outlive their segment (issue 19). Ranges no
# longer dup() the segment's descriptor: they hold a reference to it
# (storage/st_fdref.h) that the network gives up once the range is sent.
# One node, a topic of 8 MiB segments with ~20 MB in it:
#  1. a raw Fetch v11 from offset 0 (two segments' ranges, ~16 MB) on a
#     socket with a tiny receive buffer, left unread: most of the answer
#     waits in the node as file ranges;
#  2. retention.bytes=1 then removes both segments (their .log files go);
#  3. meanwhile the node still holds the removed .log files open (the
#     in-flight answer's references);
#  4. the client reads the whole answer: its records are byte for byte the
#     two segment files, copied before the removal;
#  5. after the send no removed file stays open (the references were
#     released: the last release closed them).
. "$(dirname "$0")/lib.sh"
kload=${SKIFF_TEST_DIR:-$SK_ROOT/build/test}/tools/kload
[ -x "$kload" ] || { echo "t_fetch_retention_inflight: missing $kload"; exit 1; }

sk_start_cluster 1
B=$SK_BOOTSTRAP
PID=${SK_NODE_PID[1]}
"$SK_PY" - "$B" <<'PY' || sk_fail "create topic"
import sys
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
f = a.create_topics([NewTopic("rif", 1, 1, config={"segment.bytes": "8388608"})], request_timeout=20)
f["rif"].result(30)
PY
"$kload" produce --brokers "$B" --topic rif --count 100000 --size 200 --acks 1 >"$SK_TMP/p.json" 2>>"$SK_TMP/kload.err" ||
  sk_fail "produce"
D="$SK_TMP/data/node-1/rif-0"
ls "$D"/*.log >/dev/null 2>&1 || D=$(dirname "$(find "$SK_TMP" -path '*rif-0/*.log' | head -1)")
S0="$D/00000000000000000000.log"
S1=$(ls "$D"/*.log | sed -n 2p)
sk_check "three segments or more" test "$(ls "$D"/*.log | wc -l)" -ge 3
mkdir -p "$SK_TMP/copy"
cat "$S0" "$S1" >"$SK_TMP/copy/expect.bin"
echo "segments: $(stat -c %s "$S0") + $(stat -c %s "$S1") bytes"

# 1: the fetch, unread until $SK_TMP/go exists
"$SK_PY" - "${SK_KAFKA_PORT[1]}" "$SK_TMP/copy/expect.bin" "$SK_TMP/sent" "$SK_TMP/go" >"$SK_TMP/fetch.out" 2>&1 <<'PY' &
import os, socket, struct, sys, time
port, expect_path, sent_path, go_path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # before connect: a small window
s.settimeout(60)
s.connect(("127.0.0.1", port))
def string(x): return struct.pack(">h", len(x)) + x
mb = 64 << 20
body = struct.pack(">iiiibii", -1, 0, 1, mb, 0, 0, -1)           # replica, wait, min, max, iso, session, epoch
body += struct.pack(">i", 1) + string(b"rif") + struct.pack(">i", 1)
body += struct.pack(">iiqqi", 0, -1, 0, -1, mb)                   # partition, epoch, offset, log start, max
body += struct.pack(">i", 0) + string(b"")                         # forgotten, rack
req = struct.pack(">hhi", 1, 11, 7) + string(b"rif") + body
s.sendall(struct.pack(">i", len(req)) + req)
open(sent_path, "w").close()
end = time.time() + 40
while not os.path.exists(go_path) and time.time() < end: time.sleep(0.1)
def recv(n):
    b = bytearray()
    while len(b) < n:
        c = s.recv(min(n - len(b), 1 << 20))
        if not c: raise SystemExit("FAIL answer: connection closed after %d of %d bytes" % (len(b), n))
        b += c
    return bytes(b)
n = struct.unpack(">i", recv(4))[0]
r = recv(n)
pos = 0
def take(k):
    global pos
    if pos + k > len(r): raise SystemExit("FAIL answer: short")
    v = r[pos:pos + k]; pos += k; return v
corr, thr, err, sid, nt = struct.unpack(">iihii", take(18))
tl = struct.unpack(">h", take(2))[0]; take(tl)
npart = struct.unpack(">i", take(4))[0]
part, perr, hw, lso, lstart = struct.unpack(">ihqqq", take(30))
na = struct.unpack(">i", take(4))[0]
take(16 * max(na, 0))
take(4)                                                            # preferred read replica
rl = struct.unpack(">i", take(4))[0]
recs = take(rl)
exp = open(expect_path, "rb").read()
print("answer: error %d/%d, %d record bytes, expected %d" % (err, perr, rl, len(exp)))
print("PASS answer read whole after the removal" if err == 0 and perr == 0 else "FAIL answer: errors %d %d" % (err, perr))
print("PASS records are the removed segments' bytes" if recs == exp else
      "FAIL records differ from the segment files (%d vs %d bytes)" % (len(recs), len(exp)))
PY
FP=$!
SK_PIDS+=("$FP")
t=0; until [ -e "$SK_TMP/sent" ]; do sleep 0.1; t=$((t + 1)); [ "$t" -lt 150 ] || sk_fail "fetch not sent"; done
sleep 1

# 2: retention removes the two segments
"$SK_PY" - "$B" <<'PY' || sk_fail "alter retention.bytes"
import sys
from confluent_kafka.admin import AdminClient, ConfigResource
a = AdminClient({"bootstrap.servers": sys.argv[1]})
r = ConfigResource(ConfigResource.Type.TOPIC, "rif", set_config={"segment.bytes": "8388608", "retention.bytes": "1"})
for f in a.alter_configs([r], request_timeout=20).values(): f.result(30)
PY
t=0; while [ -e "$S0" ] || [ -e "$S1" ]; do sleep 0.2; t=$((t + 1)); [ "$t" -lt 100 ] || sk_fail "retention did not remove the segments"; done

# 3: the removed files are still open in the node (the in-flight answer)
held() { ls -l "/proc/$PID/fd" 2>/dev/null | grep -c 'rif-0/.*\.log.*(deleted)'; }
sk_check "removed segments held open while the answer is in flight" test "$(held)" -ge 1
echo "removed .log files open during the send: $(held)"

# 4: read the answer
touch "$SK_TMP/go"
wait "$FP"
sk_check_lines <"$SK_TMP/fetch.out"

# 5: released after the send
t=0; while [ "$(held)" -gt 0 ] && [ "$t" -lt 50 ]; do sleep 0.1; t=$((t + 1)); done
sk_check "no removed segment open after the send" test "$(held)" = 0

sk_summary t_fetch_retention_inflight
