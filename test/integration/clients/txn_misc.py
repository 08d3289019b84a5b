#!/usr/bin/python3
"""Transaction checks with confluent_kafka: zombie fencing, an abandoned
transaction aborted by its timeout, and a read_committed reader.

usage: txn_misc.py fence BOOT TOPIC
       txn_misc.py abandon BOOT TOPIC    (begins, sends, flushes, exits without ending)
       txn_misc.py read BOOT TOPIC NPARTS SECONDS [WANT]   (prints each read_committed value;
                   stops 1 s after WANT values)
Prints PASS/FAIL lines (fence) or values (read)."""
import os
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


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


if __name__ == '__main__':
    {'fence': fence, 'abandon': abandon, 'read': read}[sys.argv[1]](*sys.argv[2:])
