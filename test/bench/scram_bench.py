#!/usr/bin/python3
"""SCRAM (and PLAIN) authentications per second against one SASL listener
(issue 17 benchmark): each authentication is a new TCP connection,
SaslHandshake v1 + SaslAuthenticate v1 exchanges (two for SCRAM, one for
PLAIN) with a server-signature check, then close. WORKERS processes run
in parallel for SECONDS; the client side's PBKDF2 is done once per worker
(the salt and iteration count do not change), so the figure is the node's
cost, not Python's.

usage: scram_bench.py HOST:PORT MECH USER PASSWORD [SECONDS [WORKERS]]
Prints one JSON line: {"mechanism","auths","failures","seconds","auths_per_s","workers"}.
Exit 1 when any authentication failed."""
import base64
import hashlib
import hmac
import json
import multiprocessing
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration", "clients"))
from sec_raw import Conn  # noqa: E402

ADDR, MECH, USER, PASSWORD = sys.argv[1:5]
SECONDS = float(sys.argv[5]) if len(sys.argv) > 5 else 5.0
WORKERS = int(sys.argv[6]) if len(sys.argv) > 6 else 2
H = hashlib.sha512 if MECH == "SCRAM-SHA-512" else hashlib.sha256


def one(keys):
    """One authentication; keys caches (salt, iterations) -> salted password."""
    c = Conn(ADDR)
    try:
        err, _ = c.handshake(MECH)
        if err:
            return False
        if MECH == "PLAIN":
            res = c.authenticate(b"\0" + USER.encode() + b"\0" + PASSWORD.encode())
            return res is not None and res[0] == 0
        cnonce = base64.b64encode(os.urandom(18)).decode()
        bare = "n=%s,r=%s" % (USER, cnonce)
        res = c.authenticate(("n,," + bare).encode())
        if res is None or res[0]:
            return False
        sfirst = res[2].decode()
        a = dict(kv.split("=", 1) for kv in sfirst.split(","))
        k = (a["s"], a["i"])
        if k not in keys:
            keys[k] = hashlib.pbkdf2_hmac(H().name, PASSWORD.encode(), base64.b64decode(a["s"]), int(a["i"]))
        salted = keys[k]
        ckey = hmac.new(salted, b"Client Key", H).digest()
        wo = "c=biws,r=%s" % a["r"]
        msg = ("%s,%s,%s" % (bare, sfirst, wo)).encode()
        sig = hmac.new(H(ckey).digest(), msg, H).digest()
        proof = base64.b64encode(bytes(x ^ y for x, y in zip(ckey, sig))).decode()
        res = c.authenticate(("%s,p=%s" % (wo, proof)).encode())
        if res is None or res[0]:
            return False
        skey = hmac.new(salted, b"Server Key", H).digest()
        return res[2].decode() == "v=" + base64.b64encode(hmac.new(skey, msg, H).digest()).decode()
    finally:
        c.close()


def worker(q):
    keys, ok, bad = {}, 0, 0
    end = time.time() + SECONDS
    while time.time() < end:
        try:
            if one(keys):
                ok += 1
            else:
                bad += 1
        except Exception:  # a refused or reset connection is a failure, counted
            bad += 1
    q.put((ok, bad))


def main():
    q = multiprocessing.Queue()
    t0 = time.time()
    ps = [multiprocessing.Process(target=worker, args=(q,)) for _ in range(WORKERS)]
    for p in ps:
        p.start()
    res = [q.get() for _ in ps]
    for p in ps:
        p.join()
    secs = time.time() - t0
    ok = sum(r[0] for r in res)
    bad = sum(r[1] for r in res)
    print(json.dumps({"mechanism": MECH, "auths": ok, "failures": bad, "seconds": round(secs, 2),
                      "auths_per_s": round(ok / secs, 1), "workers": WORKERS}))
    sys.exit(1 if bad or ok == 0 else 0)


if __name__ == "__main__":
    main()
