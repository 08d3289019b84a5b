"""KIP-848 consumer groups with raw frames against one node (driven by
t_cgroup_frames.sh): three members on six partitions, reconciliation to
disjoint complete assignments, ConsumerGroupHeartbeat v0 and v1 and
ConsumerGroupDescribe v0, the error cases, static membership, a regex
picking up a new topic, member epochs on OffsetCommit v9, ListGroups v5
types, and (phase after-restart) the state restored from __consumer_offsets.

usage: cgroup_frames.py BOOTSTRAP phase STATEFILE   (phase: main | after-restart)
Prints one PASS/FAIL line per check."""
import json
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import cgroup_wire as w  # noqa: E402

B, PHASE, STATE = sys.argv[1], sys.argv[2], sys.argv[3]
fails = 0

NONE, UNKNOWN_TOPIC, INVALID_REQUEST, UNKNOWN_MEMBER = 0, 3, 42, 25
GROUP_ID_NOT_FOUND, FENCED_INSTANCE, FENCED_EPOCH, UNRELEASED = 69, 82, 110, 111
UNSUPPORTED_ASSIGNOR, STALE_EPOCH, INVALID_REGEX = 112, 113, 128


def check(what, ok, detail=""):
    global fails
    print(("PASS " if ok else "FAIL ") + what + ("" if ok else ": " + str(detail)[:3000]), flush=True)
    if not ok:
        fails += 1


class Member:
    """One consumer-protocol member doing what a client does: join, then
    heartbeat with the partitions it owns, taking each new assignment."""

    def __init__(self, group, topics=None, regex=None, ver=1, member_id="", instance=None, assignor=None):
        self.group, self.topics, self.regex, self.ver = group, topics, regex, ver
        self.member_id, self.instance, self.assignor = member_id, instance, assignor
        self.epoch, self.owned, self.last = 0, {}, None

    def beat(self, **over):
        kw = dict(group=self.group, member=self.member_id, epoch=self.epoch, owned=self.owned)
        if self.epoch == 0:
            kw.update(topics=self.topics, regex=self.regex, instance=self.instance, assignor=self.assignor,
                      rebalance_ms=30000)
        kw.update(over)
        a = w.heartbeat(B, ver=self.ver, **kw)
        self.last = a
        if a["error"] == NONE:
            if a["member_id"]:
                self.member_id = a["member_id"]
            self.epoch = a["epoch"]
            if a["assignment"] is not None:
                self.owned = {t: sorted(ps) for t, ps in a["assignment"].items() if ps}
        return a

    def parts(self):
        return {(t, p) for t, ps in self.owned.items() for p in ps}


def settle(members, rounds=60):
    """Heartbeats until every member's epoch equals the group's assignment
    epoch and owns its target (no member ever owns what another owns)."""
    overlap = None
    for _ in range(rounds):
        for m in members:
            m.beat()
            seen = {}
            for x in members:
                for tp in x.parts():
                    if tp in seen and overlap is None:
                        overlap = (tp, seen[tp], x.member_id)
                    seen[tp] = x.member_id
        d = w.describe(B, [members[0].group])[0]
        if d["state"] == "Stable" and all(
                {(t, p) for (t, _), ps in mm["assignment"].items() for p in ps} ==
                {(t, p) for (t, _), ps in mm["target"].items() for p in ps} for mm in d["members"]) and all(
                m.epoch == d["assignment_epoch"] for m in members):
            return d, overlap
    return w.describe(B, [members[0].group])[0], overlap


def disjoint_complete(members, nparts_by_topic):
    allp = [tp for m in members for tp in m.parts()]
    want = {(t, p) for t, n in nparts_by_topic.items() for p in range(n)}
    return len(allp) == len(set(allp)) and set(allp) == want, sorted(len(m.parts()) for m in members)


def plain(groups):
    """Describe answers as JSON-able values (assignments as sorted lists)."""
    out = []
    for g in groups:
        g = dict(g)
        g["members"] = [dict(m, assignment=sorted([t.hex(), n, sorted(ps)] for (t, n), ps in m["assignment"].items()),
                             target=sorted([t.hex(), n, sorted(ps)] for (t, n), ps in m["target"].items()))
                        for m in g["members"]]
        out.append(g)
    return out


