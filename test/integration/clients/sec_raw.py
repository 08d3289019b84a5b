#!/usr/bin/python3
"""Raw SASL exchanges on a Kafka listener, for what no client library does
on purpose (issue 17): garbage inside a SASL exchange, requests before
authentication, a plaintext Kafka frame on a TLS port; and a minimal SCRAM
client (RFC 5802 / 7677) that test/bench/scram_bench.py times.

usage: sec_raw.py garbage HOST:PORT USER PASSWORD      (a SASL_PLAINTEXT port, PLAIN
                                                        and SCRAM-SHA-512 enabled)
       sec_raw.py plain-on-tls HOST:PORT               (a TLS port)
       sec_raw.py scram HOST:PORT MECH USER PASSWORD   (one good login; PASS/FAIL)
Prints "PASS what" / "FAIL what: why"; exit 1 on a failure."""
import base64
import hashlib
import hmac
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kwire import Rd, recv_exact  # noqa: E402

SASL_HANDSHAKE, SASL_AUTHENTICATE, API_VERSIONS, METADATA = 17, 36, 18, 3
SASL_AUTHENTICATION_FAILED, ILLEGAL_SASL_STATE = 58, 34
TIMEOUT_S = 10.0
failures = []


def report(name, why):
    print(("PASS %s" % name) if why is None else ("FAIL %s: %s" % (name, why)), flush=True)
    if why is not None:
        failures.append(name)


class Conn:
    """One connection; request header v1 (non-flexible), correlation ids counted."""

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=TIMEOUT_S)
        self.corr = 0

    def send(self, key, ver, body):
        self.corr += 1
        req = struct.pack(">hhih", key, ver, self.corr, 4) + b"test" + body
        self.s.sendall(struct.pack(">i", len(req)) + req)

    def recv(self):
        """The response body after the correlation id; None when the peer closed."""
        head = recv_exact(self.s, 4)
        if head is None:
            return None
        n = struct.unpack(">i", head)[0]
        if n < 4 or n > 1 << 20:
            raise ValueError("bad response size %d" % n)
        body = recv_exact(self.s, n)
        if body is None:
            return None
        r = Rd(body)
        if r.i32() != self.corr:
            raise ValueError("correlation id mismatch")
        return r

    def closed_soon(self):
        """True when the peer closes (or resets) the connection within TIMEOUT_S."""
        try:
            while True:
                b = self.s.recv(4096)
                if not b:
                    return True
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    def close(self):
        self.s.close()

    def handshake(self, mech):
        self.send(SASL_HANDSHAKE, 1, struct.pack(">h", len(mech)) + mech.encode())
        r = self.recv()
        if r is None:
            raise ValueError("closed after SaslHandshake")
        err = r.i16()
        mechs = [r.take(r.i16()).decode() for _ in range(r.i32())]
        return err, mechs

    def authenticate(self, token):
        """SaslAuthenticate v1 -> (error_code, message, auth_bytes), or None when closed."""
        self.send(SASL_AUTHENTICATE, 1, struct.pack(">i", len(token)) + token)
        r = self.recv()
        if r is None:
            return None
        err = r.i16()
        ml = r.i16()
        msg = r.take(ml).decode(errors="replace") if ml >= 0 else None
        auth = r.take(r.i32())
        return err, msg, auth


# ---- SCRAM client (RFC 5802), SHA-256 or SHA-512 (RFC 7677 names) ----

def _h(mech):
    return hashlib.sha512 if mech == "SCRAM-SHA-512" else hashlib.sha256


def scram_login(c, mech, user, password):
    """Runs a full SCRAM exchange on connection c (after a good handshake).
    Returns None on success, else why it failed."""
    h = _h(mech)
    cnonce = base64.b64encode(os.urandom(18)).decode()
    name = user.replace("=", "=3D").replace(",", "=2C")
    bare = "n=%s,r=%s" % (name, cnonce)
    res = c.authenticate(("n,," + bare).encode())
    if res is None:
        return "closed after client-first"
    if res[0] != 0:
        return "client-first refused: error %d %s" % (res[0], res[1])
    sfirst = res[2].decode()
    attrs = dict(kv.split("=", 1) for kv in sfirst.split(","))
    if not attrs["r"].startswith(cnonce):
        return "server nonce does not extend ours"
    salt = base64.b64decode(attrs["s"])
    it = int(attrs["i"])
    salted = hashlib.pbkdf2_hmac(h().name, password.encode(), salt, it)
    ckey = hmac.new(salted, b"Client Key", h).digest()
    stored = h(ckey).digest()
    final_wo = "c=biws,r=%s" % attrs["r"]
    authmsg = ("%s,%s,%s" % (bare, sfirst, final_wo)).encode()
    sig = hmac.new(stored, authmsg, h).digest()
    proof = bytes(a ^ b for a, b in zip(ckey, sig))
    res = c.authenticate(("%s,p=%s" % (final_wo, base64.b64encode(proof).decode())).encode())
    if res is None:
        return "closed after client-final"
    if res[0] != 0:
        return "client-final refused: error %d %s" % (res[0], res[1])
    skey = hmac.new(salted, b"Server Key", h).digest()
    want = "v=" + base64.b64encode(hmac.new(skey, authmsg, h).digest()).decode()
    if res[2].decode() != want:
        return "server signature wrong"
    return None


