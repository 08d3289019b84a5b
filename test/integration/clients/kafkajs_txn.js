#!/usr/bin/env node
// kafkajs 2.2.4 transactions against one node: a transaction sending to 3
// partitions + sendOffsets is committed, another (also with sendOffsets) is
// aborted; a read_committed consumer sees exactly the committed messages, a
// read_uncommitted one both; the group's offsets are the committed
// transaction's. Expected values come from what this script sent.
//
// usage: NODE_PATH=test/js/node_modules node kafkajs_txn.js BOOT
// Prints "PASS what" / "FAIL what: why"; exit 1 on a FAIL.
'use strict'
const { Kafka, logLevel } = require('kafkajs')

const BOOT = process.argv[2]
const TOPIC = 'jtx'
const PARTS = 3
const PER_PART = 10
const GROUP = 'js-txn-offsets'
const CHECK_TIMEOUT_MS = 60000
let failures = 0

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
  if (why == null) console.log(`PASS ${name}`)
  else { console.log(`FAIL ${name}: ${why}`); failures++ }
}

const kafka = new Kafka({ clientId: 'kafkajs-txn', brokers: [BOOT], logLevel: logLevel.NOTHING,
  retry: { retries: 10, initialRetryTime: 200 }, requestTimeout: 15000 })
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

function messages(prefix) {
  const out = []
  for (let p = 0; p < PARTS; p++)
    for (let i = 0; i < PER_PART; i++) out.push({ partition: p, value: `${prefix}-${p}-${i}` })
  return out
}

// Reads the whole topic with a group consumer until `want` values arrived
// (then 2 s more, to catch extra ones).
async function readAll(readUncommitted, want) {
  const c = kafka.consumer({ groupId: `js-read-${readUncommitted ? 'u' : 'c'}-${Date.now()}`, readUncommitted,
    maxWaitTimeInMs: 200 })
  const got = []
  await c.connect()
  await c.subscribe({ topic: TOPIC, fromBeginning: true })
  await c.run({ eachMessage: async ({ message }) => { got.push(message.value.toString()) } })
  const deadline = Date.now() + 45000
  while (got.length < want && Date.now() < deadline) await sleep(100)
  await sleep(2000)
  await c.disconnect()
  return got
}

function sameSet(got, want) {
  const g = [...got].sort(), w = [...want].sort()
  if (g.length !== w.length) return `${g.length} messages, want ${w.length}`
  for (let i = 0; i < w.length; i++) if (g[i] !== w[i]) return `got ${g[i]} want ${w[i]}`
  return null
}

async function main() {
  const admin = kafka.admin()
  await admin.connect()
  await check('create topic', async () => {
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTS, replicationFactor: 1 }], waitForLeaders: true })
  })
  const producer = kafka.producer({ transactionalId: 'js-txn-1', maxInFlightRequests: 1, idempotent: true,
    transactionTimeout: 30000 })
  await producer.connect()
  const committed = messages('c')
  const aborted = messages('a')
  await check('committed transaction (3 partitions + sendOffsets)', async () => {
    const tx = await producer.transaction()
    await tx.send({ topic: TOPIC, messages: committed })
    await tx.sendOffsets({ consumerGroupId: GROUP, topics: [{ topic: TOPIC, partitions: [{ partition: 0, offset: '7' }] }] })
    await tx.commit()
  })
  await check('aborted transaction (3 partitions + sendOffsets)', async () => {
    const tx = await producer.transaction()
    await tx.send({ topic: TOPIC, messages: aborted })
    await tx.sendOffsets({ consumerGroupId: GROUP, topics: [{ topic: TOPIC, partitions: [{ partition: 0, offset: '99' }] }] })
    await tx.abort()
  })
  await producer.disconnect()
  const cvals = committed.map((m) => m.value)
  const avals = aborted.map((m) => m.value)
  await check('read_committed consumer sees exactly the committed messages', async () =>
    sameSet(await readAll(false, cvals.length), cvals))
  await check('read_uncommitted consumer sees both transactions', async () =>
    sameSet(await readAll(true, cvals.length + avals.length), cvals.concat(avals)))
  await check('sendOffsets: the committed transaction\'s offset is the group\'s', async () => {
    const res = await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] })
    const p0 = res[0].partitions.find((p) => p.partition === 0)
    return p0 && p0.offset === '7' ? null : `partition 0 offset ${p0 && p0.offset}, want 7`
  })
  await admin.disconnect()
}

main().catch((e) => { console.log(`FAIL run: ${e.message}`); failures++ })
  .finally(() => process.exit(failures ? 1 : 0))
