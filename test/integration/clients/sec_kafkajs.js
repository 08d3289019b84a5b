#!/usr/bin/env node
// kafkajs 2.2.4 (test/js) over one security protocol and mechanism (issue 17).
//
// usage: NODE_PATH=test/js/node_modules node sec_kafkajs.js HOST:PORT PROTO MECH CA OPS
//   PROTO SSL | SASL_PLAINTEXT | SASL_SSL; MECH PLAIN | SCRAM-SHA-256 |
//   SCRAM-SHA-512 | - ; CA the cluster CA (PEM); OPS comma list of pc
//   (produce + consume back), group (2 members share a topic), admin
//   (create / list / delete a topic), txn (committed + aborted transaction,
//   a read_committed consumer sees only the committed one).
// User alice / alice-secret. Prints "PASS what" / "FAIL what: why"; exit 1 on
// a FAIL. Expected values come from what this script sent.
'use strict'
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

const [BOOT, PROTO, MECH, CA, OPS] = process.argv.slice(2)
const N = 200
const CHECK_TIMEOUT_MS = 45000
const TAG = `kafkajs ${PROTO}${MECH === '-' ? '' : ' ' + MECH}`
let failures = 0

const cfg = { clientId: 'sec-kafkajs', brokers: [BOOT], logLevel: logLevel.NOTHING,
  connectionTimeout: 10000, requestTimeout: 20000, retry: { retries: 3 } }
if (PROTO === 'SSL' || PROTO === 'SASL_SSL') cfg.ssl = { ca: [fs.readFileSync(CA, 'utf8')] }
if (PROTO.startsWith('SASL')) cfg.sasl = { mechanism: MECH.toLowerCase(), username: 'alice', password: 'alice-secret' }
const kafka = new Kafka(cfg)

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const uniq = () => Math.random().toString(16).slice(2, 10)

async function check(name, fn) {
  let why
  let timer
  try {
    why = await Promise.race([fn(), new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no result within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS)
    })])
  } catch (e) {
    why = `${e.name}: ${String(e.message).slice(0, 300)}`
  } finally {
    clearTimeout(timer)
  }
  if (why == null) console.log(`PASS ${TAG}: ${name}`)
  else { console.log(`FAIL ${TAG}: ${name}: ${why}`); failures++ }
}

function values(prefix, n) {
  const out = []
  for (let i = 0; i < n; i++) out.push(`${prefix}-${i}`)
  return out
}

function sameSet(got, want) {
  const g = [...got].sort(), w = [...want].sort()
  if (g.length !== w.length) return `${g.length} messages, want ${w.length}`
  for (let i = 0; i < w.length; i++) if (g[i] !== w[i]) return `got ${g[i]} want ${w[i]}`
  return null
}

async function createTopic(topic, parts) {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: parts, replicationFactor: 1 }], waitForLeaders: true })
  await admin.disconnect()
}

// group members read `topic` (`parts` partitions) until `want` values
// arrived, then until every partition's last batch ended at the high
// watermark (kafkajs's END_BATCH_PROCESS offsetLag 0: the whole log was
// delivered, so a duplicate or a value that should not be there is in
// `got`). read_committed: 0.8 s more instead, as a batch of aborted records
// is dropped by kafkajs without an event.
async function readGroup(topic, members, want, readUncommitted = true, parts = 1) {
  const groupId = `js-g-${uniq()}`
  const got = []
  const cs = []
  const lag = new Map()   // partition -> offsetLag after its last batch
  for (let i = 0; i < members; i++) {
    // heartbeatInterval 500 (default 3000): a member learns of another's
    // join at its next heartbeat
    const c = kafka.consumer({ groupId, readUncommitted, maxWaitTimeInMs: 200, heartbeatInterval: 500 })
    c.on(c.events.END_BATCH_PROCESS, ({ payload }) => { lag.set(payload.partition, String(payload.offsetLag)) })
    await c.connect()
    await c.subscribe({ topic, fromBeginning: true })
    await c.run({ eachMessage: async ({ message }) => { got.push(message.value.toString()) } })
    cs.push(c)
  }
  const atEnd = () => { for (let p = 0; p < parts; p++) if (lag.get(p) !== '0') return false; return true }
  const deadline = Date.now() + 35000
  while (got.length < want && Date.now() < deadline) await sleep(50)
  if (readUncommitted) while (!atEnd() && Date.now() < deadline) await sleep(50)
  else await sleep(800)
  for (const c of cs) await c.disconnect()
  return got
}

const ops = {
  pc: ['produce + consume', async () => {
    const topic = `js-pc-${uniq()}`
    await createTopic(topic, 1)
    const want = values(topic, N)
    const p = kafka.producer()
    await p.connect()
    await p.send({ topic, acks: -1, messages: want.map((value) => ({ value })) })
    await p.disconnect()
    const got = await readGroup(topic, 1, N)
    if (got.join('\n') !== want.join('\n')) return `consumed ${got.length} of ${N} (or in another order)`
    return null
  }],
  group: ['consumer group of 2 members', async () => {
    const topic = `js-grp-${uniq()}`
    await createTopic(topic, 4)
    const want = values(topic, N)
    const p = kafka.producer()
    await p.connect()
    await p.send({ topic, messages: want.map((value, i) => ({ value, partition: i % 4 })) })
    await p.disconnect()
    return sameSet(await readGroup(topic, 2, N, true, 4), want)
  }],
  admin: ['create / list / delete topic', async () => {
    const topic = `js-adm-${uniq()}`
    const admin = kafka.admin()
    await admin.connect()
    try {
      await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 1 }], waitForLeaders: true })
      if (!(await admin.listTopics()).includes(topic)) return 'created topic not listed'
      const md = await admin.fetchTopicMetadata({ topics: [topic] })
      if (md.topics[0].partitions.length !== 3) return `${md.topics[0].partitions.length} partitions, want 3`
      await admin.deleteTopics({ topics: [topic] })
      for (let i = 0; i < 50; i++) {
        if (!(await admin.listTopics()).includes(topic)) return null
        await sleep(200)
      }
      return 'deleted topic still listed'
    } finally {
      await admin.disconnect()
    }
  }],
  txn: ['committed + aborted transaction', async () => {
    const topic = `js-txn-${uniq()}`
    await createTopic(topic, 1)
    const p = kafka.producer({ transactionalId: `js-tx-${uniq()}`, maxInFlightRequests: 1, idempotent: true })
    await p.connect()
    const committed = values(`${topic}-c`, 50)
    let t = await p.transaction()
    await t.send({ topic, messages: committed.map((value) => ({ value })) })
    await t.commit()
    t = await p.transaction()
    await t.send({ topic, messages: values(`${topic}-a`, 50).map((value) => ({ value })) })
    await t.abort()
    await p.disconnect()
    return sameSet(await readGroup(topic, 1, committed.length, false), committed)
  }],
}

async function main() {
  for (const op of OPS.split(',')) {
    if (!ops[op]) { console.log(`FAIL ${TAG}: ${op}: unknown operation`); failures++; continue }
    await check(ops[op][0], ops[op][1])
  }
  process.exit(failures ? 1 : 0)
}
main().catch((e) => { console.log(`FAIL ${TAG}: crashed: ${e}`); process.exit(1) })
