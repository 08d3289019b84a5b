#!/usr/bin/python3
"""Requests followed by bytes after their body, on one skiff node.

usage: trailing_bytes.py HOST:PORT KPDUMP TOPIC GROUP

Kafka reads a request by its schema and ignores what is left in the frame;
librdkafka 2.0.2 relies on it (ListGroups v4 + 1 byte, OffsetFetch v7 with
null topics + 3 bytes). For every API and version the node advertises, the
schema's default request (from `kpdump --default-request`) is sent as is and
with extra bytes; both must be answered alike, and the connection must stay
open. Hand-built requests with real content (Metadata naming TOPIC,
OffsetFetch of GROUP with null topics, ListGroups v4, ApiVersions v0) must
be answered exactly as without the bytes, and bodies cut short must still
close the connection.

Prints "PASS name" / "FAIL name: why" per case; exit 1 if any failed.
Every wait is bounded (IO_TIMEOUT_S).
"""
import socket
import struct
import subprocess
import sys

IO_TIMEOUT_S = 10.0
HOST, PORT = sys.argv[1].rsplit(":", 1)
PORT = int(PORT)
KPDUMP, TOPIC, GROUP = sys.argv[2], sys.argv[3].encode(), sys.argv[4].encode()
PROBE_CORR = 8
# What librdkafka 2.0.2 sends (1 and 3 zero bytes) and arbitrary garbage.
TRAILERS = [b"\x00", b"\x00\x00\x00", b"\xde\xad\xbe\xef\x01"]
# Default bodies of these would act on broker id 0 (register, heartbeat,
# unregister, shut down): cluster membership is not this test's business.
SKIP_KEYS = {7, 62, 63, 64}
failures = 0


def report(ok, name, why=""):
    global failures
    if ok:
        print("PASS " + name)
    else:
        failures += 1
        print("FAIL %s: %s" % (name, why))
    sys.stdout.flush()


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        try:
            chunk = s.recv(n - len(buf))
        except (socket.timeout, ConnectionError):
            return None
        if not chunk:
            return None
        buf += chunk
    return buf


def read_frame(s):
    head = recv_exact(s, 4)
    if head is None:
        return None
    return recv_exact(s, struct.unpack(">i", head)[0])


def probe():
    """ApiVersions v0 with the probe correlation id: answered on an open connection."""
    req = struct.pack(">hhih", 18, 0, PROBE_CORR, 5) + b"probe"
    return struct.pack(">i", len(req)) + req


def exchange(frame, extra=b""):
    """Sends frame (size prefix included) with `extra` bytes appended inside
    the frame (the size grows to cover them), then a probe. Returns
    ("closed", None) when the connection closes before the probe's answer,
    else ("open", response body to the request or None when it had none)."""
    size = struct.unpack(">i", frame[:4])[0] + len(extra)
    data = struct.pack(">i", size) + frame[4:] + extra + probe()
    s = socket.create_connection((HOST, PORT), timeout=IO_TIMEOUT_S)
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(data)
        answer = None
        for _ in range(3):
            body = read_frame(s)
            if body is None or len(body) < 4:
                return ("closed", None)
            corr = struct.unpack(">i", body[:4])[0]
            if corr == PROBE_CORR:
                return ("open", answer)
            answer = body
        return ("closed", None)
    finally:
        s.close()


