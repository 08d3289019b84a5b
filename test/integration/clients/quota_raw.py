"""DescribeClientQuotas (48) and AlterClientQuotas (49) as raw frames, v0
(classic encoding) and v1 (flexible), since no Python client here speaks
them: good requests, each INVALID_REQUEST case, validate_only, and the
describe filters. Prints PASS/FAIL lines (sk_check_lines).
usage: quota_raw.py HOST:PORT"""
import struct
import sys

from kwire import Rd, call, uvarint


def s(b, flex, nullable=False):
    if b is None:
        return b"\x00" if flex else struct.pack(">h", -1)
    b = b.encode() if isinstance(b, str) else b
    return (uvarint(len(b) + 1) if flex else struct.pack(">h", len(b))) + b


def arr(items, flex):
    return (uvarint(len(items) + 1) if flex else struct.pack(">i", len(items))) + b"".join(items)


def tag(flex):
    return b"\x00" if flex else b""


def alter_body(entries, validate_only, flex):
    out = []
    for ent, ops in entries:
        e = arr([s(t, flex) + s(n, flex) + tag(flex) for t, n in ent], flex)
        o = arr([s(k, flex) + struct.pack(">d?", v, rm) + tag(flex) for k, v, rm in ops], flex)
        out.append(e + o + tag(flex))
    return arr(out, flex) + struct.pack(">?", validate_only) + tag(flex)


def alter(addr, ver, entries, validate_only=False):
    flex = ver >= 1
    r = call(addr, 49, ver, alter_body(entries, validate_only, flex), flexible=flex)
    r.i32()
    res = []
    for _ in range(max(r.count(flex), 0)):
        code = r.i16()
        msg = r.string(flex)
        ents = []
        for _ in range(max(r.count(flex), 0)):
            t = r.string(flex)
            n = r.string(flex)
            r.tags(flex)
            ents.append((t, n))
        r.tags(flex)
        res.append((code, msg, ents))
    return res


def describe(addr, ver, comps, strict=False):
    flex = ver >= 1
    body = arr([s(t, flex) + struct.pack(">b", m) + s(x, flex) + tag(flex) for t, m, x in comps], flex)
    body += struct.pack(">?", strict) + tag(flex)
    r = call(addr, 48, ver, body, flexible=flex)
    r.i32()
    code = r.i16()
    msg = r.string(flex)
    n = r.count(flex)
    if n < 0:
        return code, msg, None
    entries = []
    for _ in range(n):
        ents = []
        for _ in range(max(r.count(flex), 0)):
            t = r.string(flex)
            nm = r.string(flex)
            r.tags(flex)
            ents.append((t, nm))
        vals = {}
        for _ in range(max(r.count(flex), 0)):
            k = r.string(flex)
            v = struct.unpack(">d", r.take(8))[0]
            r.tags(flex)
            vals[k] = v
        r.tags(flex)
        entries.append((sorted(ents, key=lambda e: e[0]), vals))
    return code, msg, entries


def main():
    addr = sys.argv[1]
    fails = 0

    def check(what, ok, detail=""):
        nonlocal fails
        print(("PASS " if ok else "FAIL ") + what + ("" if ok else ": " + str(detail)))
        fails += 0 if ok else 1

    INVALID = 42
    for ver in (0, 1):
        u = "raw%d" % ver
        res = alter(addr, ver, [([("user", u)], [("producer_byte_rate", 1000.0, False)]),
                                ([("user", u), ("client-id", "c")], [("request_percentage", 2.5, False)]),
                                ([("client-id", None)], [("consumer_byte_rate", 4096.0, False)])])
        check("v%d alter three entities" % ver, [c for c, _, _ in res] == [0, 0, 0], res)
        check("v%d alter answer echoes the entity" % ver, res and res[0][2] == [("user", u)], res)
        bad = [
            ("unknown key", [("user", u)], [("no_such_quota", 1.0, False)]),
            ("ip entity", [("ip", "1.2.3.4")], [("producer_byte_rate", 1.0, False)]),
            ("unknown entity type", [("group", "g")], [("producer_byte_rate", 1.0, False)]),
            ("type twice", [("user", "a"), ("user", "b")], [("producer_byte_rate", 1.0, False)]),
            ("no entity", [], [("producer_byte_rate", 1.0, False)]),
            ("fractional byte rate", [("user", u)], [("producer_byte_rate", 1.5, False)]),
            ("negative value", [("user", u)], [("consumer_byte_rate", -5.0, False)]),
            ("zero controller_mutation_rate", [("user", u)], [("controller_mutation_rate", 0.0, False)]),
            ("key twice", [("user", u)], [("producer_byte_rate", 5.0, False), ("producer_byte_rate", 6.0, False)]),
        ]
        res = alter(addr, ver, [(e, o) for _, e, o in bad])
        for (what, _, _), (code, msg, _) in zip(bad, res):
            check("v%d %s is INVALID_REQUEST with a message" % (ver, what), code == INVALID and msg, (code, msg))
        check("v%d one answer per entry" % ver, len(res) == len(bad), len(res))
        res = alter(addr, ver, [([("user", "vo%d" % ver)], [("producer_byte_rate", 5.0, False)])], validate_only=True)
        check("v%d validate_only answers NONE" % ver, [c for c, _, _ in res] == [0], res)
        code, _, ents = describe(addr, ver, [("user", 0, "vo%d" % ver)])
        check("v%d validate_only stored nothing" % ver, code == 0 and ents == [], (code, ents))
        code, _, ents = describe(addr, ver, [("user", 0, u)], strict=True)
        check("v%d describe exact strict" % ver, code == 0 and ents == [([("user", u)], {"producer_byte_rate": 1000.0})],
              ents)
        code, _, ents = describe(addr, ver, [("user", 0, u)])
        want = sorted([str([("user", u)]), str([("client-id", "c"), ("user", u)])])
        check("v%d describe exact non-strict includes the pair" % ver, code == 0 and sorted(str(e) for e, _ in ents) == want,
              ents)
        code, _, ents = describe(addr, ver, [("client-id", 1, None)], strict=True)
        check("v%d describe default client-id" % ver,
              code == 0 and ents == [([("client-id", None)], {"consumer_byte_rate": 4096.0})], ents)
        code, msg, ents = describe(addr, ver, [("user", 0, None)])
        check("v%d describe exact without a name is INVALID_REQUEST" % ver, code == INVALID and ents is None and msg,
              (code, msg, ents))
        code, msg, ents = describe(addr, ver, [("user", 2, None), ("user", 1, None)])
        check("v%d describe type twice is INVALID_REQUEST" % ver, code == INVALID and ents is None, (code, ents))
        res = alter(addr, ver, [([("user", u)], [("producer_byte_rate", 0.0, True)])])
        code, _, ents = describe(addr, ver, [("user", 0, u)], strict=True)
        check("v%d remove the last key removes the entity" % ver, res[0][0] == 0 and ents == [], (res, ents))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