def scram_one(addr, mech, user, password):
    c = Conn(addr)
    try:
        err, mechs = c.handshake(mech)
        if err != 0:
            return "handshake error %d (enabled: %s)" % (err, mechs)
        return scram_login(c, mech, user, password)
    finally:
        c.close()


# ---- the checks ----

def garbage(addr, user, password):
    # 1. a request other than ApiVersions/SaslHandshake before authentication
    c = Conn(addr)
    c.send(METADATA, 1, struct.pack(">i", -1))
    report("Metadata before authentication: connection closed", None if c.closed_soon() else "still open")
    c.close()
    # 2. garbage PLAIN token (no NUL separators)
    c = Conn(addr)
    err, mechs = c.handshake("PLAIN")
    report("SaslHandshake PLAIN accepted", None if err == 0 else "error %d" % err)
    res = c.authenticate(b"\xff\xfe garbage without separators \x01")
    report("garbage PLAIN token: SASL_AUTHENTICATION_FAILED (58)",
           None if res is not None and res[0] == SASL_AUTHENTICATION_FAILED else "got %r" % (res,))
    report("garbage PLAIN token: the connection is closed after the answer",
           None if c.closed_soon() else "still open")
    c.close()
    # 3. garbage SCRAM client-first (bad gs2 header)
    c = Conn(addr)
    c.handshake("SCRAM-SHA-512")
    res = c.authenticate(b"x,,n=alice,r=\x00\x01")
    report("garbage SCRAM client-first: refused with an error code",
           None if res is None or res[0] != 0 else "accepted")
    c.close()
    # 4. SCRAM client-final with a wrong proof
    c = Conn(addr)
    c.handshake("SCRAM-SHA-512")
    res = c.authenticate(("n,,n=%s,r=abcdefgh" % user).encode())
    ok = res is not None and res[0] == 0
    if ok:
        attrs = dict(kv.split("=", 1) for kv in res[2].decode().split(","))
        res2 = c.authenticate(("c=biws,r=%s,p=%s" % (attrs["r"], base64.b64encode(b"\0" * 64).decode())).encode())
        report("SCRAM with a forged proof: SASL_AUTHENTICATION_FAILED (58)",
               None if res2 is not None and res2[0] == SASL_AUTHENTICATION_FAILED else "got %r" % (res2,))
    else:
        report("SCRAM with a forged proof: SASL_AUTHENTICATION_FAILED (58)", "client-first refused: %r" % (res,))
    c.close()
    # 5. SaslAuthenticate without a handshake
    c = Conn(addr)
    res = c.authenticate(b"\0alice\0alice-secret")
    report("SaslAuthenticate before SaslHandshake: refused",
           None if res is None or res[0] in (ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED) else "got %r" % (res,))
    c.close()
    # 6. random bytes as a frame
    c = Conn(addr)
    c.s.sendall(struct.pack(">i", 40) + os.urandom(40))
    report("random frame before authentication: connection closed",
           None if c.closed_soon() else "still open")
    c.close()
    # and a good login still works afterwards
    report("a good SCRAM-SHA-512 login afterwards", scram_one(addr, "SCRAM-SHA-512", user, password))


def plain_on_tls(addr):
    c = Conn(addr)
    c.send(API_VERSIONS, 0, b"")
    got = b""
    try:
        while True:
            b = c.s.recv(4096)
            if not b:
                break
            got += b
    except (ConnectionResetError, socket.timeout) as e:
        if isinstance(e, socket.timeout):
            report("plaintext Kafka frame on a TLS port: connection closed", "still open after %ds" % TIMEOUT_S)
            return
    # either nothing or a TLS alert record (content type 21), never a Kafka answer
    report("plaintext Kafka frame on a TLS port: connection closed, no Kafka answer",
           None if got == b"" or got[:1] == b"\x15" else "got %r" % got[:16])


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "garbage" and len(sys.argv) == 5:
        garbage(*sys.argv[2:5])
    elif cmd == "plain-on-tls" and len(sys.argv) == 3:
        plain_on_tls(sys.argv[2])
    elif cmd == "scram" and len(sys.argv) == 6:
        report("SCRAM login %s as %s" % (sys.argv[3], sys.argv[4]), scram_one(*sys.argv[2:6]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
