#!/usr/bin/python3
"""Consume-transform-produce with transactions (confluent_kafka).

usage: txn_ctp.py BOOT IN OUT GROUP TXID IDLE_S
Reads IN (read_committed, group GROUP), writes "out:<value>" to OUT in
transactions of up to 50 messages with the consumed offsets sent to the
same transaction, and exits 0 after IDLE_S seconds without input. Prints
"committed N" after each transaction (N = messages so far in this run);
exits 3 when a transaction cannot be committed (the caller restarts it).
env CTP_SLEEP_S: pause after each transaction (default 0).
env CTP_HOLD_AT: once N messages are committed, stop consuming and wait to
be killed (a kill test then kills it mid-stream however slowly its poller
runs on a loaded machine).
"""
import os
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

boot, tin, tout, group, txid, idle_s = sys.argv[1:7]
idle_s = float(idle_s)
hold_at = int(os.environ.get('CTP_HOLD_AT', '0'))
c = Consumer({'bootstrap.servers': boot, 'group.id': group, 'isolation.level': 'read_committed',
              'enable.auto.commit': False, 'auto.offset.reset': 'earliest', 'session.timeout.ms': 6000})
p = Producer({'bootstrap.servers': boot, 'transactional.id': txid, 'transaction.timeout.ms': 10000,
              'linger.ms': 5})
p.init_transactions(60)
c.subscribe([tin])
done = 0
last = time.time()
while time.time() - last < idle_s:
    msgs = c.consume(50, 0.5)
    msgs = [m for m in msgs if not m.error()]
    if not msgs:
        continue
    last = time.time()
    try:
        p.begin_transaction()
        for m in msgs:
            p.produce(tout, value=b'out:' + m.value(), partition=m.partition())
        pos = c.position(c.assignment())
        p.send_offsets_to_transaction(pos, c.consumer_group_metadata(), 30)
        for attempt in range(20):
            try:
                p.commit_transaction(30)
                break
            except KafkaException as e:
                if not e.args[0].retriable():
                    raise
        else:
            print('error: commit still retriable after 20 attempts', flush=True)
            sys.exit(3)
    except KafkaException as e:
        # abortable or fatal (e.g. a broker restarted under us): exit; the
        # caller restarts us and init_transactions aborts what is open
        print('error', e, flush=True)
        sys.exit(3)
    done += len(msgs)
    time.sleep(float(os.environ.get('CTP_SLEEP_S', '0')))   # a slower stream for kill tests
    print('committed', done, flush=True)
    if hold_at and done >= hold_at:
        while True:
            time.sleep(1)
c.close()
