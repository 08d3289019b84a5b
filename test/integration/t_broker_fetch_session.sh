#!/usr/bin/env bash
# Incremental fetch sessions (KIP-227) with hand-encoded Fetch v7 frames:
# a full fetch with epoch 0 opens a session; an incremental fetch answers
# only partitions with news; wrong epoch -> INVALID_FETCH_SESSION_EPOCH
# (71); unknown session -> FETCH_SESSION_ID_NOT_FOUND (70); forgotten
# partitions are dropped; epoch -1 closes the session (session id 0).
. "$(dirname "$0")/lib.sh"

sk_start_cluster 1 --set num.partitions=2
PORT=${SK_KAFKA_PORT[1]}
B=127.0.0.1:$PORT
for p in 0 1; do seq 1 10 | kcat -b "$B" -P -t fs -p "$p" 2>/dev/null; done

PYTHONPATH="$(dirname "$0")/clients" "$SK_PY" - "$PORT" > "$SK_TMP/fs.out" 2>&1 <<'PY'
import socket, struct, sys, subprocess
from kwire import recv_exact  # clients/kwire.py: an answer read to its end
def recv_all(s, n):
    return recv_exact(s, n) or b""
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port), timeout=15)
corr = [0]
def string(x): return struct.pack(">h", len(x)) + x
def fetch(sid, epoch, parts, forget=(), wait=0):
    corr[0] += 1
    body = struct.pack(">iiiibii", -1, wait, 1, 1 << 20, 0, sid, epoch)
    if parts:
        body += struct.pack(">i", 1) + string(b"fs") + struct.pack(">i", len(parts))
        for p, off in parts: body += struct.pack(">iqqi", p, off, -1, 1 << 20)
    else:
        body += struct.pack(">i", 0)
    if forget:
        body += struct.pack(">i", 1) + string(b"fs") + struct.pack(">i", len(forget)) + b"".join(struct.pack(">i", p) for p in forget)
    else:
        body += struct.pack(">i", 0)
    p = struct.pack(">hhih", 1, 7, corr[0], 1) + b"t" + body
    s.sendall(struct.pack(">i", len(p)) + p)
    n = struct.unpack(">i", recv_all(s, 4))[0]
    d = recv_all(s, n)
    pos = 4
    _, err, rsid, nt = struct.unpack(">ihii", d[pos:pos + 14]); pos += 14
    out = {}
    for _ in range(nt):
        l = struct.unpack(">h", d[pos:pos + 2])[0]; pos += 2 + l
        np = struct.unpack(">i", d[pos:pos + 4])[0]; pos += 4
        for _ in range(np):
            part, perr, hw, lso, start = struct.unpack(">ihqqq", d[pos:pos + 30]); pos += 30
            na = struct.unpack(">i", d[pos:pos + 4])[0]; pos += 4 + max(na, 0) * 16
            rl = struct.unpack(">i", d[pos:pos + 4])[0]; pos += 4 + max(rl, 0)
            out[part] = (perr, hw, max(rl, 0))
    return err, rsid, out
def check(name, cond, info=""):
    print(name, "ok" if cond else "FAIL %r" % (info,))
err, sid, out = fetch(0, 0, [(0, 0), (1, 0)])
check("open", err == 0 and sid > 0 and set(out) == {0, 1} and out[0][2] > 0 and out[1][1] == 10, (err, sid, out))
err, sid2, out = fetch(sid, 1, [(0, 10), (1, 10)])
check("nothing_new", err == 0 and sid2 == sid and out == {}, (err, sid2, out))
subprocess.run(["kcat", "-b", "127.0.0.1:%d" % port, "-P", "-t", "fs", "-p", "1"], input=b"x\n", capture_output=True)
err, sid2, out = fetch(sid, 2, [])
check("only_news", err == 0 and set(out) == {1} and out[1][1] == 11 and out[1][2] > 0, (err, out))
err, sid2, out = fetch(sid, 2, [])
check("wrong_epoch", err == 71 and sid2 == 0, (err, sid2))
err, sid2, out = fetch(sid + 1, 1, [])
check("unknown_session", err == 70, err)
err, sid2, out = fetch(sid, 3, [(1, 11)], forget=[1])
check("forget", err == 0 and out == {}, (err, out))
subprocess.run(["kcat", "-b", "127.0.0.1:%d" % port, "-P", "-t", "fs", "-p", "1"], input=b"y\n", capture_output=True)
err, sid2, out = fetch(sid, 4, [])
check("forgotten_stays_out", err == 0 and out == {}, (err, out))
err, sid2, out = fetch(sid, -1, [(0, 0)])
check("close", err == 0 and sid2 == 0 and set(out) == {0}, (err, sid2, out))
err, sid2, out = fetch(sid, 5, [])
check("closed_is_gone", err == 70, err)
PY
cat "$SK_TMP/fs.out"
for what in open nothing_new only_news wrong_epoch unknown_session forget forgotten_stays_out close closed_is_gone; do
  sk_check "$what" grep -q "^$what ok" "$SK_TMP/fs.out"
done
sk_stop_node 1
sk_summary t_broker_fetch_session