def topic_ids(d):
    ids = {}
    for m in d["members"]:
        for (tid, name) in list(m["assignment"]) + list(m["target"]):
            ids[name] = tid
    return ids


if PHASE == "main":
    for g in ("g1", "g2", "g3", "g4", "g5", "g9", "nogroup"):
        check("FindCoordinator " + g, w.find_coordinator(B, g) == NONE)
    # ---- three members, six partitions, uniform ----
    ms = [Member("g1", topics=["t6"], ver=1, member_id="client-made-id-1"),
          Member("g1", topics=["t6"], ver=0),
          Member("g1", topics=["t6"], ver=1, member_id="client-made-id-3")]
    a = ms[0].beat()
    check("first join: epoch 1, the client's member id kept (v1)", a["error"] == NONE and a["epoch"] == 1
          and a["member_id"] == "client-made-id-1" and a["interval"] == 1000, a)
    a = ms[1].beat()
    check("v0 join without member id: the coordinator makes one (22 chars)", a["error"] == NONE
          and len(a["member_id"] or "") == 22, a)
    ms[2].beat()
    d, overlap = settle(ms)
    ids = topic_ids(d)
    tid6 = ids.get("t6")
    ok, sizes = disjoint_complete(ms, {tid6: 6})
    check("3 members on 6 partitions: disjoint and complete", ok, (sizes, [m.owned for m in ms]))
    check("uniform: 2 partitions each", sizes == [2, 2, 2], sizes)
    check("never two owners while reconciling", overlap is None, overlap)
    check("describe: Stable, assignor uniform, 3 members, epochs agree", d["state"] == "Stable"
          and d["assignor"] == "uniform" and len(d["members"]) == 3
          and d["epoch"] == d["assignment_epoch"], d)
    check("describe: client id and host", len(d["members"]) == 3 and all(m["client_id"] == "cgp-test" and m["client_host"].startswith("/127.")
                                              for m in d["members"]), d["members"])
    epoch_before = d["epoch"]

    # ---- errors ----
    a = w.heartbeat(B, group="g1", member="nobody", epoch=5, owned={})
    check("unknown member: UNKNOWN_MEMBER_ID", a["error"] == UNKNOWN_MEMBER, a)
    a = w.heartbeat(B, group="g1", member=ms[0].member_id, epoch=ms[0].epoch + 7, owned={})
    check("epoch ahead of the coordinator: FENCED_MEMBER_EPOCH", a["error"] == FENCED_EPOCH, a)
    # owned partitions are bounded and non-negative (issue 19 review): the
    # member's real epoch, so only the list can be wrong
    tid0 = next(iter(ms[0].owned)) if ms[0].owned else b"\x00" * 16
    bad = {t: list(ps) for t, ps in ms[0].owned.items()}
    bad.setdefault(tid0, []).append(-1)
    a = w.heartbeat(B, group="g1", member=ms[0].member_id, epoch=ms[0].epoch, owned=bad)
    check("owned partition index -1: INVALID_REQUEST", a["error"] == INVALID_REQUEST, a)
    # two topics of 500001 (one array may hold 10^6, KP_ARRAY_COUNT_MAX)
    a = w.heartbeat(B, group="g1", member=ms[0].member_id, epoch=ms[0].epoch,
                    owned={tid0: range(500001), b"\xff" * 16: range(500001)})
    check("1000002 owned partitions (> BK_GRP_CG_PARTS_MAX): INVALID_REQUEST", a["error"] == INVALID_REQUEST, a)
    a = w.heartbeat(B, group="g1", member=ms[0].member_id, epoch=ms[0].epoch, owned=ms[0].owned)
    check("the member's own list after those: NONE, same epoch", a["error"] == NONE and a["epoch"] == ms[0].epoch, a)
    a = w.heartbeat(B, group="", member="", epoch=0, topics=["t6"])
    check("empty group id: INVALID_REQUEST", a["error"] == INVALID_REQUEST, a)
    a = w.heartbeat(B, group="g1", member="", epoch=0)
    check("join without subscription: INVALID_REQUEST", a["error"] == INVALID_REQUEST, a)
    a = w.heartbeat(B, group="g1", member="x", epoch=-3)
    check("epoch -3: INVALID_REQUEST", a["error"] == INVALID_REQUEST, a)
    a = w.heartbeat(B, group="g9", member="m", epoch=0, topics=["t6"], assignor="sticky")
    check("unknown assignor: UNSUPPORTED_ASSIGNOR", a["error"] == UNSUPPORTED_ASSIGNOR, a)
    a = w.heartbeat(B, group="g9", member="m", epoch=0, regex="t[", topics=None)
    check("bad regex: INVALID_REGULAR_EXPRESSION", a["error"] == INVALID_REGEX, a)
    a = w.heartbeat(B, group="nogroup", member="m", epoch=3, owned={})
    check("heartbeat to an unknown group: GROUP_ID_NOT_FOUND", a["error"] == GROUP_ID_NOT_FOUND, a)
    dd = w.describe(B, ["nogroup", "g1"])
    check("describe unknown group: GROUP_ID_NOT_FOUND, known one NONE",
          dd[0]["error"] == GROUP_ID_NOT_FOUND and dd[1]["error"] == NONE, dd)

    # ---- offsets with member epochs ----
    m0 = ms[0]
    e = w.commit_v9(B, "g1", m0.member_id, m0.epoch, "t6", 0, 42)
    check("OffsetCommit v9 with the member epoch: NONE", e == NONE, e)
    e = w.commit_v9(B, "g1", m0.member_id, m0.epoch - 1, "t6", 0, 43)
    check("OffsetCommit v9 with an older epoch: STALE_MEMBER_EPOCH", e == STALE_EPOCH, e)
    e = w.commit_v9(B, "g1", "nobody", m0.epoch, "t6", 0, 43)
    check("OffsetCommit v9 by an unknown member: UNKNOWN_MEMBER_ID", e == UNKNOWN_MEMBER, e)
    err, gl = w.list_groups_v5(B, ["consumer"])
    check("ListGroups v5 type consumer: g1 with type consumer", err == NONE
          and ("g1", "consumer", "Stable", "consumer") in gl, gl)
    err, gl = w.list_groups_v5(B, ["classic"])
    check("ListGroups v5 type classic: not g1", err == NONE and all(g[0] != "g1" for g in gl), gl)

    # ---- a member leaves: its partitions move, nobody owns twice ----
    a = ms[2].beat(epoch=-1)
    check("leave (epoch -1): answered with epoch -1", a["error"] == NONE and a["epoch"] == -1, a)
    rest = ms[:2]
    d, overlap = settle(rest)
    ok, sizes = disjoint_complete(rest, {tid6: 6})
    check("after a leave: 2 members own all 6, 3 each", ok and sizes == [3, 3], (sizes, d))
    check("after a leave: never two owners", overlap is None, overlap)
    check("after a leave: the group epoch moved", d["epoch"] > epoch_before, d)

    # ---- static membership ----
    s1 = Member("g2", topics=["t6"], instance="inst-a", member_id="static-a-1")
    s2 = Member("g2", topics=["t6"], instance="inst-b", member_id="static-b-1")
    s1.beat()
    s2.beat()
    d, _ = settle([s1, s2])
    before = s1.parts()
    a = w.heartbeat(B, group="g2", member="static-a-2", epoch=0, instance="inst-a", topics=["t6"])
    check("same instance id while in use: UNRELEASED_INSTANCE_ID", a["error"] == UNRELEASED, a)
    a = w.heartbeat(B, group="g2", member=s1.member_id, epoch=s1.epoch, instance="inst-b", owned={})
    check("another member's instance id: FENCED_INSTANCE_ID", a["error"] == FENCED_INSTANCE, a)
    a = s1.beat(epoch=-2, instance="inst-a")
    check("static leave (epoch -2): answered with epoch -2", a["error"] == NONE and a["epoch"] == -2, a)
    e2 = w.describe(B, ["g2"])[0]
    s1b = Member("g2", topics=["t6"], instance="inst-a", member_id="static-a-2")
    a = s1b.beat()
    after = s1b.parts()
    e3 = w.describe(B, ["g2"])[0]
    check("static rejoin: same assignment, no new group epoch", a["error"] == NONE and after == before
          and e3["epoch"] == e2["epoch"], (a, before, after, e2["epoch"], e3["epoch"]))

    # ---- range assignor chosen by the members ----
    r1 = Member("g3", topics=["t6"], assignor="range", member_id="r-a")
    r2 = Member("g3", topics=["t6"], assignor="range", member_id="r-b")
    r1.beat()
    r2.beat()
    d, overlap = settle([r1, r2])
    check("range: assignor range, contiguous ranges by member id",
          d["assignor"] == "range" and sorted(p for _, p in r1.parts()) == [0, 1, 2]
          and sorted(p for _, p in r2.parts()) == [3, 4, 5], (d["assignor"], r1.owned, r2.owned))

    # ---- regex subscription picks up a topic created later ----
    x = Member("g4", regex="rx-.*", member_id="rx-1")
    a = x.beat()
    check("regex join (v1): no topic matches yet, empty assignment", a["error"] == NONE
          and (a["assignment"] == {} or a["assignment"] is None), a)
    json.dump({"ms": [(m.member_id, m.epoch) for m in rest], "g2": e3["epoch"], "tid6": tid6.hex(),
               "rx": (x.member_id, x.epoch), "s1b": s1b.member_id}, open(STATE, "w"))
    print("READY-FOR-TOPIC", flush=True)
    sys.stdin.readline()           # the script creates rx-new (3 partitions)
    got = set()
    for _ in range(60):
        x.beat()
        got = x.parts()
        if len(got) == 3:
            break
        time.sleep(0.1)
    check("regex: the new topic's 3 partitions assigned without a rejoin", len(got) == 3, (got, x.last))
    # v0 ignores the regex field (it does not exist there)
    a = w.heartbeat(B, ver=0, group="g5", member="", epoch=0, topics=["t6"])
    check("v0 join by names: assignment of all 6", a["error"] == NONE
          and sum(len(p) for p in (a["assignment"] or {}).values()) == 6, a)
    st = json.load(open(STATE))
    st["rx"] = (x.member_id, x.epoch)
    json.dump(st, open(STATE, "w"))
    d = w.describe(B, ["g1", "g2", "g3", "g4"])
    json.dump(plain(d), open(STATE + ".describe", "w"))
