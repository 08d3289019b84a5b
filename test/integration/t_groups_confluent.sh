#!/usr/bin/env bash
# Consumer groups with confluent-kafka (librdkafka) against one skiff node:
# three consumers share a 6-partition topic (disjoint, covering); one is
# killed -9 and its partitions move within the session timeout;
# cooperative-sticky members keep their partitions when a third joins;
# commits survive a kill -9 of the node and every consumer resumes from
# them; ListGroups / DescribeGroups through the admin API.
. "$(dirname "$0")/lib.sh"

"$SK_PY" -c 'import confluent_kafka' 2>/dev/null || { echo "t_groups_confluent: confluent_kafka missing"; exit 1; }
GRP_SETS=(--set group.min.session.timeout.ms=1000 --set group.initial.rebalance.delay.ms=0
          --set offsets.topic.num.partitions=5)
sk_start_cluster 1 "${GRP_SETS[@]}"
B=127.0.0.1:${SK_KAFKA_PORT[1]}

cat > "$SK_TMP/g.py" <<'PY'
import json, os, sys, time
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

B, MODE = sys.argv[1], sys.argv[2]
SESSION_MS = 3000
fails = 0
def check(what, ok, detail=""):
    global fails
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else "  " + str(detail)), flush=True)
    if not ok: fails += 1

def consumer(group, **kw):
    conf = {'bootstrap.servers': B, 'group.id': group, 'auto.offset.reset': 'earliest',
            'session.timeout.ms': SESSION_MS, 'heartbeat.interval.ms': 200, 'enable.auto.commit': False}
    conf.update(kw)
    return Consumer(conf)

class Member:
    """A consumer whose current assignment is tracked through the callbacks."""
    def __init__(self, group, **kw):
        self.c = consumer(group, **kw)
        self.parts, self.revoked, self.assigns = set(), set(), 0
        self.c.subscribe(['t6'], on_assign=self.on_assign, on_revoke=self.on_revoke)
    def on_assign(self, c, ps):
        self.assigns += 1
        self.parts |= {p.partition for p in ps}
    def on_revoke(self, c, ps):
        gone = {p.partition for p in ps}
        self.revoked |= gone
        self.parts -= gone

def poll_until(members, cond, limit_s):
    t0 = time.time()
    while time.time() - t0 < limit_s:
        for m in members: m.c.poll(0.05)
        if cond(): return time.time() - t0
    return None

def covering(sets):
    allp = [p for s in sets for p in s]
    return len(allp) == 6 and set(allp) == set(range(6))

if MODE == 'member':                 # child: writes its assignment to a file
    m = Member(sys.argv[3])
    while True:
        m.c.poll(0.05)
        with open(sys.argv[4] + '.tmp', 'w') as f: json.dump(sorted(m.parts), f)
        os.replace(sys.argv[4] + '.tmp', sys.argv[4])

if MODE == 'setup':
    a = AdminClient({'bootstrap.servers': B})
    a.create_topics([NewTopic('t6', 6, 1)])['t6'].result()
    p = Producer({'bootstrap.servers': B})
    for i in range(60): p.produce('t6', value=b'v%d' % i, partition=i % 6)
    check("produced 60 messages", p.flush(10) == 0)

if MODE == 'three':
    import subprocess
    state = os.path.join(os.environ['SK_TMP'], 'child.json')
    child = subprocess.Popen([sys.executable, __file__, B, 'member', 'g3', state])
    m1, m2 = Member('g3'), Member('g3')
    def child_parts():
        try: return set(json.load(open(state)))
        except Exception: return set()
    t = poll_until([m1, m2], lambda: len(child_parts()) > 0 and len(m1.parts) > 0 and len(m2.parts) > 0
                   and covering([m1.parts, m2.parts, child_parts()]), 40)
    check("three consumers: assignments disjoint and covering 6 partitions", t is not None,
          (m1.parts, m2.parts, child_parts()))
    a = AdminClient({'bootstrap.servers': B})
    gs = {g.id: g for g in a.list_groups(timeout=10)}      # ListGroups + DescribeGroups
    g = gs.get('g3')
    check("ListGroups lists g3", g is not None, list(gs))
    check("DescribeGroups: g3 Stable, consumer protocol, 3 members",
          g is not None and g.state == 'Stable' and g.protocol_type == 'consumer' and len(g.members) == 3,
          g and (g.state, g.protocol_type, len(g.members)))
    child.kill(); child.wait()
    t = poll_until([m1, m2], lambda: covering([m1.parts, m2.parts]), 20)
    check("killed member's partitions move to the others", t is not None, (m1.parts, m2.parts))
    if t is not None:
        check("... within the session timeout (+2 s for the rejoin): %.1f s" % t, t < SESSION_MS / 1000 + 2, t)
    m1.c.close(); m2.c.close()
    g = {g.id: g for g in a.list_groups(timeout=10)}.get('g3')
    check("after every member left: g3 Empty", g is not None and g.state == 'Empty', g and g.state)

