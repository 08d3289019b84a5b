#!/usr/bin/python3
"""confluent-kafka-python or kafka-python over one security protocol and
mechanism (issue 17).

usage: sec_py_check.py confluent|kafka-python HOST:PORT PROTO MECH CA OPS
  PROTO  SSL | SASL_PLAINTEXT | SASL_SSL;  MECH  PLAIN | SCRAM-SHA-256 |
  SCRAM-SHA-512 | - (SSL);  CA  the cluster CA (PEM);  OPS  comma list of
  pc (produce + consume back), group (2 members of a consumer group share a
  topic, commits hold), admin (create / list / delete a topic), txn
  (a committed and an aborted transaction; read_committed sees only the
  first; confluent-kafka only).
User alice / alice-secret. Prints "PASS what" / "FAIL what: why"; exit 1 on
a failure. Expected values come from what this script sent."""
import signal
import sys
import threading
import time
import uuid

CLIENT, BOOT, PROTO, MECH, CA, OPS = sys.argv[1:7]
USER, PASSWORD = "alice", "alice-secret"
N = 300
CHECK_TIMEOUT_S = 40
TAG = "%s %s %s" % (CLIENT, PROTO, MECH if MECH != "-" else "")
failures = []


class CheckTimeout(Exception):
    pass


def on_alarm(*_):
    raise CheckTimeout("no result within %d s" % CHECK_TIMEOUT_S)


signal.signal(signal.SIGALRM, on_alarm)


def check(name, fn):
    signal.alarm(CHECK_TIMEOUT_S)
    try:
        why = fn()
    except Exception as e:  # an exception is a failed check
        why = "%s: %s" % (type(e).__name__, str(e)[:300])
    finally:
        signal.alarm(0)
    name = "%s: %s" % (TAG.strip(), name)
    print(("PASS %s" % name) if why is None else ("FAIL %s: %s" % (name, why)), flush=True)
    if why is not None:
        failures.append(name)


def topic_name(what):
    return "py-%s-%s-%s" % (what, CLIENT, uuid.uuid4().hex[:8])


def sent_values(n, tag):
    return [("%s-%d" % (tag, i)).encode() for i in range(n)]


# ------------------------------------------------------------ confluent-kafka
def ck_conf(**extra):
    c = {"bootstrap.servers": BOOT, "security.protocol": PROTO}
    if PROTO in ("SSL", "SASL_SSL"):
        c["ssl.ca.location"] = CA
    if PROTO.startswith("SASL"):
        c.update({"sasl.mechanisms": MECH, "sasl.username": USER, "sasl.password": PASSWORD})
    c.update(extra)
    return c


def ck_produce(topic, values, **extra):
    from confluent_kafka import Producer
    errs = []
    p = Producer(ck_conf(**extra))
    for v in values:
        p.produce(topic, v, on_delivery=lambda e, m: errs.append(e) if e else None)
        p.poll(0)
    left = p.flush(30)
    if left or errs:
        raise RuntimeError("%d undelivered, errors %s" % (left, errs[:3]))


def ck_consume(topic, want, group=None, isolation="read_uncommitted", partitions=1):
    from confluent_kafka import Consumer, KafkaError, TopicPartition, OFFSET_BEGINNING
    c = Consumer(ck_conf(**{"group.id": group or "py-none-" + uuid.uuid4().hex[:6],
                            "enable.auto.commit": False, "auto.offset.reset": "earliest",
                            "isolation.level": isolation, "enable.partition.eof": True}))
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    got, at_end = [], set()
    deadline = time.time() + 25
    while (len(got) < want or len(at_end) < partitions) and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(m.partition())
                continue
            raise RuntimeError(str(m.error()))
        at_end.discard(m.partition())
        got.append(m.value())
    # Every partition read to its end (what was acknowledged is all there,
    # so a duplicate or a value that should not be there is in `got`).
    # read_committed: a little longer, as the end may be an LSO that an
    # abort marker still in flight holds before records that must not show.
    end = time.time() + (1.0 if isolation == "read_committed" else 0)
    while time.time() < end:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    return got


