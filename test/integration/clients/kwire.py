"""Raw Kafka request/response frames for the test scripts that send APIs no
client library here speaks (reassign_raw.py, txn_misc.py, legacy_produce.py):
unsigned varints, a bounds-checked response reader, one request/response
round trip, and recv_exact for scripts that read their own frames."""
import socket
import struct


def uvarint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def cstr(b):
    """A compact (flexible-version) string of bytes b."""
    return uvarint(len(b) + 1) + b


class Rd:
    """Reads a response body; every read is bounds-checked (ValueError)."""

    def __init__(self, b):
        self.b, self.i = b, 0

    def take(self, n):
        if self.i + n > len(self.b):
            raise ValueError("short response")
        v = self.b[self.i:self.i + n]
        self.i += n
        return v

    def i8(self): return struct.unpack(">b", self.take(1))[0]
    def i16(self): return struct.unpack(">h", self.take(2))[0]
    def i32(self): return struct.unpack(">i", self.take(4))[0]
    def i64(self): return struct.unpack(">q", self.take(8))[0]

    def uv(self):
        n = shift = 0
        while True:
            b = self.take(1)[0]
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7

    def string(self, flexible=True):
        n = self.uv() - 1 if flexible else self.i16()
        return None if n < 0 else self.take(n).decode()

    def s(self):
        return self.string(True)

    def count(self, flexible=True):
        return self.uv() - 1 if flexible else self.i32()

    def arr(self, fn, flexible=True):
        return [fn() for _ in range(max(self.count(flexible), 0))]

    def tags(self, flexible=True):
        if flexible:
            for _ in range(self.uv()):
                self.uv()
                self.take(self.uv())


def recv_exact(s, n):
    """Exactly n bytes from socket s, or None if it closes first."""
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def call(addr, key, ver, body, flexible=True, client=b"test", timeout_s=30.0, resp_tags=None):
    """Sends one request (header v2 when flexible, else v1) with correlation
    id 7 to HOST:PORT and returns an Rd positioned after the response
    header. ValueError on a closed connection or a mismatched answer.
    resp_tags: whether the response header has tagged fields (default:
    flexible; False for ApiVersions, whose response header is always v0)."""
    host, port = addr.rsplit(":", 1)
    req = struct.pack(">hhih", key, ver, 7, len(client)) + client + (b"\x00" if flexible else b"") + body
    s = socket.create_connection((host, int(port)), timeout=timeout_s)
    try:
        s.sendall(struct.pack(">i", len(req)) + req)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise ValueError("connection closed")
            buf += chunk
    finally:
        s.close()
    r = Rd(buf[4:])
    if r.i32() != 7:
        raise ValueError("correlation id mismatch")
    r.tags(flexible if resp_tags is None else resp_tags)   # response header v1 for flexible versions
    return r
