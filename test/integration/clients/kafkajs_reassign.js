#!/usr/bin/env node
// kafkajs 2.2.4 (test/js) admin calls for t_reassign.sh, one per run.
//
// usage: NODE_PATH=test/js/node_modules node kafkajs_reassign.js BOOT CMD ARGS
//   create TOPIC R1,R2,...        one partition on the given replicas
//   produce TOPIC FIRST COUNT     values FIRST..FIRST+COUNT-1 to partition 0, acks=all
//   alter TOPIC PART R1,R2,...    admin.alterPartitionReassignments
//   list [TOPIC]                  admin.listPartitionReassignments -> JSON
// Prints "ok" (or the JSON) and exits 0; prints the error and exits 1.
'use strict'
const { Kafka, logLevel } = require('kafkajs')

const [BOOT, CMD, ...ARGS] = process.argv.slice(2)
const ids = s => s.split(',').map(Number)

async function main() {
  const kafka = new Kafka({ clientId: 'kafkajs-reassign', brokers: BOOT.split(','), logLevel: logLevel.NOTHING,
                            retry: { retries: 8, initialRetryTime: 200 } })
  if (CMD === 'produce') {
    const p = kafka.producer({ allowAutoTopicCreation: false })
    await p.connect()
    try {
      const first = Number(ARGS[1])
      const messages = []
      for (let i = 0; i < Number(ARGS[2]); i++) messages.push({ value: String(first + i), partition: 0 })
      await p.send({ topic: ARGS[0], acks: -1, timeout: 10000, messages })
    } finally {
      await p.disconnect()
    }
    return 'ok'
  }
  const admin = kafka.admin()
  await admin.connect()
  try {
    if (CMD === 'create') {
      const ok = await admin.createTopics({ waitForLeaders: true, timeout: 10000,
        topics: [{ topic: ARGS[0], replicaAssignment: [{ partition: 0, replicas: ids(ARGS[1]) }] }] })
      if (!ok) throw new Error('topic already exists')
      return 'ok'
    }
    if (CMD === 'alter') {
      await admin.alterPartitionReassignments({ timeout: 10000,
        topics: [{ topic: ARGS[0], partitionAssignment: [{ partition: Number(ARGS[1]), replicas: ids(ARGS[2]) }] }] })
      return 'ok'
    }
    if (CMD === 'list') {
      const req = ARGS[0] ? { topics: [{ topic: ARGS[0], partitions: [0] }] } : {}
      const r = await admin.listPartitionReassignments(req)
      return JSON.stringify(r)
    }
    throw new Error(`unknown command ${CMD}`)
  } finally {
    await admin.disconnect()
  }
}

main().then(out => { console.log(out); process.exit(0) },
            e => { console.log(`${e.name}: ${String(e.message).slice(0, 300)}`); process.exit(1) })
