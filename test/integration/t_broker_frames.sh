#!/usr/bin/env bash
# Raw frames against one node (python socket): ApiVersions above our range
# gets the v0-layout UNSUPPORTED_VERSION answer; ApiVersions v0/v3 list the
# APIs with Produce 0..>=7 and Fetch 0..>=11 and FindCoordinator v0; an
# unknown API key, an unsupported version, garbage, a truncated frame and an
# oversized size prefix each close only that connection; pipelined requests
# are answered in order; kcat still works afterwards.
. "$(dirname "$0")/lib.sh"

sk_start_cluster 1 --set socket.request.max.bytes=1048576
PORT=${SK_KAFKA_PORT[1]}

"$SK_PY" - "$PORT" > "$SK_TMP/frames.out" 2>&1 <<'PY'
import socket, struct, sys
port = int(sys.argv[1])
def conn():
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    return s
def frame(key, ver, corr, body=b"", client=b"t"):
    hdr = struct.pack(">hhi", key, ver, corr) + struct.pack(">h", len(client)) + client
    if ver >= 3 and key == 18:
        hdr += b"\x00"          # header v2 tag section
    p = hdr + body
    return struct.pack(">i", len(p)) + p
def recv_frame(s):
    h = b""
    while len(h) < 4:
        c = s.recv(4 - len(h))
        if not c: return None
        h += c
    n = struct.unpack(">i", h)[0]
    d = b""
    while len(d) < n:
        c = s.recv(n - len(d))
        if not c: return None
        d += c
    return d
def closed(s):
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True
res = {}
# ApiVersions v99 -> corr, error 35, [18 min max]
s = conn(); s.sendall(frame(18, 99, 7, b"\x00")); d = recv_frame(s)
corr, err, n = struct.unpack(">ihi", d[:10])
k, lo, hi = struct.unpack(">hhh", d[10:16])
res["downgrade"] = (corr, err, n, k, lo) == (7, 35, 1, 18, 0) and hi >= 3 and len(d) == 16
# ApiVersions v0 and Metadata v0 pipelined -> in order
s = conn(); s.sendall(frame(18, 0, 1) + frame(3, 0, 2, struct.pack(">i", 0)))
a = recv_frame(s); b = recv_frame(s)
corr, err, n = struct.unpack(">ihi", a[:10])
apis = {}
for i in range(n):
    k, lo, hi = struct.unpack(">hhh", a[10 + 6 * i:16 + 6 * i]); apis[k] = (lo, hi)
res["pipelined_in_order"] = corr == 1 and struct.unpack(">i", b[:4])[0] == 2
res["apiversions_ranges"] = err == 0 and apis[0][0] == 0 and apis[0][1] >= 7 and apis[1][1] >= 11 and apis[10][0] == 0 and apis[3][0] == 0
# unknown api key -> closed, no answer
s = conn(); s.sendall(frame(999, 0, 3)); res["unknown_api_closed"] = closed(s)
# unsupported version of a known api -> closed
s = conn(); s.sendall(frame(3, 999, 4)); res["bad_version_closed"] = closed(s)
# garbage body (Metadata v1 with a topic count of 1000000) -> closed
s = conn(); s.sendall(frame(3, 1, 5, struct.pack(">i", 1000000))); res["garbage_closed"] = closed(s)
# truncated header (2 bytes) -> closed
s = conn(); s.sendall(struct.pack(">i", 2) + b"\x00\x03"); res["truncated_closed"] = closed(s)
# oversized size prefix -> closed
s = conn(); s.sendall(struct.pack(">i", 50 * 1024 * 1024)); res["oversized_closed"] = closed(s)
# negative size -> closed
s = conn(); s.sendall(struct.pack(">i", -5)); res["negative_closed"] = closed(s)
for k, v in res.items(): print(k, "ok" if v else "FAIL")
PY
cat "$SK_TMP/frames.out"
for what in downgrade pipelined_in_order apiversions_ranges unknown_api_closed bad_version_closed garbage_closed truncated_closed oversized_closed negative_closed; do
  sk_check "$what" grep -q "^$what ok" "$SK_TMP/frames.out"
done
sk_check "node still up" kill -0 "${SK_NODE_PID[1]}"
echo "a:b" | kcat -b "127.0.0.1:$PORT" -P -t frames -K: 2>/dev/null
sk_check "kcat still works" test "$(kcat -b "127.0.0.1:$PORT" -C -t frames -o beginning -e -q -f '%k:%s' 2>/dev/null)" = "a:b"
sk_stop_node 1
sk_summary t_broker_frames
