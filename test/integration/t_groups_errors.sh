#!/usr/bin/env bash
# Group protocol errors with raw kafka-python requests against one node:
# a member joins (v0 JoinGroup held until the join completes on the timer)
# and syncs; commits and heartbeats from unknown members and stale
# generations get UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION, unknown topics
# UNKNOWN_TOPIC_OR_PARTITION, a simple consumer (generation -1) may commit;
# LeaveGroup of an unknown member, DeleteGroups of an active group
# (NON_EMPTY_GROUP) and of an emptied one, ListGroups / DescribeGroups;
# SIGTERM while a JoinGroup is held answers it and stops promptly; after
# the restart the group is back (same member, same generation) from the log.
. "$(dirname "$0")/lib.sh"

"$SK_PY" -c 'import kafka' 2>/dev/null || { echo "t_groups_errors: kafka-python missing"; exit 1; }
sk_start_cluster 1 --set group.min.session.timeout.ms=1000 --set group.initial.rebalance.delay.ms=0 \
  --set offsets.topic.num.partitions=3
B=127.0.0.1:${SK_KAFKA_PORT[1]}

cat > "$SK_TMP/e.py" <<'PY'
import sys, time
from kafka import KafkaClient
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.commit import GroupCoordinatorRequest_v0, OffsetCommitRequest_v2, OffsetFetchRequest_v1
from kafka.protocol.group import JoinGroupRequest_v0, SyncGroupRequest_v0, HeartbeatRequest_v0, LeaveGroupRequest_v0
from kafka.protocol.admin import ListGroupsRequest_v0, DescribeGroupsRequest_v0, DeleteGroupsRequest_v0

B = sys.argv[1]
AFTER = sys.argv[2] == 'after-restart'
fails = 0
def check(what, ok, detail=""):
    global fails
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else "  " + str(detail)), flush=True)
    if not ok: fails += 1

NONE, UNKNOWN_TOPIC, COORD_NOT_AVAIL, ILLEGAL_GEN, UNKNOWN_MEMBER, NON_EMPTY = 0, 3, 15, 22, 25, 68
cl = KafkaClient(bootstrap_servers=B)
def call(req):
    while not cl.ready(1): cl.poll(timeout_ms=100)
    f = cl.send(1, req)
    cl.poll(future=f, timeout_ms=15000)
    if not f.is_done: raise RuntimeError("no answer to %r" % req)
    if f.failed(): raise f.exception
    return f.value

if AFTER:                                # the group state came back from the log
    mid = open(sys.argv[3]).read()
    r = None
    for _ in range(50):
        r = call(DescribeGroupsRequest_v0(['ghold'])).groups[0]
        if r[0] == NONE: break
        time.sleep(0.1)
    check("after restart: ghold Stable with its first member", r[0] == NONE and r[2] == 'Stable'
          and [x[0] for x in r[5]] == [mid], r)
    check("after restart: same generation (heartbeat gen 1 ok)",
          call(HeartbeatRequest_v0('ghold', 1, mid)).error_code == NONE)
    r = call(OffsetFetchRequest_v1('gsimple', [('t2', [0])]))
    check("after restart: committed offset kept", r.topics[0][1][0][1] == 42, r)
    sys.exit(1 if fails else 0)

KafkaAdminClient(bootstrap_servers=B).create_topics([NewTopic('t2', 2, 1)])
errs = []
for _ in range(50):                       # the first lookup creates __consumer_offsets
    r = call(GroupCoordinatorRequest_v0('gbad'))
    errs.append(r.error_code)
    if r.error_code == NONE: break
    time.sleep(0.1)
check("FindCoordinator v0: COORDINATOR_NOT_AVAILABLE while creating, then node 1",
      errs[0] == COORD_NOT_AVAIL and errs[-1] == NONE and r.coordinator_id == 1, (errs, r))

r = call(JoinGroupRequest_v0('gbad', 10000, '', 'consumer', [('range', b'meta')]))
m = r.member_id
check("JoinGroup v0: generation 1, the new member leads", r.error_code == NONE and r.generation_id == 1
      and r.leader_id == m and len(r.members) == 1 and r.members[0][1] == b'meta', r)
r = call(SyncGroupRequest_v0('gbad', 1, m, [(m, b'assign-1')]))
check("SyncGroup v0: the leader's assignment comes back", r.error_code == NONE and r.member_assignment == b'assign-1', r)

def commit(gen, member, topic='t2', part=0, off=5, group='gbad'):
    r = call(OffsetCommitRequest_v2(group, gen, member, -1, [(topic, [(part, off, 'md')])]))
    return r.topics[0][1][0][1]
check("OffsetCommit by the member", commit(1, m) == NONE)
check("OffsetCommit with a stale generation: ILLEGAL_GENERATION", commit(7, m) == ILLEGAL_GEN, commit(7, m))
check("OffsetCommit from an unknown member: UNKNOWN_MEMBER_ID", commit(1, 'nobody') == UNKNOWN_MEMBER,
      commit(1, 'nobody'))
