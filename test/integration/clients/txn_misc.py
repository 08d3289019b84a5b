#!/usr/bin/python3
"""Transaction checks with confluent_kafka: zombie fencing, an abandoned
transaction aborted by its timeout, and a read_committed reader.

usage: txn_misc.py fence BOOT TOPIC
       txn_misc.py abandon BOOT TOPIC    (begins, sends, flushes, exits without ending)
       txn_misc.py badtimeout BOOT TOPIC (transaction.timeout.ms > the broker's max)
       txn_misc.py admin BOOT TOPIC      (after fence: List/DescribeTransactions, DescribeProducers)
       txn_misc.py offsets_restart BOOT TOPIC GROUP  (sendOffsets 123, waits for stdin, commits)
       txn_misc.py committed BOOT TOPIC GROUP        (prints the group's committed offset of TOPIC-0)
       txn_misc.py read BOOT TOPIC NPARTS SECONDS [WANT]   (prints each read_committed value;
                   stops 1 s after WANT values)
Prints PASS/FAIL lines (fence) or values (read)."""
import os
import struct
import sys
import time

from kwire import call as kcall, cstr, uvarint
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition


def fence(boot, topic):
    a = Producer({'bootstrap.servers': boot, 'transactional.id': 'zombie', 'transaction.timeout.ms': 60000})
    a.init_transactions(60)
    a.begin_transaction()
    a.produce(topic, value=b'zombie-data', partition=0)
    a.flush(30)
    b = Producer({'bootstrap.servers': boot, 'transactional.id': 'zombie'})
    b.init_transactions(60)          # fences a and aborts its open transaction
    b.begin_transaction()
    b.produce(topic, value=b'new-data', partition=0)
    b.commit_transaction(60)
    print('PASS the second producer with the same transactional.id initialised and committed')
    fenced = None
    try:
        a.produce(topic, value=b'zombie-late', partition=0)
        a.commit_transaction(30)
        fenced = 'commit succeeded'
    except KafkaException as e:
        err = e.args[0]
        if not (err.fatal() or err.txn_requires_abort()):
            fenced = 'error %s is neither fatal nor abortable' % err
    print('PASS the older producer is fenced' if fenced is None else 'FAIL the older producer is fenced: ' + fenced)


def abandon(boot, topic):
    p = Producer({'bootstrap.servers': boot, 'transactional.id': 'abandoned', 'transaction.timeout.ms': 3000})
    p.init_transactions(60)
    p.begin_transaction()
    p.produce(topic, value=b'abandoned', partition=0)
    p.flush(30)
    print('sent', flush=True)
    os._exit(0)                      # like kill -9: no EndTxn


def read(boot, topic, nparts, seconds, want=-1):
    """Reads for SECONDS, or until WANT values then 1 s more (extras show)."""
    c = Consumer({'bootstrap.servers': boot, 'group.id': 'reader-%d' % os.getpid(), 'enable.auto.commit': False,
                  'isolation.level': 'read_committed', 'fetch.wait.max.ms': 100})
    c.assign([TopicPartition(topic, i, 0) for i in range(int(nparts))])
    deadline = time.time() + float(seconds)
    want, n = int(want), 0
    while time.time() < deadline:
        for m in c.consume(500, 0.3):
            if m.error():
                continue
            print(m.value().decode(), flush=True)
            n += 1
            if n == want:
                deadline = min(deadline, time.time() + 1.0)
    c.close()


def offsets_restart(boot, topic, group):
    """sendOffsets (TxnOffsetCommit) of offset 123 for TOPIC-0, then waits
    for a line on stdin (the caller restarts the group coordinator's node
    meanwhile) and commits."""
    p = Producer({'bootstrap.servers': boot, 'transactional.id': 'offs-restart', 'transaction.timeout.ms': 60000})
    c = Consumer({'bootstrap.servers': boot, 'group.id': group, 'enable.auto.commit': False})
    p.init_transactions(60)
    p.begin_transaction()
    p.produce(topic, value=b'with-offsets', partition=0)
    p.flush(30)
    p.send_offsets_to_transaction([TopicPartition(topic, 0, 123)], c.consumer_group_metadata(), 30)
    print('ready', flush=True)
    sys.stdin.readline()
    for _ in range(30):
        try:
            p.commit_transaction(60)
            print('PASS transaction with offsets committed after the restart', flush=True)
            return
        except KafkaException as e:
            if not e.args[0].retriable():
                print('FAIL transaction with offsets committed after the restart: %s' % e, flush=True)
                return
    print('FAIL transaction with offsets committed after the restart: still retriable', flush=True)


