#!/usr/bin/python3
"""alloc_steady.py BOOTSTRAP TOPIC PARTITIONS ACKS COUNT_FILES ADMINS [consume]

Drives one confluent-kafka producer (and with "consume", one consumer) in two
phases on the same connections, a warm-up and a measured one, and reads the
nodes' heap allocation counts (test/bench/alloc/malloc_count.c writes
"main=N all=M" to each file in COUNT_FILES, comma-separated) and their
request counters (/metrics on each admin address in ADMINS) around the
measured phase. Prints one JSON line per phase: requests the nodes answered
and allocations all their threads made meanwhile. Connections are opened in
the warm-up, so the measured phase holds only steady-state requests.
"""
import json, sys, time, urllib.request
from confluent_kafka import Consumer, Producer, TopicPartition

boot, topic, nparts, acks, files, admins = sys.argv[1:7]
nparts = int(nparts)
files = files.split(",")
admins = admins.split(",")
consume = len(sys.argv) > 7 and sys.argv[7] == "consume"


def allocs():
    time.sleep(0.2)   # the shim rewrites its file every 50 ms
    total = 0
    for f in files:
        with open(f) as fh:
            total += int(fh.read().split("all=")[1])
    return total


def requests(api):
    total = 0
    for a in admins:
        with urllib.request.urlopen("http://%s/metrics" % a, timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith('skiff_requests_total{api="%s"}' % api):
                    total += int(float(line.split()[1]))
    return total


def fresh():
    """The nodes' own count of blocks their pool had to malloc."""
    total = 0
    for a in admins:
        with urllib.request.urlopen("http://%s/metrics" % a, timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith('skiff_mem_pool_blocks_total{event="fresh"}'):
                    total += int(float(line.split()[1]))
    return total


def window(api, run):
    # the /metrics scrapes allocate (the admin port's HTTP): outside the window
    r0, f0 = requests(api), fresh()
    a0 = allocs()
    run()
    a1 = allocs()
    r1, f1 = requests(api), fresh()
    return {"api": api, "requests": r1 - r0, "allocations": a1 - a0, "pool_fresh": f1 - f0, "pool_fresh_start": f0}


# small batches, no linger: many Produce requests for the messages sent
p = Producer({"bootstrap.servers": boot, "acks": acks, "linger.ms": 0, "batch.num.messages": 20,
              "enable.idempotence": False})


def produce(n, start):
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=b"v%09d" % (start + i) + b"x" * 90, partition=i % nparts)
                break
            except BufferError:
                p.poll(0.01)
        if i % 500 == 0:
            p.poll(0)
    if p.flush(60) != 0:
        print("FAIL produce: messages left unsent")
        sys.exit(1)


# warm-up: connections, and the block pool's lists for every size class the
# requests fall in (a class settles after ~100 blocks: the freeing thread
# keeps up to its cache bound before it hands a batch back)
produce(60000, 0)
print(json.dumps(window("Produce", lambda: produce(40000, 60000))))

if consume:
    # small answers: many Fetch requests for the messages read (the byte
    # limits make them small). queued.min.messages: at 100 (below the 500 a
    # consume() call asks for) the fetcher kept stopping at that bound and
    # backing off: ~25 s for the ~3000 Fetches instead of ~3 s, the count of
    # requests the same. Not far above it either: 4 x 500 queued ahead keeps
    # the fetcher ~8000 messages short of the log end when the window closes
    # (at 2000 it reached the end, and Fetches parked there allocated)
    c = Consumer({"bootstrap.servers": boot, "group.id": "alloc-steady", "enable.auto.commit": False,
                  "max.partition.fetch.bytes": 2048, "fetch.max.bytes": 8192, "message.max.bytes": 4096, "fetch.wait.max.ms": 100,
                  "queued.min.messages": 500})
    c.assign([TopicPartition(topic, i, 0) for i in range(nparts)])

    def read(n):
        got = 0
        deadline = time.time() + 60
        while got < n and time.time() < deadline:
            for m in c.consume(500, 1.0):
                if m.error() is None:
                    got += 1
        if got < n:
            print("FAIL consume: %d of %d messages" % (got, n))
            sys.exit(1)

    read(30000)                                     # warm-up
    print(json.dumps(window("Fetch", lambda: read(60000))))
    c.close()