def ck_pc():
    t = topic_name("pc")
    vals = sent_values(N, t)
    ck_produce(t, vals, **{"acks": "all"})
    got = ck_consume(t, N)
    return None if got == vals else "consumed %d of %d (or in another order)" % (len(got), N)


def ck_admin():
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient(ck_conf())
    t = topic_name("adm")
    a.create_topics([NewTopic(t, 3, 1)])[t].result(20)
    md = a.list_topics(timeout=20)
    if t not in md.topics or len(md.topics[t].partitions) != 3:
        return "created topic not listed with 3 partitions"
    a.delete_topics([t])[t].result(20)
    for _ in range(50):
        if t not in a.list_topics(timeout=20).topics:
            return None
        time.sleep(0.2)
    return "deleted topic still listed"


def ck_group():
    from confluent_kafka import Consumer, KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic
    t = topic_name("grp")
    admin = AdminClient(ck_conf())  # kept: a collected client cancels its futures
    admin.create_topics([NewTopic(t, 4, 1)])[t].result(20)
    g = "py-grp-" + uuid.uuid4().hex[:6]
    # heartbeat.interval.ms 500 (default 3000): the first member learns of
    # the second one's join at its next heartbeat
    cs = [Consumer(ck_conf(**{"group.id": g, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                              "heartbeat.interval.ms": 500}))
          for _ in range(2)]
    for c in cs:
        c.subscribe([t])
    # first a settled group (2 partitions each), then the messages: a
    # rebalance while reading would hand uncommitted partitions over and the
    # check would see legitimate re-reads
    deadline = time.time() + 25
    while time.time() < deadline and sorted(len(c.assignment()) for c in cs) != [2, 2]:
        for c in cs:
            c.poll(0.1)
    assigned = sorted(len(c.assignment()) for c in cs)
    if assigned != [2, 2]:
        for c in cs:
            c.close()
        return "partitions per member %s after 25 s, want 2 and 2" % assigned
    vals = sent_values(N, t)
    ck_produce(t, vals)
    got = []
    deadline = time.time() + 25
    while len(got) < N and time.time() < deadline:
        for c in cs:
            # a batch per call: poll() hands out one message, and an idle
            # member's wait would cap the pair at ~10 messages/s
            for m in c.consume(500, 0.05):
                if not m.error():
                    got.append(m.value())
    for c in cs:
        try:
            c.commit(asynchronous=False)
        except KafkaException as e:
            if e.args[0].code() != -168:  # _NO_OFFSET: nothing read by this member
                raise
        c.close()
    if sorted(got) != sorted(vals):
        return "group read %d of %d messages (dups or losses)" % (len(got), N)
    # a new member of the same group starts from the commits: nothing to
    # read before the end of each of the 4 partitions (partition EOF), where
    # a member starting from "earliest" would read the 300 again
    c = Consumer(ck_conf(**{"group.id": g, "auto.offset.reset": "earliest", "enable.partition.eof": True}))
    c.subscribe([t])
    extra, at_end = 0, set()
    end = time.time() + 25
    while time.time() < end and len(at_end) < 4:
        m = c.poll(0.3)
        if m is None:
            continue
        if not m.error():
            extra += 1
        elif m.error().code() == KafkaError._PARTITION_EOF:
            at_end.add(m.partition())
    c.close()
    if len(at_end) < 4:
        return "the new member reached the end of %d of 4 partitions in 25 s" % len(at_end)
    return None if extra == 0 else "%d messages read again after the commits" % extra


def ck_txn():
    from confluent_kafka import Producer
    t = topic_name("txn")
    committed = sent_values(50, t + "-c")
    aborted = sent_values(50, t + "-a")
    p = Producer(ck_conf(**{"transactional.id": "py-tx-" + uuid.uuid4().hex[:6]}))
    p.init_transactions(20)
    p.begin_transaction()
    for v in committed:
        p.produce(t, v)
    p.commit_transaction(20)
    p.begin_transaction()
    for v in aborted:
        p.produce(t, v)
    p.abort_transaction(20)
    got = ck_consume(t, len(committed), isolation="read_committed")
    return None if got == committed else "read_committed saw %d values, want exactly the 50 committed" % len(got)