if MODE == 'coop':
    kw = {'partition.assignment.strategy': 'cooperative-sticky'}
    m1, m2 = Member('gcoop', **kw), Member('gcoop', **kw)
    t = poll_until([m1, m2], lambda: m1.parts and m2.parts and covering([m1.parts, m2.parts]), 30)
    check("cooperative: two members cover 6 partitions", t is not None, (m1.parts, m2.parts))
    g = {g.id: g for g in AdminClient({'bootstrap.servers': B}).list_groups(timeout=10)}.get('gcoop')
    check("cooperative-sticky selected", g is not None and g.protocol == 'cooperative-sticky', g and g.protocol)
    a1, a2 = set(m1.parts), set(m2.parts)
    m1.revoked.clear(); m2.revoked.clear()
    m3 = Member('gcoop', **kw)
    t = poll_until([m1, m2, m3], lambda: m3.parts and covering([m1.parts, m2.parts, m3.parts]), 30)
    check("cooperative: third member gets partitions, still covering", t is not None, (m1.parts, m2.parts, m3.parts))
    check("members keep their other partitions (m1)", m1.parts <= a1 and m1.revoked == a1 - m1.parts and m1.parts,
          (a1, m1.parts, m1.revoked))
    check("members keep their other partitions (m2)", m2.parts <= a2 and m2.revoked == a2 - m2.parts and m2.parts,
          (a2, m2.parts, m2.revoked))
    for m in (m1, m2, m3): m.c.close()

if MODE == 'commit':
    c = consumer('gcommit')
    c.subscribe(['t6'])
    n, t0 = 0, time.time()
    while n < 60 and time.time() - t0 < 30:
        msg = c.poll(0.2)
        if msg is not None and not msg.error(): n += 1
    check("consumed 60 messages", n == 60, n)
    tps = [TopicPartition('t6', p, 3 + p) for p in range(6)]
    res = c.commit(offsets=tps, asynchronous=False)
    check("commit accepted", all(r.error is None for r in res), res)
    got = c.committed([TopicPartition('t6', p) for p in range(6)], timeout=10)
    check("committed() returns the commits", [r.offset for r in got] == [3 + p for p in range(6)], got)
    c.close()

if MODE == 'resume':
    c = consumer('gcommit')
    got = c.committed([TopicPartition('t6', p) for p in range(6)], timeout=20)
    check("after node kill -9 + restart: committed offsets kept", [r.offset for r in got] == [3 + p for p in range(6)], got)
    c.subscribe(['t6'])
    first, t0 = {}, time.time()
    while len(first) < 6 and time.time() - t0 < 30:
        msg = c.poll(0.2)
        if msg is not None and not msg.error(): first.setdefault(msg.partition(), msg.offset())
    check("consumption resumes from the committed offsets", first == {p: 3 + p for p in range(6)}, first)
    c.close()

sys.exit(1 if fails else 0)
PY

export SK_TMP
run() { local t0=$SECONDS rc; timeout 90 "$SK_PY" "$SK_TMP/g.py" "$B" "$@"; rc=$?; sk_log "$1: $((SECONDS - t0)) s"; return $rc; }
sk_check "setup" run setup
sk_check "three consumers, one killed" run three
sk_check "cooperative-sticky incremental rebalance" run coop
sk_check "commit" run commit
sk_kill9_node 1
sk_start_node 1 "${GRP_SETS[@]}"
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 || sk_fail "node did not restart"
sk_check "resume from committed offsets after restart" run resume
[ "$SK_FAILS" -eq 0 ] || sk_dump_logs
sk_summary t_groups_confluent
