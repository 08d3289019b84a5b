"""confluent-kafka 2.x (librdkafka with KIP-848) against skiff, driven by
t_cgroup_confluent.sh. Phases:
  three BOOT TOPIC N   three consumers with group.protocol=consumer in one
                       group: disjoint complete assignments, all N records
  mix BOOT TOPIC       a classic member (group.protocol=classic) and a
                       consumer-protocol member on one group: refused while
                       the other kind is active, taken over once it is empty
                       (group.consumer.migration.policy=bidirectional), the
                       committed offsets kept across the migration
Prints PASS/FAIL lines."""
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

fails = 0


def check(what, ok, detail=""):
    global fails
    print(("PASS " if ok else "FAIL ") + what + ("" if ok else ": " + str(detail)[:1500]), flush=True)
    if not ok:
        fails += 1


def consumer(boot, group, protocol, **extra):
    conf = {"bootstrap.servers": boot, "group.id": group, "group.protocol": protocol,
            "auto.offset.reset": "earliest", "enable.auto.commit": False}
    if protocol == "classic":
        conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    conf.update(extra)
    return Consumer(conf)


def poll_for(c, seconds, on_msg=None):
    """Polls for `seconds`; returns the errors seen (codes)."""
    errs = []
    end = time.time() + seconds
    while time.time() < end:
        m = c.poll(0.1)
        if m is None:
            continue
        if m.error():
            if m.error().code() != KafkaError._PARTITION_EOF:
                errs.append(m.error().code())
            continue
        if on_msg:
            on_msg(m)
    return errs


def poll_until(c, done, limit, on_msg=None):
    """Polls until done() holds (checked after every poll) or `limit`
    seconds pass; returns the errors seen (codes). For the waits whose end
    is a state the test can see: they end as soon as it is reached."""
    errs = []
    end = time.time() + limit
    while time.time() < end and not done(errs):
        errs.extend(poll_for(c, 0.1, on_msg))
    return errs


def markers(boot, topic, parts):
    """One record per partition, written now; returns their values."""
    p = Producer({"bootstrap.servers": boot})
    vals = [b"marker-%d" % q for q in range(parts)]
    for q, v in enumerate(vals):
        p.produce(topic, v, partition=q)
    if p.flush(15) != 0:
        raise RuntimeError("markers not delivered")
    return vals


def three(boot, topic, n):
    seen, lock = [], threading.Lock()
    cs = [consumer(boot, "ck3", "consumer") for _ in range(3)]
    for c in cs:
        c.subscribe([topic])
    stop = time.time() + 40

    def run(c):
        while time.time() < stop:
            m = c.poll(0.1)
            if m is not None and not m.error():
                with lock:
                    seen.append(m.value())
                c.commit(message=m, asynchronous=False)
            # until every record is read and the assignment has settled at
            # six partitions over the three (one member's poll can return
            # while another still waits for its share: [[5], [0, 1], [3, 4]])
            with lock:
                if len(set(seen)) >= n and sum(len(x.assignment()) for x in cs) == 6 \
                        and all(len(x.assignment()) > 0 for x in cs):
                    return
    ts = [threading.Thread(target=run, args=(c,)) for c in cs]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    asg = [sorted(tp.partition for tp in c.assignment()) for c in cs]
    flat = sorted(p for a in asg for p in a)
    check("3 consumer-protocol members: disjoint, complete, 2 each", flat == list(range(6))
          and sorted(map(len, asg)) == [2, 2, 2], asg)
    check("all %d records consumed once" % n, len(seen) == n and len(set(seen)) == n, (len(seen), len(set(seen))))
    for c in cs:
        c.close()


def mix(boot, topic):
    g = "ckmix"
    a = consumer(boot, g, "consumer")
    a.subscribe([topic])
    got = []
    # until A owns all 6 and has read (and committed) all of m6; 30 records
    # were produced into it (t_cgroup_confluent.sh)
    poll_until(a, lambda _e: len(a.assignment()) == 6 and len(got) >= 30, 15,
               lambda m: (got.append(m), a.commit(message=m, asynchronous=False)))
    check("consumer-protocol member A owns all 6 partitions", len(a.assignment()) == 6, a.assignment())
    b = consumer(boot, g, "classic")
    b.subscribe([topic])
    # until the refusal shows (at most the 4 s this used to poll, then more
    # on a loaded box); B's assignment is checked after it
    errs = poll_until(b, lambda e: KafkaError.INCONSISTENT_GROUP_PROTOCOL in e, 10)
    errs.extend(poll_for(b, 0.5))
    check("classic member B refused while A is active (INCONSISTENT_GROUP_PROTOCOL)",
          len(b.assignment()) == 0 and KafkaError.INCONSISTENT_GROUP_PROTOCOL in errs, (b.assignment(), errs))
    b.close()
    a.close()                                       # leaves: the group is empty
    committed = len(got)
    b = consumer(boot, g, "classic")
    b.subscribe([topic])
    more = []
    poll_until(b, lambda _e: len(b.assignment()) == 6, 20, lambda m: more.append(m))
    check("after A left, classic B takes the group over (downgrade) with all 6",
          len(b.assignment()) == 6, b.assignment())
    # rather than watch B for seconds of silence: one new record per
    # partition, written now. Reading on from A's committed offsets (the
    # ends), B reads exactly these; anything A had read would come first.
    want = markers(boot, topic, 6)
    poll_until(b, lambda _e: len(more) >= len(want), 20, lambda m: more.append(m))
    poll_for(b, 0.5, lambda m: more.append(m))
    got_vals = sorted(m.value() for m in more)
    check("B resumes from A's committed offsets (nothing consumed twice: %d, then only the %d new)"
          % (committed, len(want)), committed > 0 and got_vals == sorted(want), (committed, got_vals[:10]))
    c = consumer(boot, g, "consumer")
    c.subscribe([topic])
    errs = poll_for(c, 3)
    poll_for(b, 0.5)
    # the coordinator answers GROUP_ID_NOT_FOUND; librdkafka retries it
    # without surfacing an error, so what shows is that C gets nothing
    check("consumer-protocol C refused while classic B is active (B keeps all 6)",
          len(c.assignment()) == 0 and len(b.assignment()) == 6, (c.assignment(), b.assignment(), errs))
    c.close()
    b.close()
    c = consumer(boot, g, "consumer")
    c.subscribe([topic])
    poll_until(c, lambda _e: len(c.assignment()) == 6, 20)
    check("after B left, consumer-protocol C takes the group over (upgrade) with all 6",
          len(c.assignment()) == 6, c.assignment())
    off = c.committed([TopicPartition(topic, p) for p in range(6)], timeout=10)
    check("the committed offsets survived both migrations", sum(max(o.offset, 0) for o in off) == committed,
          [(o.partition, o.offset) for o in off])
    c.close()


if sys.argv[1] == "three":
    three(sys.argv[2], sys.argv[3], int(sys.argv[4]))
else:
    mix(sys.argv[2], sys.argv[3])
sys.exit(1 if fails else 0)
