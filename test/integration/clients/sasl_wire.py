"""SASL over raw Kafka frames for the test scripts (t_sasl_*.sh): a
connection that authenticates with SaslHandshake v1 + SaslAuthenticate
(PLAIN, SCRAM-SHA-256/512 per RFC 5802 with hashlib) or with the v0
handshake and bare tokens, then sends requests on the same socket.
Everything is computed here from the RFCs; nothing is taken from a
client library."""
import base64
import hashlib
import hmac
import os
import socket
import struct

from kwire import Rd, cstr, uvarint, recv_exact

HASH = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}


class Closed(Exception):
    pass


class Conn:
    def __init__(self, addr, timeout_s=10.0):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=timeout_s)
        self.corr = 0

    def close(self):
        self.s.close()

    def send_frame(self, payload):
        self.s.sendall(struct.pack(">i", len(payload)) + payload)

    def recv_frame(self):
        h = recv_exact(self.s, 4)
        if h is None:
            raise Closed("connection closed")
        n = struct.unpack(">i", h)[0]
        b = recv_exact(self.s, n)
        if b is None:
            raise Closed("connection closed")
        return b

    def request(self, key, ver, body, flexible, client=b"sasltest"):
        """Sends one request, returns an Rd after the response header."""
        self.corr += 1
        hdr = struct.pack(">hhih", key, ver, self.corr, len(client)) + client + (b"\x00" if flexible else b"")
        self.send_frame(hdr + body)
        r = Rd(self.recv_frame())
        if r.i32() != self.corr:
            raise ValueError("correlation id mismatch")
        if flexible and key != 18:
            r.tags(True)
        return r

    def handshake(self, mech, ver=1):
        r = self.request(17, ver, struct.pack(">h", len(mech)) + mech.encode(), False)
        err = r.i16()
        mechs = r.arr(lambda: r.string(False), False)
        return err, mechs

    def authenticate(self, token, ver=2):
        """SaslAuthenticate; returns (error, message, auth_bytes, session_lifetime_ms)."""
        flexible = ver >= 2
        if flexible:
            body = uvarint(len(token) + 1) + token + b"\x00"
        else:
            body = struct.pack(">i", len(token)) + token
        r = self.request(36, ver, body, flexible)
        err = r.i16()
        msg = r.string(flexible)
        if flexible:
            n = r.uv() - 1
        else:
            n = r.i32()
        data = r.take(n) if n > 0 else b""
        life = r.i64() if ver >= 1 else 0
        return err, msg, data, life

    def raw_token(self, token):
        self.send_frame(token)
        return self.recv_frame()


def scram_client_first(user, nonce):
    u = user.replace("=", "=3D").replace(",", "=2C")
    bare = "n=%s,r=%s" % (u, nonce)
    return "n,," + bare, bare


def scram_client_final(mech, password, bare, server_first):
    attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
    salt = base64.b64decode(attrs["s"])
    it = int(attrs["i"])
    h = HASH[mech]
    salted = hashlib.pbkdf2_hmac(h().name, password.encode(), salt, it)
    ckey = hmac.new(salted, b"Client Key", h).digest()
    stored = h(ckey).digest()
    without = "c=biws,r=" + attrs["r"]
    am = (bare + "," + server_first + "," + without).encode()
    csig = hmac.new(stored, am, h).digest()
    proof = bytes(a ^ b for a, b in zip(ckey, csig))
    skey = hmac.new(salted, b"Server Key", h).digest()
    ssig = hmac.new(skey, am, h).digest()
    return without + ",p=" + base64.b64encode(proof).decode(), "v=" + base64.b64encode(ssig).decode()


def login(addr, mech, user, password, ver=2):
    """A Conn authenticated with handshake v1 + SaslAuthenticate `ver`;
    (conn, error, message, session_lifetime_ms). The server's signature is
    checked for SCRAM (ValueError when it does not match)."""
    c = Conn(addr)
    err, _ = c.handshake(mech)
    if err:
        return c, err, "handshake", 0
    if mech == "PLAIN":
        err, msg, _, life = c.authenticate(b"\x00" + user.encode() + b"\x00" + password.encode(), ver)
        return c, err, msg, life
    first, bare = scram_client_first(user, base64.b64encode(os.urandom(18)).decode())
    err, msg, sf, _ = c.authenticate(first.encode(), ver)
    if err:
        return c, err, msg, 0
    final, expect = scram_client_final(mech, password, bare, sf.decode())
    err, msg, sfin, life = c.authenticate(final.encode(), ver)
    if not err and sfin.decode() != expect:
        raise ValueError("server signature mismatch")
    return c, err, msg, life


def salted_password(mech, password, salt, iterations):
    return hashlib.pbkdf2_hmac(HASH[mech]().name, password.encode(), salt, iterations)
