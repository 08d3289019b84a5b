"""SASL checks through raw frames (sasl_wire.py) against one node whose
Kafka listener is SASL_PLAINTEXT. usage: sasl_check.py ADDR PHASE
Prints "PASS what" / "FAIL what: why" lines (lib.sh sk_check_lines).
Phases: main (everything on a fresh node with user admin from skiff
format and alice from jaas), after_restart (credentials survived), reauth
(a node with connections.max.reauth.ms set)."""
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import sasl_wire as w
from kwire import uvarint, cstr

addr, phase = sys.argv[1], sys.argv[2]


def check(name, cond, info=""):
    print(("PASS %s" % name) if cond else ("FAIL %s: %r" % (name, info)))


def closed(c, key=3, ver=1, body=b"\x00\x00\x00\x00", flexible=False):
    """True when the server closes the connection instead of answering."""
    try:
        c.request(key, ver, body, flexible)
        return False
    except (w.Closed, ConnectionError, OSError):
        return True


def alter(c, deletions, upsertions):
    """AlterUserScramCredentials v0 (flexible) -> [(user, error, message)]."""
    b = uvarint(len(deletions) + 1)
    for name, mech in deletions:
        b += cstr(name.encode()) + struct.pack(">b", mech) + b"\x00"
    b += uvarint(len(upsertions) + 1)
    for name, mech, iters, salt, salted in upsertions:
        b += cstr(name.encode()) + struct.pack(">bi", mech, iters)
        b += uvarint(len(salt) + 1) + salt + uvarint(len(salted) + 1) + salted + b"\x00"
    b += b"\x00"
    r = c.request(51, 0, b, True)
    r.i32()
    out = []
    for _ in range(r.count()):
        u = r.s(); e = r.i16(); m = r.s(); r.tags()
        out.append((u, e, m))
    return out


def describe(c, users):
    """DescribeUserScramCredentials v0 -> (error, [(user, error, [(mech, iters)])])."""
    if users is None:
        b = b"\x00"
    else:
        b = uvarint(len(users) + 1) + b"".join(cstr(u.encode()) + b"\x00" for u in users)
    b += b"\x00"
    r = c.request(50, 0, b, True)
    r.i32(); err = r.i16(); r.s()
    res = []
    for _ in range(r.count()):
        u = r.s(); e = r.i16(); r.s()
        infos = []
        for _ in range(r.count()):
            infos.append((r.i8(), r.i32())); r.tags()
        r.tags()
        res.append((u, e, infos))
    return err, res


def upsert(name, mech_name, password, iters=4096):
    salt = os.urandom(32)
    m = 1 if mech_name == "SCRAM-SHA-256" else 2
    return (name, m, iters, salt, w.salted_password(mech_name, password, salt, iters))