check("OffsetCommit to an unknown topic: UNKNOWN_TOPIC_OR_PARTITION", commit(1, m, topic='nope') == UNKNOWN_TOPIC)
check("OffsetCommit to a partition past the end: UNKNOWN_TOPIC_OR_PARTITION", commit(1, m, part=9) == UNKNOWN_TOPIC)
check("simple consumer (generation -1) commits to its own group", commit(-1, '', off=42, group='gsimple') == NONE)

def fetch(group):
    r = call(OffsetFetchRequest_v1(group, [('t2', [0, 1])]))
    return [(p[0], p[1], p[2], p[3]) for p in r.topics[0][1]]
check("OffsetFetch v1: committed offset and metadata; -1 where nothing",
      fetch('gbad') == [(0, 5, 'md', NONE), (1, -1, '', NONE)], fetch('gbad'))
check("OffsetFetch of the simple consumer's group", fetch('gsimple')[0][1] == 42, fetch('gsimple'))

hb = lambda gen, mem: call(HeartbeatRequest_v0('gbad', gen, mem)).error_code
check("Heartbeat ok", hb(1, m) == NONE)
check("Heartbeat stale generation: ILLEGAL_GENERATION", hb(2, m) == ILLEGAL_GEN, hb(2, m))
check("Heartbeat unknown member: UNKNOWN_MEMBER_ID", hb(1, 'x') == UNKNOWN_MEMBER, hb(1, 'x'))

r = call(ListGroupsRequest_v0())
check("ListGroups: gbad (consumer) and gsimple", r.error_code == NONE and
      {g[0]: g[1] for g in r.groups}.get('gbad') == 'consumer' and 'gsimple' in [g[0] for g in r.groups], r)
r = call(DescribeGroupsRequest_v0(['gbad', 'ghost']))
g = {x[1]: x for x in r.groups}
check("DescribeGroups: gbad Stable with its member and assignment",
      g['gbad'][2] == 'Stable' and g['gbad'][4] == 'range' and g['gbad'][5][0][0] == m
      and g['gbad'][5][0][4] == b'assign-1', g.get('gbad'))
check("DescribeGroups of an unknown group: Dead", g['ghost'][0] == NONE and g['ghost'][2] == 'Dead', g.get('ghost'))

r = call(DeleteGroupsRequest_v0(['gbad']))
check("DeleteGroups of an active group: NON_EMPTY_GROUP", r.results[0][1] == NON_EMPTY, r)
check("LeaveGroup of an unknown member: UNKNOWN_MEMBER_ID",
      call(LeaveGroupRequest_v0('gbad', 'nobody')).error_code == UNKNOWN_MEMBER)
check("LeaveGroup of the member", call(LeaveGroupRequest_v0('gbad', m)).error_code == NONE)
check("after leaving: heartbeat UNKNOWN_MEMBER_ID", hb(1, m) == UNKNOWN_MEMBER, hb(1, m))
r = call(DeleteGroupsRequest_v0(['gbad']))
check("DeleteGroups of the emptied group", r.results[0][1] == NONE, r)
check("its offsets are gone", fetch('gbad')[0][1] == -1, fetch('gbad'))

# A join that waits (the stable member has not rejoined yet) must not hold
# up a graceful stop: the node answers it and exits.
a = call(JoinGroupRequest_v0('ghold', 10000, '', 'consumer', [('range', b'')]))
call(SyncGroupRequest_v0('ghold', a.generation_id, a.member_id, [(a.member_id, b'')]))
open(sys.argv[3], 'w').write(a.member_id)
f = cl.send(1, JoinGroupRequest_v0('ghold', 10000, '', 'consumer', [('range', b'')]))
cl.poll(timeout_ms=300)
check("second member's join is held", not f.is_done, f)
open(sys.argv[2], 'w').close()         # tell the script to stop the node now
t0 = time.time()
while not f.is_done and time.time() - t0 < 8: cl.poll(timeout_ms=100)
ok = f.is_done and (f.failed() or f.value.error_code == COORD_NOT_AVAIL)
check("held join answered (COORDINATOR_NOT_AVAILABLE or closed) by the stop in %.1f s" % (time.time() - t0), ok,
      f.is_done and (f.exception if f.failed() else f.value))
sys.exit(1 if fails else 0)
PY

timeout 60 "$SK_PY" "$SK_TMP/e.py" "$B" "$SK_TMP/stop-now" "$SK_TMP/member" &
PYPID=$!
for ((t = 0; t < 300; t++)); do [ -e "$SK_TMP/stop-now" ] && break; sleep 0.1; done
sk_check "python reached the held join" test -e "$SK_TMP/stop-now"
T0=$(date +%s%N)
sk_stop_node 1
sk_check "graceful stop with a held join takes < 5 s" test $(( ($(date +%s%N) - T0) / 1000000 )) -lt 5000
wait "$PYPID"
sk_check "raw group protocol errors" test $? -eq 0
sk_start_node 1 --set group.min.session.timeout.ms=1000 --set group.initial.rebalance.delay.ms=0 \
  --set offsets.topic.num.partitions=3
sk_wait_port "${SK_KAFKA_PORT[1]}" 30 || sk_fail "node did not restart"
sk_check "group state replayed after restart" timeout 30 "$SK_PY" "$SK_TMP/e.py" "$B" after-restart "$SK_TMP/member"
[ "$SK_FAILS" -eq 0 ] || sk_dump_logs
sk_summary t_groups_errors
