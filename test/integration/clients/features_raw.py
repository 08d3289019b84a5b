#!/usr/bin/env python3
"""Raw frames for issue 20 (transactions-v2 side): ApiVersions v3/v4 feature
fields, UpdateFeatures (57) v0-2 and DescribeTopicPartitions (75) v0 with its
cursor, against one node that has topics dtp-a (5 partitions) and dtp-b (3),
created here through kafka-python. Expected values follow from what this
script did (levels it set, partitions it created).

usage: features_raw.py HOST:PORT
Prints "PASS what" / "FAIL what: why"; exit 1 on a FAIL."""
import struct
import sys
import time

from kwire import Rd, call, cstr, uvarint

ADDR = sys.argv[1]
fails = 0


def check(what, ok, why=""):
    global fails
    if ok:
        print("PASS " + what)
    else:
        fails += 1
        print("FAIL %s: %s" % (what, why))
    sys.stdout.flush()


# ---- ApiVersions ---------------------------------------------------------

def api_versions(ver):
    body = cstr(b"features-raw") + cstr(b"1.0") + b"\x00"
    r = call(ADDR, 18, ver, body, flexible=True, resp_tags=False)
    out = {"error": r.i16()}
    keys = {}
    for _ in range(r.count()):
        k, lo, hi = r.i16(), r.i16(), r.i16()
        r.tags()
        keys[k] = (lo, hi)
    out["keys"] = keys
    r.i32()
    out["supported"], out["finalized"], out["epoch"] = {}, {}, -1
    for _ in range(r.uv()):
        tag, size = r.uv(), r.uv()
        t = Rd(r.take(size))
        if tag == 0:
            for _ in range(t.count()):
                name = t.s(); lo = t.i16(); hi = t.i16(); t.tags()
                out["supported"][name] = (lo, hi)
        elif tag == 1:
            out["epoch"] = t.i64()
        elif tag == 2:
            for _ in range(t.count()):
                name = t.s(); mx = t.i16(); mn = t.i16(); t.tags()
                out["finalized"][name] = (mn, mx)
    return out


# ---- UpdateFeatures ------------------------------------------------------

def update(ver, updates, validate_only=False):
    """updates: (name, level, upgrade_type) ; v0 sends allow_downgrade =
    upgrade_type != 1. Returns (top error, top message, {name: (err, msg)})."""
    b = struct.pack(">i", 30000) + uvarint(len(updates) + 1)
    for name, level, utype in updates:
        b += cstr(name.encode()) + struct.pack(">h", level)
        b += (b"\x01" if utype != 1 else b"\x00") if ver == 0 else struct.pack(">b", utype)
        b += b"\x00"
    if ver >= 1:
        b += b"\x01" if validate_only else b"\x00"
    b += b"\x00"
    r = call(ADDR, 57, ver, b)
    r.i32()
    err, msg = r.i16(), r.s()
    res = {}
    if ver <= 1:
        for _ in range(r.count()):
            name, e, m = r.s(), r.i16(), r.s()
            r.tags()
            res[name] = (e, m)
    r.tags()
    if r.i != len(r.b):
        raise ValueError("%d trailing bytes in UpdateFeatures v%d" % (len(r.b) - r.i, ver))
    return err, msg, res


# ---- DescribeTopicPartitions ---------------------------------------------

def dtp(topics, limit, cursor=None):
    b = uvarint(len(topics) + 1)
    for t in topics:
        b += cstr(t.encode()) + b"\x00"
    b += struct.pack(">i", limit)
    if cursor is None:
        b += b"\xff"
    else:
        b += b"\x01" + cstr(cursor[0].encode()) + struct.pack(">i", cursor[1]) + b"\x00"
    b += b"\x00"
    r = call(ADDR, 75, 0, b)
    r.i32()
    topics_out = []
    for _ in range(r.count()):
        e, name, tid, internal = r.i16(), r.s(), r.take(16), r.i8()
        parts = []
        for _ in range(r.count()):
            pe, idx, leader, lepoch = r.i16(), r.i32(), r.i32(), r.i32()
            reps = r.arr(r.i32); isr = r.arr(r.i32)
            elr = r.count(); [r.i32() for _ in range(max(elr, 0))]
            lke = r.count(); [r.i32() for _ in range(max(lke, 0))]
            off = r.arr(r.i32)
            r.tags()
            parts.append((pe, idx, leader, reps, isr, off))
        r.i32()
        r.tags()
        topics_out.append({"error": e, "name": name, "id": tid, "internal": internal, "parts": parts})
    cur = None
    if r.i8() >= 0:
        cur = (r.s(), r.i32())
        r.tags()
    r.tags()
    if r.i != len(r.b):
        raise ValueError("%d trailing bytes in DescribeTopicPartitions" % (len(r.b) - r.i))
    return topics_out, cur


def summary(topics):
    return [(t["name"], t["error"], [p[1] for p in t["parts"]]) for t in topics]