def default_frame(key, ver):
    out = subprocess.run([KPDUMP, "--default-request", str(key), str(ver)],
                         capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        return None
    return bytes.fromhex(out.stdout.strip())


def advertised():
    """(key, min, max) from an ApiVersions v0 answer."""
    req = struct.pack(">hhih", 18, 0, 1, 3) + b"avs"
    s = socket.create_connection((HOST, PORT), timeout=IO_TIMEOUT_S)
    try:
        s.sendall(struct.pack(">i", len(req)) + req)
        body = read_frame(s)
    finally:
        s.close()
    if body is None:
        return []
    err, n = struct.unpack(">hi", body[4:10])
    out, pos = [], 10
    for _ in range(n):
        out.append(struct.unpack(">hhh", body[pos:pos + 6]))
        pos += 6
    return out if err == 0 else []


def header(key, ver, corr, flexible):
    client = b"trailing"
    h = struct.pack(">hhih", key, ver, corr, len(client)) + client
    return h + (b"\x00" if flexible else b"")


def frame_of(key, ver, body, flexible=False, corr=7):
    req = header(key, ver, corr, flexible) + body
    return struct.pack(">i", len(req)) + req


def uvarint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if not n:
            return out + bytes([b])
        out += bytes([b | 0x80])


def same_answer(a, b):
    """Answers to the same request at two moments: equal, or for APIs whose
    answer carries fresh values (producer ids, times) the same shape."""
    if a[0] != b[0] or (a[1] is None) != (b[1] is None):
        return False
    return a[1] is None or len(a[1]) == len(b[1])


# --- 1. every advertised API and version, default body -----------------------
apis = advertised()
report(len(apis) >= 20, "ApiVersions v0 lists the served APIs", "got %d" % len(apis))
checked = 0
kinds = {"answered": 0, "no answer": 0, "closed": 0}
for key, vmin, vmax in apis:
    if key in SKIP_KEYS:
        continue
    for ver in range(vmin, vmax + 1):
        f = default_frame(key, ver)
        name = "api %d v%d" % (key, ver)
        if f is None:
            report(False, name, "kpdump has no default request")
            continue
        plain = exchange(f)
        kinds["closed" if plain[0] == "closed" else "no answer" if plain[1] is None else "answered"] += 1
        bad = []
        for t in TRAILERS:
            got = exchange(f, t)
            if got == plain:
                continue
            # the state may have moved on (log dir sizes, ...): ask again
            # without the bytes; an answer that varies between two plain
            # asks (producer ids, times) is compared by shape
            after = exchange(f)
            if got == after:
                continue
            if got[0] == "closed" and plain[0] == "open":
                bad.append("+%d bytes: connection closed" % len(t))
            elif after == plain:
                bad.append("+%d bytes: different answer" % len(t))
            elif not same_answer(got, after):
                bad.append("+%d bytes: answer of another shape" % len(t))
            plain = after
        report(not bad, name + " with bytes after the body answered alike", "; ".join(bad))
        checked += 1
report(checked >= 100, "every advertised API x version tried", "only %d" % checked)
print("default requests without extra bytes: %s" % ", ".join("%d %s" % (n, k) for k, n in kinds.items()))


# --- 2. requests with content, the librdkafka 2.0.2 shapes ------------------
def exact_case(name, f, trailers=TRAILERS):
    plain = exchange(f)
    if plain[0] != "open" or plain[1] is None:
        report(False, name, "not answered without extra bytes: %r" % (plain,))
        return
    bad = ["+%d bytes: %s" % (len(t), "closed" if g[0] == "closed" else "different answer")
           for t in trailers for g in [exchange(f, t)] if g != plain]
    report(not bad, name, "; ".join(bad))


exact_case("ApiVersions v0 + extra bytes", frame_of(18, 0, b""))
exact_case("Metadata v1 (null topics) + extra bytes", frame_of(3, 1, struct.pack(">i", -1)))
exact_case("Metadata v1 naming the topic + extra bytes",
           frame_of(3, 1, struct.pack(">ih", 1, len(TOPIC)) + TOPIC))
# ListGroups v4: flexible, states filter [] + no tags; librdkafka adds 1 byte
exact_case("ListGroups v4 + 1 zero byte (librdkafka 2.0.2)",
           frame_of(16, 4, uvarint(1) + b"\x00", flexible=True), [b"\x00"])
exact_case("ListGroups v4 + extra bytes", frame_of(16, 4, uvarint(1) + b"\x00", flexible=True))
# OffsetFetch v7: group, topics null, require_stable, tags; librdkafka adds 3 bytes
of7 = uvarint(len(GROUP) + 1) + GROUP + uvarint(0) + b"\x00" + b"\x00"
exact_case("OffsetFetch v7 null topics + 3 zero bytes (librdkafka 2.0.2)",
           frame_of(9, 7, of7, flexible=True), [b"\x00\x00\x00"])
exact_case("OffsetFetch v7 null topics + extra bytes", frame_of(9, 7, of7, flexible=True))
# the OffsetFetch answer names the group's committed topic (the bytes did
# not replace the null topics by something else)
st, ans = exchange(frame_of(9, 7, of7, flexible=True), b"\x00\x00\x00")
report(st == "open" and ans is not None and TOPIC in ans,
       "OffsetFetch v7 + 3 bytes lists the group's committed topic", "answer %r" % (ans,))

# --- 3. a body cut short is still refused -----------------------------------
md = frame_of(3, 1, struct.pack(">ih", 1, len(TOPIC)) + TOPIC)
for cut in (1, len(TOPIC) + 2):
    short = md[:len(md) - cut]
    short = struct.pack(">i", len(short) - 4) + short[4:]
    st, _ = exchange(short)
    report(st == "closed", "Metadata v1 cut short by %d byte(s) closes the connection" % cut,
           "connection stayed open")
of_short = frame_of(9, 7, of7[:-1], flexible=True)
st, _ = exchange(of_short)
report(st == "closed", "OffsetFetch v7 missing its tag section closes the connection",
       "connection stayed open")

sys.exit(1 if failures else 0)