def main_phase():
    # logins that work
    for mech, user, pw in [("PLAIN", "alice", "alice-secret"), ("SCRAM-SHA-256", "admin", "admin-secret")]:
        c, err, msg, life = w.login(addr, mech, user, pw)
        check("login %s %s" % (mech, user), err == 0, (err, msg))
        # authenticated: Metadata v1 answers
        try:
            c.request(3, 1, b"\x00\x00\x00\x00", False)
            check("request after %s login" % mech, True)
        except Exception as e:
            check("request after %s login" % mech, False, e)
        c.close()
    # users through AlterUserScramCredentials (as admin)
    c, err, _, _ = w.login(addr, "SCRAM-SHA-256", "admin", "admin-secret")
    res = alter(c, [], [upsert("carol", "SCRAM-SHA-256", "carol-pw"), upsert("carol", "SCRAM-SHA-512", "carol-pw", 8192),
                        upsert("dave", "SCRAM-SHA-512", "dave-pw")])
    check("alter create carol+dave", sorted(res) == [("carol", 0, None), ("dave", 0, None)], res)
    err, d = describe(c, ["carol"])
    check("describe carol", err == 0 and d == [("carol", 0, [(1, 4096), (2, 8192)])], d)
    err, d = describe(c, None)
    names = [u for u, _, _ in d]
    check("describe all", err == 0 and names == ["admin", "carol", "dave"], d)
    err, d = describe(c, ["nobody"])
    check("describe unknown -> RESOURCE_NOT_FOUND", d and d[0][1] == 91, d)
    err, d = describe(c, ["carol", "carol"])
    check("describe duplicate -> DUPLICATE_RESOURCE", len(d) == 2 and all(x[1] == 92 for x in d), d)
    bad = [
        ("empty name", [], [upsert("", "SCRAM-SHA-256", "x")], 93),
        ("too few iterations", [], [upsert("erin", "SCRAM-SHA-256", "x", 1000)], 93),
        ("too many iterations", [], [upsert("erin", "SCRAM-SHA-256", "x", 20000)], 93),
        ("unknown mechanism", [], [("erin", 7, 4096, b"s", b"x" * 32)], 33),
        ("duplicate", [], [upsert("erin", "SCRAM-SHA-256", "x"), upsert("erin", "SCRAM-SHA-256", "y")], 92),
        ("delete unknown", [("erin", 1)], [], 91),
        ("salted password length", [], [("erin", 1, 4096, b"salt", b"x" * 31)], 93),
    ]
    for name, dels, ups, code in bad:
        res = alter(c, dels, ups)
        check("alter %s -> %d" % (name, code), len(res) == 1 and res[0][1] == code, res)
    err, d = describe(c, ["erin"])
    check("refused alters created nothing", d and d[0][1] == 91, d)
    res = alter(c, [("dave", 2)], [])
    check("alter delete dave", res == [("dave", 0, None)], res)
    c.close()
    for mech, user, pw in [("SCRAM-SHA-256", "carol", "carol-pw"), ("SCRAM-SHA-512", "carol", "carol-pw")]:
        c, err, msg, _ = w.login(addr, mech, user, pw)
        check("login %s %s (created by Alter)" % (mech, user), err == 0, (err, msg))
        c.close()
    # failures: same error and message for wrong password and unknown user
    msgs = {}
    for what, mech, user, pw in [("wrong password", "SCRAM-SHA-512", "carol", "bad"),
                                 ("unknown user", "SCRAM-SHA-512", "nobody", "bad"),
                                 ("deleted user", "SCRAM-SHA-512", "dave", "dave-pw"),
                                 ("PLAIN wrong password", "PLAIN", "alice", "bad"),
                                 ("PLAIN unknown user", "PLAIN", "nobody", "bad")]:
        t0 = time.time()
        c, err, msg, _ = w.login(addr, mech, user, pw)
        dt = time.time() - t0
        check("%s -> SASL_AUTHENTICATION_FAILED" % what, err == 58, (err, msg))
        check("%s answered after the delay" % what, dt >= 0.09, dt)
        check("%s then closed" % what, closed(c), "open")
        msgs.setdefault(mech, set()).add(msg)
    check("one failure message per mechanism", all(len(v) == 1 for v in msgs.values()), msgs)
    check("message says nothing of which part", all("user" not in m.lower() and "password" not in m.lower()
                                                    for v in msgs.values() for m in v), msgs)
    # an unknown user gets the same salt on every attempt (a fake credential
    # derived from the name), another unknown user another one
    def salt_of(user):
        c = w.Conn(addr)
        c.handshake("SCRAM-SHA-256")
        first, bare = w.scram_client_first(user, "saltprobe123")
        err, msg, sf, _ = c.authenticate(first.encode())
        c.close()
        return dict(kv.split("=", 1) for kv in sf.decode().split(","))
    a1, a2, b1, real = salt_of("ghost"), salt_of("ghost"), salt_of("ghost2"), salt_of("admin")
    check("unknown user: stable fake salt", a1["s"] == a2["s"] and a1["s"] != b1["s"], (a1, a2, b1))
    check("unknown user: server-first looks like a real one",
          len(a1["s"]) == len(real["s"]) and a1["i"] == real["i"] and len(a1["r"]) == len(real["r"]), (a1, real))
    # mechanism not enabled / unknown
    c = w.Conn(addr)
    err, mechs = c.handshake("GSSAPI")
    check("GSSAPI -> UNSUPPORTED_SASL_MECHANISM with the list",
          err == 33 and sorted(mechs) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"], (err, mechs))
    check("unsupported mechanism closes", closed(c), "open")
    # garbage tokens
    for what, mech, tok in [("PLAIN garbage", "PLAIN", b"\xff\x00garbage"),
                            ("SCRAM garbage first", "SCRAM-SHA-256", b"\x00\x01\x02 not scram"),
                            ("SCRAM oversize", "SCRAM-SHA-256", b"n,,n=a,r=" + b"x" * 5000)]:
        c = w.Conn(addr)
        c.handshake(mech)
        err, msg, _, _ = c.authenticate(tok)
        check("%s -> 58" % what, err == 58, (err, msg))
        c.close()
    c = w.Conn(addr)
    c.handshake("SCRAM-SHA-256")
    first, bare = w.scram_client_first("carol", "abcdefghijkl")
    err, _, sf, _ = c.authenticate(first.encode())
    err, msg, _, _ = c.authenticate(b"c=biws,r=wrongnonce,p=AAAA")
    check("SCRAM garbage final -> 58", err == 58, (err, msg))
    c.close()
    # a request before authentication closes; ApiVersions is served
    c = w.Conn(addr)
    try:
        r = c.request(18, 0, b"", False)
        check("ApiVersions before authentication", r.i16() == 0)
    except Exception as e:
        check("ApiVersions before authentication", False, e)
    check("Metadata before authentication closes", closed(c), "answered")
    c = w.Conn(addr)
    c.handshake("PLAIN")
    check("Metadata between handshake and authenticate closes", closed(c), "answered")
    c = w.Conn(addr)
    r = c.request(36, 0, struct.pack(">i", 3) + b"abc", False)
    check("SaslAuthenticate without handshake -> ILLEGAL_SASL_STATE", r.i16() == 34)
    # v0 handshake, then bare tokens
    c = w.Conn(addr)
    err, _ = c.handshake("PLAIN", 0)
    tok = c.raw_token(b"\x00alice\x00alice-secret")
    check("v0 PLAIN bare token -> empty answer", err == 0 and tok == b"", (err, tok))
    check("request after v0 PLAIN", not closed(c), "closed")
    c.close()
    c = w.Conn(addr)
    c.handshake("SCRAM-SHA-512", 0)
    first, bare = w.scram_client_first("carol", "v0nonce12345")
    sf = c.raw_token(first.encode()).decode()
    final, expect = w.scram_client_final("SCRAM-SHA-512", "carol-pw", bare, sf)
    sfin = c.raw_token(final.encode()).decode()
    check("v0 SCRAM bare tokens", sfin == expect, (sfin, expect))
    check("request after v0 SCRAM", not closed(c), "closed")
    c.close()
    c = w.Conn(addr)
    c.handshake("PLAIN", 0)
    c.send_frame(b"\x00alice\x00wrong")
    try:
        c.recv_frame(); check("v0 bad token closes without an answer", False, "answered")
    except (w.Closed, OSError):
        check("v0 bad token closes without an answer", True)
    # a PLAINTEXT-style client (no SASL) on the SASL port: Produce v3 closes
    c = w.Conn(addr)
    check("Produce before authentication closes", closed(c, 0, 3, b"\xff\xff\x00\x01\x00\x00\x03\xe8\x00\x00\x00\x00"), "answered")
    # node-to-node RPCs on the Kafka listener need a super user (super.users=User:admin)
    fetch12 = struct.pack(">iiiibii", 1, 0, 1, 1 << 20, 0, 0, -1) + b"\x01\x01\x01\x00"
    for user, mech, pw, want in [("alice", "PLAIN", "alice-secret", 31), ("admin", "SCRAM-SHA-256", "admin-secret", 0)]:
        c, err, _, _ = w.login(addr, mech, user, pw)
        try:
            r = c.request(1, 12, fetch12, True)
            r.i32()
            got = r.i16()
        except Exception as e:
            got = repr(e)
        check("replica Fetch as %s -> %s" % (user, want), got == want, got)
        c.close()
    # WriteTxnMarkers v1 (flexible): one marker, topic "t-plain" partitions 0 and 1
    wtm = (uvarint(2) + struct.pack(">qhb", 77, 0, 1) + uvarint(2) + cstr(b"t-plain") + uvarint(3) +
           struct.pack(">ii", 0, 1) + b"\x00" + struct.pack(">i", 0) + b"\x00" + b"\x00")
    for user, mech, pw in [("alice", "PLAIN", "alice-secret")]:
        c, err, _, _ = w.login(addr, mech, user, pw)
        try:
            r = c.request(27, 1, wtm, True)
            codes = []
            for _ in range(r.count()):
                r.i64()
                for _ in range(r.count()):
                    r.s()
                    for _ in range(r.count()):
                        r.i32(); codes.append(r.i16()); r.tags()
                    r.tags()
                r.tags()
        except Exception as e:
            codes = repr(e)
        check("WriteTxnMarkers from a non-super-user -> CLUSTER_AUTHORIZATION_FAILED per partition",
              codes == [31, 31], codes)
        c.close()
    c, err, _, _ = w.login(addr, "PLAIN", "alice", "alice-secret")
    try:
        r = c.request(1, 12, struct.pack(">iiiibii", -1, 0, 1, 1 << 20, 0, 0, -1) + b"\x01\x01\x01\x00", True)
        r.i32()
        check("consumer Fetch as a non-super-user is served", r.i16() == 0)
    except Exception as e:
        check("consumer Fetch as a non-super-user is served", False, e)
    c.close()
    # the node is healthy after all this
    c, err, _, _ = w.login(addr, "PLAIN", "alice", "alice-secret")
    check("node healthy after the failures", err == 0 and not closed(c), err)


def after_restart():
    for mech, user, pw in [("SCRAM-SHA-256", "admin", "admin-secret"), ("SCRAM-SHA-512", "carol", "carol-pw")]:
        c, err, msg, _ = w.login(addr, mech, user, pw)
        check("after restart: login %s %s" % (mech, user), err == 0, (err, msg))
        c.close()
    c, err, msg, _ = w.login(addr, "SCRAM-SHA-512", "dave", "dave-pw")
    check("after restart: deleted dave stays deleted", err == 58, (err, msg))


def reauth():
    c, err, msg, life = w.login(addr, "SCRAM-SHA-256", "admin", "admin-secret", ver=1)
    check("reauth: session_lifetime_ms answered", err == 0 and 0 < life <= 2000, (err, life))
    # re-authenticate on the same connection before expiry
    err2, _ = c.handshake("SCRAM-SHA-256")
    first, bare = w.scram_client_first("admin", "reauthnonce1")
    e, m, sf, _ = c.authenticate(first.encode())
    final, expect = w.scram_client_final("SCRAM-SHA-256", "admin-secret", bare, sf.decode())
    e, m, sfin, life2 = c.authenticate(final.encode())
    check("reauth on the same connection", err2 == 0 and e == 0 and life2 > 0, (err2, e, m))
    time.sleep(life2 / 1000.0 + 0.3)
    check("expired session: next request closes the connection", closed(c), "answered")
    # a re-authentication may not change the principal
    c, err, msg, life = w.login(addr, "SCRAM-SHA-256", "admin", "admin-secret")
    c.handshake("SCRAM-SHA-256")
    first, bare = w.scram_client_first("carol", "reauthnonce2")
    e, m, sf, _ = c.authenticate(first.encode())
    final, expect = w.scram_client_final("SCRAM-SHA-256", "carol-pw", bare, sf.decode())
    e, m, sfin, _ = c.authenticate(final.encode())
    check("reauth as another principal refused", e == 58, (e, m))


def cluster_alter():
    """On this node: create USER (argv[3]) with SCRAM-SHA-512 / PASSWORD (argv[4]) as admin."""
    try:
        c, err, msg, _ = w.login(addr, "SCRAM-SHA-256", "admin", "admin-secret")
        check("admin login on %s" % addr, err == 0, (err, msg))
        res = alter(c, [], [upsert(sys.argv[3], "SCRAM-SHA-512", sys.argv[4])]) if err == 0 else None
    except Exception as e:
        err, res = -1, repr(e)
    check("alter %s through %s" % (sys.argv[3], addr), res == [(sys.argv[3], 0, None)], res)
    sys.exit(0 if res == [(sys.argv[3], 0, None)] else 1)


def alter_plain():
    """Create USER (argv[3]) with SCRAM-SHA-512 as User:node over PLAIN."""
    try:
        c, err, msg, _ = w.login(addr, "PLAIN", "node", "node-pw")
        res = alter(c, [], [upsert(sys.argv[3], "SCRAM-SHA-512", sys.argv[4])]) if err == 0 else (err, msg)
    except Exception as e:
        res = repr(e)
    ok = res == [(sys.argv[3], 0, None)]
    check("alter %s as node" % sys.argv[3], ok, res)
    sys.exit(0 if ok else 1)


def cluster_login():
    """Exit 0 when USER/PASSWORD (argv[3], argv[4]) logs in with SCRAM-SHA-512 here."""
    try:
        c, err, msg, _ = w.login(addr, "SCRAM-SHA-512", sys.argv[3], sys.argv[4])
    except Exception:
        sys.exit(1)
    sys.exit(0 if err == 0 else 1)


def forge():
    """addr = a controller port on a SASL_PLAINTEXT controller listener;
    argv[3] = cluster id. A Vote from an authenticated principal that is
    not in super.users is refused (closed) before raft sees it; the same
    Vote from the super user is answered (so the refusal is the check, not
    a broken frame); DescribeQuorum stays open; a BrokerHeartbeat from the
    non-super-user is refused too."""
    cid = sys.argv[3]
    other = int(sys.argv[4])   # a voter that is not the node behind addr
    INT32_MAX = 2**31 - 1
    # a well-formed Vote that raft itself would answer (a voter's id, a
    # stale epoch: not granted, no state change), so only the node check
    # can make it close; and one with a huge epoch, which must not move
    # any node's epoch either
    def vote_body(cluster, epoch=0, candidate=None):
        candidate = other if candidate is None else candidate
        part = struct.pack(">iiiiq", 0, epoch, candidate, 0, 0)
        return cstr(cluster.encode()) + uvarint(2) + cstr(b"__cluster_metadata") + uvarint(2) + part + b"\x00\x00\x00"
    c = w.Conn(addr)
    check("unauthenticated Vote on the SASL controller listener closes", closed(c, 52, 0, vote_body(cid), True), "answered")
    c, err, msg, _ = w.login(addr, "PLAIN", "alice", "alice-pw")
    check("alice logs in on the controller listener", err == 0, (err, msg))
    check("forged Vote from User:alice closes the connection", closed(c, 52, 0, vote_body(cid), True), "answered")
    c, err, msg, _ = w.login(addr, "PLAIN", "alice", "alice-pw")
    check("forged Vote (epoch INT32_MAX - 5) from User:alice closes",
          closed(c, 52, 0, vote_body(cid, INT32_MAX - 5), True), "answered")
    c, err, msg, _ = w.login(addr, "PLAIN", "alice", "alice-pw")
    hb = struct.pack(">iqqbb", other, 1, 0, 0, 0) + b"\x00"   # BrokerHeartbeat v0: id, epoch, offset, fence, shutdown
    check("BrokerHeartbeat from User:alice closes", closed(c, 63, 0, hb, True), "answered")
    c, err, msg, _ = w.login(addr, "PLAIN", "alice", "alice-pw")
    try:
        r = c.request(55, 0, uvarint(2) + cstr(b"__cluster_metadata") + uvarint(2) + struct.pack(">i", 0) + b"\x00\x00\x00", True)
        check("DescribeQuorum from User:alice is answered", r.i16() == 0)
    except Exception as e:
        check("DescribeQuorum from User:alice is answered", False, e)
    c, err, msg, _ = w.login(addr, "PLAIN", "node", "node-pw")
    try:
        r = c.request(52, 0, vote_body(cid), True)
        check("the super user's stale Vote is answered by raft", r.i16() == 0)
    except Exception as e:
        check("the super user's Vote reaches raft", False, e)


{"forge": forge, "main": main_phase, "after_restart": after_restart, "reauth": reauth, "alter": cluster_alter, "alter_plain": alter_plain,
 "login": cluster_login}[phase]()