def committed(boot, topic, group):
    # Right after a coordinator restart the group's node may still be
    # fenced (it unfences on its first heartbeat after registering) or
    # loading: librdkafka reports NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE
    # / COORDINATOR_LOAD_IN_PROGRESS at once instead of retrying; a client
    # would ask again, so do we (bounded: 30 s).
    again = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE,
             KafkaError.COORDINATOR_LOAD_IN_PROGRESS)
    c = Consumer({'bootstrap.servers': boot, 'group.id': group, 'enable.auto.commit': False})
    deadline = time.time() + 30
    while True:
        try:
            print(c.committed([TopicPartition(topic, 0)], 30)[0].offset)
            break
        except KafkaException as e:
            if e.args[0].code() not in again or time.time() > deadline:
                raise
            print('committed: %s; asking again' % e, file=sys.stderr, flush=True)
            time.sleep(0.5)
    c.close()


def describe(boot, tid):
    """DescribeTransactions of TID on every broker (diagnostics)."""
    for b in boot.split(','):
        try:
            print(b, describe_txn(b, tid))
        except Exception as e:  # noqa: BLE001 - diagnostics only
            print(b, 'error', e)


def bad_timeout(boot, topic):
    p = Producer({'bootstrap.servers': boot, 'transactional.id': 'too-long', 'transaction.timeout.ms': 900001})
    try:
        p.init_transactions(30)
        print('FAIL transaction.timeout.ms above transaction.max.timeout.ms refused: accepted')
    except KafkaException as e:
        code = e.args[0].code()
        ok = code == 50   # INVALID_TRANSACTION_TIMEOUT
        print(('PASS' if ok else 'FAIL') + ' transaction.timeout.ms above transaction.max.timeout.ms refused'
              + ('' if ok else ': %s' % e))


# ---- raw flexible-version requests (ListTransactions, DescribeTransactions,
# DescribeProducers: no client library here speaks them) -------------------
def list_txns(hostport):
    r = kcall(hostport, 66, 0, uvarint(1) + uvarint(1) + b'\x00')
    r.i32()
    err = r.i16()
    r.arr(r.s)
    def one():
        v = (r.s(), r.i64(), r.s())
        r.tags()
        return v
    return err, r.arr(one)


def describe_txn(hostport, tid):
    r = kcall(hostport, 65, 0, uvarint(2) + cstr(tid.encode()) + b'\x00')
    r.i32()
    def one():
        err, tid_, state, timeout, start, pid, epoch = r.i16(), r.s(), r.s(), r.i32(), r.i64(), r.i64(), r.i16()
        def topic():
            t = (r.s(), r.arr(r.i32))
            r.tags()
            return t
        topics = r.arr(topic)
        r.tags()
        return err, tid_, state, pid, epoch, topics
    return r.arr(one)


def describe_producers(hostport, topic, partition):
    body = uvarint(2) + cstr(topic.encode()) + uvarint(2) + struct.pack('>i', partition) + b'\x00' + b'\x00'
    r = kcall(hostport, 61, 0, body)
    r.i32()
    def part():
        idx, err, _msg = r.i32(), r.i16(), r.s()
        def prod():
            v = (r.i64(), r.i32(), r.i32(), r.i64(), r.i32(), r.i64())
            r.tags()
            return v
        prods = r.arr(prod)
        r.tags()
        return idx, err, prods
    def topic_():
        t = (r.s(), r.arr(part))
        r.tags()
        return t
    return r.arr(topic_)


def admin(boot, topic):
    """After `fence`: ListTransactions over every broker finds 'zombie'
    (CompleteCommit), DescribeTransactions on its coordinator agrees, and
    DescribeProducers on a leader of TOPIC-0 lists its producers."""
    brokers = boot.split(',')
    found, coord = None, None
    for b in brokers:
        err, rows = list_txns(b)
        for tid, pid, state in rows:
            if tid == 'zombie':
                found, coord = (pid, state), b
    print(('PASS' if found and found[1] == 'CompleteCommit' else 'FAIL')
          + ' ListTransactions lists zombie as CompleteCommit' + ('' if found else ': not listed'))
    desc = describe_txn(coord, 'zombie') if coord else []
    ok = desc and desc[0][0] == 0 and desc[0][2] == 'CompleteCommit' and desc[0][3] == found[0] and desc[0][4] >= 1
    print(('PASS' if ok else 'FAIL') + ' DescribeTransactions on the coordinator: %s' % (desc,))
    others = [b for b in brokers if b != coord]
    nc = describe_txn(others[0], 'zombie') if others else [(16,)]
    print(('PASS' if nc and nc[0][0] == 16 else 'FAIL') + ' DescribeTransactions elsewhere: NOT_COORDINATOR')
    rows = []
    for b in brokers:
        for name, parts in describe_producers(b, topic, 0):
            for idx, err, prods in parts:
                if err == 0:
                    rows = prods
    pids = {r[0] for r in rows}
    ok = found and found[0] in pids and all(r[5] == -1 for r in rows)
    print(('PASS' if ok else 'FAIL') + ' DescribeProducers lists the producer, no open transaction: %s' % (rows,))


if __name__ == '__main__':
    {'fence': fence, 'abandon': abandon, 'read': read, 'badtimeout': bad_timeout,
     'admin': admin, 'offsets_restart': offsets_restart, 'committed': committed,
     'describe': describe}[sys.argv[1]](*sys.argv[2:])
