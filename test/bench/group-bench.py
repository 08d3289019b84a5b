"""Consumer-group load of issue 7 against a running broker (run-group-bench.sh
starts it). Modes, each printing one JSON line per measurement on stdout:

  rebalance BOOTSTRAP TOPIC PARTITIONS MEMBERS ROUNDS [DELAY_MS [WARMUP]]
      ROUNDS fresh groups of MEMBERS confluent-kafka consumers (threads of
      this process; poll releases the GIL). Time from the first subscribe to
      the moment every member holds a non-empty assignment and together they
      hold all PARTITIONS exactly once (the final generation, not an early one
      with fewer members). Round 0 is a warm-up (its group is the first one:
      it may create __consumer_offsets) and is reported apart; WARMUP=0
      skips it. DELAY_MS (the broker's group.initial.rebalance.delay.ms) only
      labels the JSON lines.
  commit BOOTSTRAP TOPIC CLIENT MEMBERS SECONDS
      MEMBERS processes of CLIENT (confluent | kafka-python) in one group;
      once all hold an assignment, each commits its partitions synchronously
      in a loop for SECONDS. Reports commits/s total and per member, p50/p99
      latency, failed commits.

Bounds: every wait is limited (JOIN_LIMIT_S per round, the commit phase by
SECONDS); a member that never gets an assignment fails the mode (exit 1).
"""
import json
import multiprocessing as mp
import os
import sys
import threading
import time

JOIN_LIMIT_S = 60.0
# GB_DEBUG=cgrp,protocol: librdkafka debug contexts (stderr); GB_EVENTS=1: each
# round's assign/revoke timeline in its JSON line.
DEBUG = {'debug': os.environ['GB_DEBUG']} if os.environ.get('GB_DEBUG') else {}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def rebalance_round(boot, topic, parts, members, group):
    from confluent_kafka import Consumer
    held = [set() for _ in range(members)]
    lock = threading.Lock()
    done = threading.Event()
    start = threading.Barrier(members + 1)
    t_first = [0.0]
    t_all = [0.0]
    events = []     # (seconds since the first subscribe, member, 'assign'/'revoke', n)

    def check_all():
        # called with lock held: complete when every member holds >=1
        # partition and the union covers every partition exactly once
        if all(held) and sum(len(h) for h in held) == parts and \
                len(set().union(*held)) == parts and not done.is_set():
            t_all[0] = time.monotonic()
            done.set()

    def member(i):
        c = Consumer({'bootstrap.servers': boot, 'group.id': group,
                      'auto.offset.reset': 'latest', 'enable.auto.commit': False,
                      'session.timeout.ms': 10000, 'heartbeat.interval.ms': 500, **DEBUG})

        def on_assign(_c, ps):
            with lock:
                held[i] = {p.partition for p in ps}
                events.append((time.monotonic() - t_first[0], i, 'assign', len(ps)))
                check_all()

        def on_revoke(_c, _ps):
            with lock:
                held[i] = set()
                events.append((time.monotonic() - t_first[0], i, 'revoke', len(_ps)))
        start.wait()
        c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        limit = time.monotonic() + JOIN_LIMIT_S
        while not done.is_set() and time.monotonic() < limit:
            c.poll(0.02)
        c.close()

    threads = [threading.Thread(target=member, args=(i,)) for i in range(members)]
    for t in threads:
        t.start()
    t_first[0] = time.monotonic()   # members subscribe right after this barrier
    start.wait()
    for t in threads:
        t.join()
    if not done.is_set():
        return None, events
    return t_all[0] - t_first[0], events


def mode_rebalance(boot, topic, parts, members, rounds, delay_ms, warmup):
    ok = True
    for r in range(0 if warmup else 1, rounds + 1):
        group = 'gbench-reb-%d-%d' % (int(time.time() * 1000), r)
        s, events = rebalance_round(boot, topic, parts, members, group)
        if s is None:
            log('rebalance round %d: not all %d members assigned within %.0f s' % (r, members, JOIN_LIMIT_S))
            ok = False
        print(json.dumps({'mode': 'rebalance', 'round': r, 'warmup': r == 0,
                          'members': members, 'delay_ms': delay_ms, 'seconds': s,
                          'assign_events': sum(e[2] == 'assign' for e in events),
                          'first_assign_s': min((e[0] for e in events if e[2] == 'assign'), default=None),
                          **({'events': [[round(e[0], 3), e[1], e[2], e[3]] for e in sorted(events)]}
                             if os.environ.get('GB_EVENTS') else {})}), flush=True)
    return ok