def main():
    # --- ApiVersions: what a new cluster finalized --------------------------
    v4 = api_versions(4)
    v3 = api_versions(3)
    check("ApiVersions v4 advertises UpdateFeatures 0-2 and DescribeTopicPartitions 0",
          v4["keys"].get(57) == (0, 2) and v4["keys"].get(75) == (0, 0), "%s %s" % (v4["keys"].get(57), v4["keys"].get(75)))
    check("ApiVersions v4 advertises AddPartitionsToTxn 0-5, EndTxn 0-5, Produce up to 12, TxnOffsetCommit up to 5",
          v4["keys"].get(24) == (0, 5) and v4["keys"].get(26) == (0, 5) and v4["keys"].get(0, (0, 0))[1] == 12
          and v4["keys"].get(28, (0, 0))[1] == 5, str([v4["keys"].get(k) for k in (24, 26, 0, 28)]))
    check("ApiVersions v4: supported metadata.version 7-25, group.version 0-1, transaction.version 0-2",
          v4["supported"] == {"metadata.version": (7, 25), "group.version": (0, 1), "transaction.version": (0, 2)},
          str(v4["supported"]))
    check("ApiVersions v3 leaves out the supported features with minimum 0",
          v3["supported"] == {"metadata.version": (7, 25)}, str(v3["supported"]))
    check("a new cluster finalizes metadata.version 25, group.version 1, transaction.version 2 (epoch >= 0)",
          v4["finalized"] == {"metadata.version": (25, 25), "group.version": (1, 1), "transaction.version": (2, 2)}
          and v4["epoch"] >= 0,
          "%s epoch %d" % (v4["finalized"], v4["epoch"]))
    epoch0 = v4["epoch"]

    # --- UpdateFeatures errors (nothing changes) ----------------------------
    e, m, res = update(1, [("group.version", 0, 1)])
    check("UpdateFeatures v1: a downgrade with upgrade type 1 is INVALID_UPDATE_VERSION (95)",
          e == 0 and res.get("group.version", (0,))[0] == 95, "%s %s %s" % (e, m, res))
    e, m, res = update(1, [("metadata.version", 26, 1)])
    check("UpdateFeatures v1: metadata.version 26 (above the supported 25) is 95",
          res.get("metadata.version", (0,))[0] == 95, str(res))
    e, m, res = update(1, [("transaction.version", 3, 1)])
    check("UpdateFeatures v1: transaction.version 3 (above the supported 2) is 95",
          res.get("transaction.version", (0,))[0] == 95, str(res))
    e, m, res = update(1, [("metadata.version", 24, 2)])
    check("UpdateFeatures v1: a metadata.version downgrade is 95 even as a safe downgrade",
          res.get("metadata.version", (0,))[0] == 95, str(res))
    e, m, res = update(1, [("group.version", 1, 2)])
    check("UpdateFeatures v1: level 1 -> 1 as a downgrade type is fine (NONE)", res.get("group.version", (1,))[0] == 0, str(res))
    e, m, res = update(1, [("no.such.feature", 1, 1)])
    check("UpdateFeatures v1: an unknown feature is 95 with a message naming it",
          res.get("no.such.feature", (0,))[0] == 95 and "no.such.feature" in (res["no.such.feature"][1] or ""), str(res))
    e, m, res = update(2, [("no.such.feature", 1, 1)])
    check("UpdateFeatures v2: the error is top-level (no per-feature results)",
          e == 95 and res == {} and "no.such.feature" in (m or ""), "%s %s %s" % (e, m, res))
    e, m, res = update(1, [("group.version", 0, 2), ("group.version", 1, 1)])
    check("UpdateFeatures v1: a feature named twice is INVALID_REQUEST (42) at the top", e == 42 and res == {},
          "%s %s %s" % (e, m, res))
    e, m, res = update(1, [("group.version", 0, 2), ("metadata.version", 99, 1)])
    check("UpdateFeatures v1: one bad update fails the request, the good one gets NONE",
          res.get("metadata.version", (0,))[0] == 95 and res.get("group.version", (9,))[0] == 0, str(res))
    e, m, res = update(1, [("group.version", 0, 2)], validate_only=True)
    check("UpdateFeatures v1 validate_only downgrade: NONE", e == 0 and res.get("group.version", (9,))[0] == 0, str(res))
    now = api_versions(4)
    check("nothing above changed the finalized levels or the epoch",
          now["finalized"] == v4["finalized"] and now["epoch"] == epoch0, "%s %d" % (now["finalized"], now["epoch"]))

    # --- UpdateFeatures that apply -------------------------------------------
    e, m, res = update(1, [("group.version", 0, 2)])
    now = api_versions(4)
    check("UpdateFeatures v1: group.version removed by a safe downgrade; no longer finalized, epoch moved",
          res.get("group.version", (9,))[0] == 0 and "group.version" not in now["finalized"] and now["epoch"] > epoch0,
          "%s %s %d" % (res, now["finalized"], now["epoch"]))
    e, m, res = update(0, [("group.version", 1, 1)])
    now = api_versions(4)
    check("UpdateFeatures v0: group.version back to 1", e == 0 and res.get("group.version", (9,))[0] == 0 and
          now["finalized"].get("group.version") == (1, 1), "%s %s" % (res, now["finalized"]))
    e, m, res = update(0, [("group.version", 0, 2)])
    now = api_versions(4)
    check("UpdateFeatures v0: allow_downgrade removes it", res.get("group.version", (9,))[0] == 0 and
          "group.version" not in now["finalized"], "%s %s" % (res, now["finalized"]))
    e, m, res = update(2, [("group.version", 1, 1)])
    now = api_versions(4)
    check("UpdateFeatures v2: group.version 1 again (top-level NONE)", e == 0 and m is None and
          now["finalized"].get("group.version") == (1, 1), "%s %s %s" % (e, m, now["finalized"]))
    check("a new cluster has transaction.version 2 finalized (Kafka 4.0's)",
          now["finalized"].get("transaction.version") == (2, 2), str(now["finalized"]))
    e, m, res = update(1, [("transaction.version", 0, 2)])
    now = api_versions(4)
    check("UpdateFeatures v1: transaction.version down to 0 (safe downgrade: transactions v1)",
          res.get("transaction.version", (9,))[0] == 0 and "transaction.version" not in now["finalized"],
          "%s %s" % (res, now["finalized"]))
    e, m, res = update(1, [("transaction.version", 2, 1)])
    now = api_versions(4)
    check("UpdateFeatures v1: transaction.version upgraded to 2 again", res.get("transaction.version", (9,))[0] == 0 and
          now["finalized"].get("transaction.version") == (2, 2), "%s %s" % (res, now["finalized"]))

    # --- DescribeTopicPartitions ----------------------------------------------
    from kafka.admin import KafkaAdminClient, NewTopic
    adm = KafkaAdminClient(bootstrap_servers=ADDR, request_timeout_ms=20000)
    adm.create_topics([NewTopic("dtp-a", 5, 1), NewTopic("dtp-b", 3, 1)])
    adm.close()
    deadline = time.time() + 20
    while time.time() < deadline:
        t, c = dtp(["dtp-a", "dtp-b"], 100)
        if [x["error"] for x in t] == [0, 0]:
            break
        time.sleep(0.2)
    t, c = dtp(["dtp-b", "dtp-a"], 100)
    check("DTP: both topics sorted by name, all partitions, no cursor",
          summary(t) == [("dtp-a", 0, [0, 1, 2, 3, 4]), ("dtp-b", 0, [0, 1, 2])] and c is None, "%s %s" % (summary(t), c))
    p = t[0]["parts"][0]
    check("DTP: partition fields (leader 1, replicas [1], isr [1], no offline), topic id set, not internal",
          p[0] == 0 and p[2] == 1 and p[3] == [1] and p[4] == [1] and p[5] == [] and t[0]["id"] != b"\0" * 16
          and t[0]["internal"] == 0, "%s" % (p,))
    t, c = dtp(["dtp-a", "dtp-b"], 4)
    check("DTP limit 4: dtp-a 0-3, next cursor (dtp-a, 4)",
          summary(t) == [("dtp-a", 0, [0, 1, 2, 3])] and c == ("dtp-a", 4), "%s %s" % (summary(t), c))
    t, c = dtp(["dtp-a", "dtp-b"], 4, c)
    check("DTP from that cursor: dtp-a 4, dtp-b 0-2, no cursor",
          summary(t) == [("dtp-a", 0, [4]), ("dtp-b", 0, [0, 1, 2])] and c is None, "%s %s" % (summary(t), c))
    t, c = dtp(["dtp-a", "dtp-b"], 5)
    check("DTP limit 5 (exactly dtp-a): next cursor (dtp-b, 0)",
          summary(t) == [("dtp-a", 0, [0, 1, 2, 3, 4])] and c == ("dtp-b", 0), "%s %s" % (summary(t), c))
    t, c = dtp(["dtp-a", "dtp-b"], 100, ("dtp-b", 1))
    check("DTP cursor (dtp-b, 1): dtp-b 1-2 only", summary(t) == [("dtp-b", 0, [1, 2])] and c is None,
          "%s %s" % (summary(t), c))
    t, c = dtp(["dtp-a"], 100, ("dtp-b", 0))
    check("DTP: a cursor topic not requested is INVALID_REQUEST (42) on each topic",
          summary(t) == [("dtp-a", 42, [])] and c is None, "%s %s" % (summary(t), c))
    t, c = dtp(["dtp-a", "nope", "dtp-a"], 100)
    check("DTP: unknown topic UNKNOWN_TOPIC_OR_PARTITION (3), duplicates answered once",
          summary(t) == [("dtp-a", 0, [0, 1, 2, 3, 4]), ("nope", 3, [])], "%s" % (summary(t),))
    t, c = dtp([], 100)
    names = [x["name"] for x in t]
    check("DTP with no topics: every topic, sorted", "dtp-a" in names and "dtp-b" in names and names == sorted(names),
          str(names))
    t, c = dtp(["dtp-a", "dtp-b"], 0)
    check("DTP limit 0 means the broker's limit (2000): everything", c is None and len(t) == 2, "%s %s" % (summary(t), c))
    return 1 if fails else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as ex:  # a crash is a failure with its reason
        print("FAIL features_raw crashed: %r" % (ex,))
        sys.exit(1)
