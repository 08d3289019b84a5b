#!/usr/bin/python3
"""Raw-socket abuse of one skiff node's Kafka listener.

usage: rawframes.py HOST:PORT REQUEST_MAX_BYTES
Prints one line per case, "PASS name" or "FAIL name: why", and exits 1 if any
case failed. Each case uses its own connection; a long-lived well-behaved
connection opened first must still work at the end (a bad peer affects only
its own connection). Every wait is bounded (IO_TIMEOUT_S).
"""
import os
import socket
import struct
import sys
import time

IO_TIMEOUT_S = 5.0
HOST, PORT = sys.argv[1].rsplit(":", 1)
PORT = int(PORT)
REQ_MAX = int(sys.argv[2])
UNSUPPORTED_VERSION = 35
results = []


def connect():
    s = socket.create_connection((HOST, PORT), timeout=IO_TIMEOUT_S)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def frame(body):
    return struct.pack(">i", len(body)) + body


def header_v1(key, ver, corr, client=b"rawframes"):
    return struct.pack(">hhih", key, ver, corr, len(client)) + client


def api_versions(ver, corr):
    """ApiVersions request of version ver (flexible header/body from v3)."""
    if ver >= 3:
        return frame(header_v1(18, ver, corr) + b"\x00" +
                     b"\x0arawframes" + b"\x041.0" + b"\x00")
    return frame(header_v1(18, ver, corr))


def metadata_v0(corr):
    return frame(header_v1(3, 0, corr) + struct.pack(">i", 0))


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_frame(s):
    """One response frame body, or None when the peer closed first."""
    size = recv_exact(s, 4)
    if size is None:
        return None
    (n,) = struct.unpack(">i", size)
    if n < 4 or n > 64 << 20:
        raise ValueError("bad response size %d" % n)
    return recv_exact(s, n)


def closed_without_answer(s):
    """True if the node closes the connection and sends no frame at all."""
    try:
        data = s.recv(65536)
    except ConnectionResetError:
        return True, "reset"
    except socket.timeout:
        return False, "still open after %.0f s" % IO_TIMEOUT_S
    if data:
        return False, "answered %d bytes: %r" % (len(data), data[:16])
    return True, "closed"


def uvarint(b, i):
    shift = val = 0
    while True:
        c = b[i]
        i += 1
        val |= (c & 0x7F) << shift
        if not c & 0x80:
            return val, i
        shift += 7


def parse_api_versions(body, ver):
    """-> (corr, error, {key: (min, max)}) for a response of layout ver."""
    corr, err = struct.unpack_from(">ih", body, 0)
    i = 6
    if ver >= 3:
        n, i = uvarint(body, i)
        n -= 1
    else:
        (n,) = struct.unpack_from(">i", body, i)
        i += 4
    keys = {}
    for _ in range(n):
        k, lo, hi = struct.unpack_from(">hhh", body, i)
        i += 6
        if ver >= 3:
            _, i = uvarint(body, i)   # empty tagged fields per entry
        keys[k] = (lo, hi)
    if ver >= 1:
        i += 4                        # throttle_time_ms
    if ver >= 3:                      # tagged fields (v3+: the features, issue 20)
        ntags, i = uvarint(body, i)
        for _ in range(ntags):
            _, i = uvarint(body, i)
            size, i = uvarint(body, i)
            i += size
    return corr, err, keys, i


def check_downgrade_answer(body, corr):
    """NOTES.md section 2: header v0 + v0-layout body, error 35, only key 18."""
    if body is None:
        return "connection closed instead of an answer"
    if len(body) != 4 + 2 + 4 + 6:
        return "body is %d bytes, want 16 (v0 layout with one entry)" % len(body)
    got_corr, err, keys, _ = parse_api_versions(body, 0)
    if got_corr != corr:
        return "correlation id %d, want %d" % (got_corr, corr)
    if err != UNSUPPORTED_VERSION:
        return "error %d, want %d" % (err, UNSUPPORTED_VERSION)
    if list(keys) != [18] or keys[18][1] < 3 or keys[18][0] != 0:
        return "api_keys %r, want only 18 with range 0..>=3" % keys
    return None