def confluent_member(boot, topic, group, idx, ready, go, stop, out):
    from confluent_kafka import Consumer, TopicPartition, KafkaException
    c = Consumer({'bootstrap.servers': boot, 'group.id': group, 'enable.auto.commit': False,
                  'session.timeout.ms': 10000, 'heartbeat.interval.ms': 500, **DEBUG})
    assigned = []
    c.subscribe([topic], on_assign=lambda _c, ps: assigned.__setitem__(slice(None), ps),
                on_revoke=lambda _c, _ps: assigned.clear())
    lat, errors, off = [], 0, 0
    limit = time.monotonic() + JOIN_LIMIT_S
    while not go.is_set() and time.monotonic() < limit:
        c.poll(0.02)
        if assigned and not ready.is_set():
            ready.set()
    while go.is_set() and not stop.is_set():
        if not assigned:
            c.poll(0.01)
            continue
        off += 1
        tps = [TopicPartition(topic, p.partition, off) for p in assigned]
        t0 = time.monotonic()
        try:
            c.commit(offsets=tps, asynchronous=False)
            lat.append(time.monotonic() - t0)
        except KafkaException:
            errors += 1
            c.poll(0)     # serve a rebalance, if that is what failed us
    c.close()
    out.put((idx, lat, errors))


def kafka_python_member(boot, topic, group, idx, ready, go, stop, out):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata
    from kafka.errors import KafkaError
    c = KafkaConsumer(topic, bootstrap_servers=boot, group_id=group, enable_auto_commit=False,
                      session_timeout_ms=10000, heartbeat_interval_ms=500)
    lat, errors, off = [], 0, 0
    limit = time.monotonic() + JOIN_LIMIT_S
    while not go.is_set() and time.monotonic() < limit:
        c.poll(timeout_ms=20)
        if c.assignment() and not ready.is_set():
            ready.set()
    while go.is_set() and not stop.is_set():
        a = c.assignment()
        if not a:
            c.poll(timeout_ms=10)
            continue
        off += 1
        offs = {TopicPartition(tp.topic, tp.partition): OffsetAndMetadata(off, '') for tp in a}
        t0 = time.monotonic()
        try:
            c.commit(offs)
            lat.append(time.monotonic() - t0)
        except KafkaError:
            errors += 1
            c.poll(timeout_ms=0)
    c.close()
    out.put((idx, lat, errors))


def pct(sorted_v, q):
    if not sorted_v:
        return None
    return sorted_v[min(len(sorted_v) - 1, int(q * len(sorted_v)))]


def mode_commit(boot, topic, client, members, seconds):
    target = confluent_member if client == 'confluent' else kafka_python_member
    group = 'gbench-commit-%s-%d' % (client, int(time.time() * 1000))
    ctx = mp.get_context('fork')
    go, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
    readies = [ctx.Event() for _ in range(members)]
    procs = [ctx.Process(target=target, args=(boot, topic, group, i, readies[i], go, stop, out))
             for i in range(members)]
    for p in procs:
        p.start()
    limit = time.monotonic() + JOIN_LIMIT_S
    while not all(r.is_set() for r in readies) and time.monotonic() < limit:
        time.sleep(0.05)
    all_ready = all(r.is_set() for r in readies)
    time.sleep(1.0)            # let the last join settle before the clock starts
    go.set()
    t0 = time.monotonic()
    time.sleep(seconds if all_ready else 0)
    stop.set()
    elapsed = time.monotonic() - t0
    results = []
    for _ in procs:
        try:
            results.append(out.get(timeout=30))
        except Exception:
            break
    for p in procs:
        p.join(10)
        if p.is_alive():
            p.kill()
    if not all_ready or len(results) != members:
        log('commit %s: %d/%d members ready, %d results' %
            (client, sum(r.is_set() for r in readies), members, len(results)))
        return False
    lat = sorted(x for _, l, _ in results for x in l)
    per = sorted(len(l) / elapsed for _, l, _ in results)
    print(json.dumps({'mode': 'commit', 'client': client, 'members': members,
                      'seconds': round(elapsed, 2), 'commits': len(lat),
                      'commits_per_s': len(lat) / elapsed,
                      'per_member_min': per[0], 'per_member_max': per[-1],
                      'per_member_mean': sum(per) / len(per),
                      'p50_ms': pct(lat, 0.50) * 1e3 if lat else None,
                      'p99_ms': pct(lat, 0.99) * 1e3 if lat else None,
                      'errors': sum(e for _, _, e in results)}), flush=True)
    return len(lat) > 0


def main(argv):
    mode = argv[1]
    if mode == 'rebalance':
        ok = mode_rebalance(argv[2], argv[3], int(argv[4]), int(argv[5]), int(argv[6]),
                            int(argv[7]) if len(argv) > 7 else None,
                            argv[8] != '0' if len(argv) > 8 else True)
    elif mode == 'commit':
        ok = mode_commit(argv[2], argv[3], argv[4], int(argv[5]), float(argv[6]))
    else:
        log('unknown mode %s' % mode)
        ok = False
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
