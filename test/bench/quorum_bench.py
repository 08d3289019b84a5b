#!/usr/bin/python3
"""Timed metadata writes for run-quorum-bench.sh (kafka-python's protocol
classes over one socket per request, through quorum_meta.call). Each command
prints one line of key=value figures; exit 1 when a create failed.

  quorum_bench.py failover PID ADDR[,..] TOPIC TIMEOUT_S
      kill -9 PID, then CreateTopics TOPIC (1 partition, RF 1) through the
      given survivors every 20 ms until one succeeds: ms=<time since the kill>
  quorum_bench.py latency ADDR PREFIX COUNT
      COUNT sequential single-topic creates (1 partition, RF 1) sent to ADDR:
      p50_ms= p99_ms= max_ms= (nearest-rank percentiles)
  quorum_bench.py bulk ADDR[,..] PREFIX TOPICS PARTITIONS RF PER_REQUEST
      TOPICS topics in CreateTopics requests of PER_REQUEST topics each, sent
      to the controller: s=<wall time> topics_per_s=<rate> retries=<batches
      re-sent after a controller change>
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from quorum_meta import call  # noqa: E402

from kafka.protocol.admin import CreateTopicsRequest  # noqa: E402
from kafka.protocol.metadata import MetadataRequest  # noqa: E402

OK_ERRORS = (0, 36)   # created, or already exists (an earlier try committed)
RETRIES = 20


def create(addr, topics, parts, rf, timeout_ms=30000):
    """One CreateTopics; returns the list of per-topic error codes."""
    req = CreateTopicsRequest[1](create_topic_requests=[(t, parts, rf, [], []) for t in topics],
                                 timeout=timeout_ms, validate_only=False)
    r = call(addr, req, timeout=timeout_ms / 1000.0 + 5.0)
    return [e[1] for e in r.topic_errors]


def failover(pid, addrs, topic, timeout_s):
    t0 = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    last = None
    while time.monotonic() - t0 < timeout_s:
        for a in addrs:
            try:
                errs = create(a, [topic], 1, 1, timeout_ms=2000)
                last = errs[0]
                if errs[0] in OK_ERRORS:
                    print("ms=%d" % round((time.monotonic() - t0) * 1000))
                    return 0
            except (OSError, IOError) as e:
                last = str(e)
        time.sleep(0.02)
    print("ms=-1 last=%s" % last)
    return 1


def pct(sorted_ms, p):
    """Nearest-rank percentile of a sorted list."""
    k = max(1, -(-len(sorted_ms) * p // 100))
    return sorted_ms[int(k) - 1]


def latency(addr, prefix, count):
    ms = []
    for i in range(count):
        t0 = time.monotonic()
        errs = create(addr, ["%s-%d" % (prefix, i)], 1, 1)
        ms.append((time.monotonic() - t0) * 1000)
        if errs[0] != 0:
            print("create %s-%d: error %d" % (prefix, i, errs[0]), file=sys.stderr)
            return 1
    ms.sort()
    print("p50_ms=%.1f p99_ms=%.1f max_ms=%.1f" % (pct(ms, 50), pct(ms, 99), ms[-1]))
    return 0


def controller_addr(addrs):
    """host:port of the controller named by the first node that answers."""
    for a in addrs:
        try:
            r = call(a, MetadataRequest[1](topics=[]), timeout=3.0)
            for b in r.brokers:
                if b[0] == r.controller_id:
                    return "%s:%d" % (b[1], b[2])
        except (OSError, IOError):
            pass
    return addrs[0]


def bulk(addrs, prefix, topics, parts, rf, per_req):
    """A batch refused by a deposed controller (an election while it was
    busy) is re-sent to the new one, up to RETRIES times per batch."""
    names = ["%s-%d" % (prefix, i) for i in range(topics)]
    addr = controller_addr(addrs)
    retries = 0
    t0 = time.monotonic()
    for i in range(0, topics, per_req):
        batch = names[i:i + per_req]
        for attempt in range(RETRIES + 1):
            try:
                errs = create(addr, batch, parts, rf, timeout_ms=60000)
                bad = sorted(set(e for e in errs if e not in OK_ERRORS))
            except (OSError, IOError) as e:
                bad = [str(e)]
            if not bad:
                break
            if attempt == RETRIES:
                print("bulk create from %s: errors %s" % (batch[0], bad), file=sys.stderr)
                return 1
            retries += 1
            time.sleep(0.2)
            addr = controller_addr(addrs)
    s = time.monotonic() - t0
    print("s=%.2f topics_per_s=%.0f retries=%d" % (s, topics / s, retries))
    return 0


def main():
    a = sys.argv
    if len(a) == 6 and a[1] == "failover":
        return failover(int(a[2]), a[3].split(","), a[4], float(a[5]))
    if len(a) == 5 and a[1] == "latency":
        return latency(a[2], a[3], int(a[4]))
    if len(a) == 8 and a[1] == "bulk":
        return bulk(a[2].split(","), a[3], int(a[4]), int(a[5]), int(a[6]), int(a[7]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