def case(name):
    def wrap(fn):
        try:
            why = fn()
        except Exception as e:  # a hung or broken node shows up here
            why = "%s: %s" % (type(e).__name__, e)
        results.append((name, why))
        print(("PASS %s" % name) if why is None else ("FAIL %s: %s" % (name, why)),
              flush=True)
        return fn
    return wrap


# The bystander: opened before the abuse, used again after it.
bystander = connect()
bystander.sendall(api_versions(0, 1))
first = read_frame(bystander)


@case("control: checker rejects a v3-layout or wrong-error answer")
def _():
    good = struct.pack(">ihi", 9, 35, 1) + struct.pack(">hhh", 18, 0, 3)
    bad_err = struct.pack(">ihi", 9, 0, 1) + struct.pack(">hhh", 18, 0, 3)
    v3_like = struct.pack(">ih", 9, 35) + b"\x02" + struct.pack(">hhh", 18, 0, 3) + b"\x00" + b"\0\0\0\0\x00"
    if check_downgrade_answer(good, 9) is not None:
        return "rejected a correct answer"
    if check_downgrade_answer(bad_err, 9) is None or check_downgrade_answer(v3_like, 9) is None:
        return "accepted a wrong answer"
    if check_downgrade_answer(good, 8) is None:
        return "accepted a wrong correlation id"
    return None


@case("ApiVersions v0..v3 answered with error 0 and Produce/Fetch/Metadata")
def _():
    for ver in range(4):
        s = connect()
        s.sendall(api_versions(ver, 100 + ver))
        body = read_frame(s)
        s.close()
        if body is None:
            return "v%d: closed" % ver
        corr, err, keys, end = parse_api_versions(body, ver)
        if corr != 100 + ver or err != 0:
            return "v%d: corr %d err %d" % (ver, corr, err)
        if end != len(body):
            return "v%d: %d trailing bytes" % (ver, len(body) - end)
        for k in (0, 1, 3, 18):
            if k not in keys:
                return "v%d: api key %d missing from %r" % (ver, k, sorted(keys))
    return None


@case("ApiVersions v99 -> UNSUPPORTED_VERSION, v0 layout, only key 18")
def _():
    s = connect()
    s.sendall(frame(header_v1(18, 99, 4242) + b"\x00" + b"junk that is never parsed"))
    why = check_downgrade_answer(read_frame(s), 4242)
    s.close()
    return why


@case("ApiVersions v99 then v3 on the same connection (client retry)")
def _():
    s = connect()
    s.sendall(frame(header_v1(18, 99, 1) + b"\x00") + api_versions(3, 2))
    why = check_downgrade_answer(read_frame(s), 1)
    if why:
        return why
    body = read_frame(s)
    s.close()
    if body is None:
        return "closed after the downgrade answer"
    corr, err, _, _ = parse_api_versions(body, 3)
    return None if (corr, err) == (2, 0) else "retry got corr %d err %d" % (corr, err)


@case("garbage (an HTTP request) -> closed, no answer")
def _():
    s = connect()
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    ok, why = closed_without_answer(s)
    s.close()
    return None if ok else why


@case("random bytes -> no answer, node unaffected")
def _():
    s = connect()
    s.sendall(os.urandom(4096))
    s.shutdown(socket.SHUT_WR)
    ok, why = closed_without_answer(s)
    s.close()
    return None if ok else why


@case("negative size -> closed, no answer")
def _():
    s = connect()
    s.sendall(struct.pack(">i", -1) + b"\x00" * 16)
    ok, why = closed_without_answer(s)
    s.close()
    return None if ok else why


@case("oversized size (socket.request.max.bytes + 1) -> closed before the body")
def _():
    s = connect()
    s.sendall(struct.pack(">i", REQ_MAX + 1) + header_v1(18, 0, 5))
    ok, why = closed_without_answer(s)
    s.close()
    return None if ok else why