# ------------------------------------------------------------ kafka-python
def kp_conf():
    c = {"bootstrap_servers": BOOT, "security_protocol": PROTO, "request_timeout_ms": 20000}
    if PROTO in ("SSL", "SASL_SSL"):
        c["ssl_cafile"] = CA
    if PROTO.startswith("SASL"):
        c.update({"sasl_mechanism": MECH, "sasl_plain_username": USER, "sasl_plain_password": PASSWORD})
    return c


def kp_pc():
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    t = topic_name("pc")
    vals = sent_values(N, t)
    p = KafkaProducer(acks="all", **kp_conf())
    for v in vals:
        p.send(t, v)
    p.flush(30)
    p.close()
    c = KafkaConsumer(consumer_timeout_ms=3000, **kp_conf())
    tp = TopicPartition(t, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = []
    deadline = time.time() + 25
    while len(got) < N and time.time() < deadline:
        for recs in c.poll(timeout_ms=500).values():
            got.extend(r.value for r in recs)
    c.close()
    return None if got == vals else "consumed %d of %d (or in another order)" % (len(got), N)


def kp_admin():
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    a = KafkaAdminClient(**kp_conf())
    t = topic_name("adm")
    a.create_topics([NewTopic(t, 3, 1)])
    if t not in a.list_topics():
        return "created topic not listed"
    a.delete_topics([t])
    for _ in range(50):
        if t not in a.list_topics():
            a.close()
            return None
        time.sleep(0.2)
    a.close()
    return "deleted topic still listed"


def kp_group():
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import NewTopic
    t = topic_name("grp")
    a = KafkaAdminClient(**kp_conf())
    a.create_topics([NewTopic(t, 4, 1)])
    a.close()
    vals = sent_values(N, t)
    p = KafkaProducer(**kp_conf())
    for v in vals:
        p.send(t, v)
    p.flush(30)
    p.close()
    g = "py-grp-" + uuid.uuid4().hex[:6]
    # one thread per member: kafka-python joins inside poll(), so a single
    # thread polling both would leave one member out of every rebalance
    got, assigned, errors = [], [], []
    lock = threading.Lock()

    def member():
        try:
            c = KafkaConsumer(t, group_id=g, auto_offset_reset="earliest", enable_auto_commit=False, **kp_conf())
            deadline = time.time() + 30
            while time.time() < deadline:
                for recs in c.poll(timeout_ms=200).values():
                    with lock:
                        got.extend(r.value for r in recs)
                with lock:
                    if len(got) >= N:
                        break
            time.sleep(1.0)
            for recs in c.poll(timeout_ms=500).values():
                with lock:
                    got.extend(r.value for r in recs)
            c.commit()
            with lock:
                assigned.append(len(c.assignment()))
            c.close()
        except Exception as e:  # reported by the check
            errors.append("%s: %s" % (type(e).__name__, e))

    ths = [threading.Thread(target=member) for _ in range(2)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(38)
    if errors:
        return errors[0]
    if sorted(got) != sorted(vals):
        return "group read %d of %d messages (dups or losses)" % (len(got), N)
    return None if sum(assigned) == 4 and len(assigned) == 2 else "partitions per member %s, want 4 in all" % assigned


OPS_BY_CLIENT = {
    "confluent": {"pc": ck_pc, "admin": ck_admin, "group": ck_group, "txn": ck_txn},
    "kafka-python": {"pc": kp_pc, "admin": kp_admin, "group": kp_group},
}


def main():
    ops = OPS_BY_CLIENT[CLIENT]
    for op in OPS.split(","):
        if op not in ops:
            print("FAIL %s: %s: not available for this client" % (TAG, op))
            failures.append(op)
            continue
        check({"pc": "produce + consume %d" % N, "admin": "create / list / delete topic",
               "group": "consumer group of 2 members", "txn": "committed + aborted transaction"}[op], ops[op])
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