else:
    st = json.load(open(STATE))
    before = json.load(open(STATE + ".describe"))
    d = None
    for _ in range(100):
        try:
            d = w.describe(B, ["g1", "g2", "g3", "g4"])
            if all(g["error"] == NONE for g in d):
                break
        except (ValueError, OSError):
            pass
        time.sleep(0.1)
    norm = json.loads(json.dumps(plain(d or [])))

    def key(g):
        return [g["group_id"], g["state"], g["epoch"], g["assignment_epoch"], g["assignor"],
                sorted([m["member_id"], m["epoch"], m["instance_id"], m["assignment"], m["target"]]
                       for m in g["members"])]
    check("after restart: every group exactly as before (epochs, targets, assignments)",
          [key(g) for g in norm] == [key(g) for g in before],
          [(x, y) for x, y in zip([key(g) for g in norm], [key(g) for g in before]) if x != y])
    # the members carry on with their epochs: no rejoin, no new epoch
    ok = True
    for mid, ep in st["ms"]:
        a = w.heartbeat(B, group="g1", member=mid, epoch=ep, owned=None)
        ok = ok and a["error"] == NONE and a["epoch"] == ep
    g1 = w.describe(B, ["g1"])[0]
    check("after restart: members heartbeat on with their epochs, group epoch unchanged",
          ok and g1["epoch"] == [g for g in norm if g["group_id"] == "g1"][0]["epoch"], g1)
sys.exit(1 if fails else 0)