@case("size 0x7fffffff -> closed, no answer")
def _():
    s = connect()
    s.sendall(struct.pack(">i", 0x7FFFFFFF) + header_v1(18, 0, 5))
    ok, why = closed_without_answer(s)
    s.close()
    return None if ok else why


@case("zero-size frame -> closed, no answer")
def _():
    s = connect()
    s.sendall(struct.pack(">i", 0))
    ok, why = closed_without_answer(s)
    s.close()
    return None if ok else why


@case("frame shorter than a request header -> closed, no answer")
def _():
    s = connect()
    s.sendall(frame(b"\x00\x12\x00"))
    ok, why = closed_without_answer(s)
    s.close()
    return None if ok else why


@case("truncated frame then EOF -> closed, no answer")
def _():
    s = connect()
    whole = api_versions(3, 6)
    s.sendall(whole[: len(whole) // 2])
    s.shutdown(socket.SHUT_WR)
    ok, why = closed_without_answer(s)
    s.close()
    return None if ok else why


@case("Metadata v1 body truncated inside the frame -> error or close, never a hang")
def _():
    s = connect()
    # topics array claims 5 names, none follow
    s.sendall(frame(header_v1(3, 1, 77) + struct.pack(">i", 5)))
    try:
        body = read_frame(s)
    except (ConnectionResetError, socket.timeout) as e:
        s.close()
        return None if isinstance(e, ConnectionResetError) else "no answer and not closed"
    s.close()
    if body is None:
        return None
    (corr,) = struct.unpack_from(">i", body, 0)
    return None if corr == 77 else "answer with correlation id %d" % corr


@case("unknown API key 999 -> closed, no answer")
def _():
    s = connect()
    s.sendall(frame(header_v1(999, 0, 8)))
    ok, why = closed_without_answer(s)
    s.close()
    return None if ok else why


@case("unsupported Metadata version 999 -> closed, no answer")
def _():
    s = connect()
    s.sendall(frame(header_v1(3, 999, 9) + b"\x00" * 8))
    ok, why = closed_without_answer(s)
    s.close()
    return None if ok else why


@case("negative API version -> closed, no answer")
def _():
    s = connect()
    s.sendall(frame(header_v1(3, -1, 10) + b"\x00" * 8))
    ok, why = closed_without_answer(s)
    s.close()
    return None if ok else why


@case("requests after a bad one on the same connection are not answered")
def _():
    s = connect()
    s.sendall(frame(header_v1(999, 0, 11)) + api_versions(0, 12))
    ok, why = closed_without_answer(s)
    s.close()
    return None if ok else why


@case("pipelined burst of 200 requests answered in order")
def _():
    s = connect()
    burst = b""
    for i in range(200):
        burst += metadata_v0(1000 + i) if i % 3 == 0 else api_versions(i % 4, 1000 + i)
    s.sendall(burst)
    for i in range(200):
        body = read_frame(s)
        if body is None:
            return "closed after %d answers" % i
        (corr,) = struct.unpack_from(">i", body, 0)
        if corr != 1000 + i:
            return "answer %d has correlation id %d" % (i, corr)
    s.close()
    return None


@case("one request split into 1-byte writes is answered")
def _():
    s = connect()
    for b in api_versions(3, 13):
        s.sendall(bytes([b]))
        time.sleep(0.001)
    body = read_frame(s)
    s.close()
    if body is None:
        return "closed"
    corr, err, _, _ = parse_api_versions(body, 3)
    return None if (corr, err) == (13, 0) else "corr %d err %d" % (corr, err)


@case("100 connections dropped mid-frame")
def _():
    for i in range(100):
        s = connect()
        s.sendall(api_versions(3, i)[: 1 + i % 20])
        s.close()
    return None


@case("bystander connection still served")
def _():
    if first is None:
        return "bystander's first request got no answer"
    bystander.sendall(api_versions(0, 2))
    body = read_frame(bystander)
    if body is None:
        return "bystander was closed"
    corr, err, _, _ = parse_api_versions(body, 0)
    return None if (corr, err) == (2, 0) else "corr %d err %d" % (corr, err)


sys.exit(1 if any(why is not None for _, why in results) else 0)
