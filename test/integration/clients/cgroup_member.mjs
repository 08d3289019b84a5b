// One @platformatic/kafka consumer with groupProtocol 'consumer' (KIP-848),
// for t_cgroup_platformatic.sh. Prints JSON lines on stdout:
//   {"ev":"assign","parts":["t6/0",...]}  whenever its assignment changes
//   {"ev":"msg","tp":"t6/3","offset":7,"value":"..."}  per record
//   {"ev":"error","msg":"..."}            consumer errors (it keeps going)
// usage: node --import test/js/with-resolvers.mjs cgroup_member.mjs BOOTSTRAP GROUP TOPIC INSTANCE|-
// SIGTERM closes it (leaves the group with epoch -1).
import { join } from 'node:path'

// the package is installed in test/js (npm ci), not next to this script
const { Consumer, stringDeserializers } =
  await import(join(process.env.SKIFF_JS_DIR, 'node_modules/@platformatic/kafka/dist/index.js'))

const [bootstrap, groupId, topic, instance] = process.argv.slice(2)
const out = o => process.stdout.write(JSON.stringify(o) + '\n')

const consumer = new Consumer({
  groupId,
  clientId: 'cgp-platformatic',
  bootstrapBrokers: bootstrap.split(','),
  groupProtocol: 'consumer',
  groupInstanceId: instance === '-' ? undefined : instance,
  deserializers: stringDeserializers,
  retries: 1000,
  retryDelay: 200
})
consumer.on('error', e => out({ ev: 'error', msg: String(e && e.message) }))

let last = ''
const timer = setInterval(() => {
  const parts = (consumer.assignments || []).flatMap(a => a.partitions.map(p => `${a.topic}/${p}`)).sort()
  const key = parts.join(',')
  if (key !== last) { last = key; out({ ev: 'assign', parts }) }
}, 100)

let closing = false
process.on('SIGTERM', async () => {
  if (closing) return
  closing = true
  clearInterval(timer)
  try { await consumer.close(true) } catch (e) { out({ ev: 'error', msg: 'close: ' + e.message }) }
  out({ ev: 'closed' })
  process.exit(0)
})

// The client counts references to each subscribed topic (consumer.topics)
// and drops one when a stream closes, so after a stream ended by an error the
// topic is unsubscribed and the next consume() joins again at member epoch 0:
// the group epoch moves (3 -> 7 in t_cgroup_failover, where a fetch from the
// killed node's partitions fails for good once the node is fenced and the
// client picks the dead node for two partitions that moved to different
// leaders). One reference of our own keeps the subscription for the life of
// the process, as an application's long-lived subscription would; a stream
// that ends is only a new stream, and the member keeps its epoch.
let held = false
for (;;) {
  try {
    const stream = await consumer.consume({ topics: [topic], autocommit: 200, mode: 'committed', fallbackMode: 'earliest' })
    if (!held) { consumer.topics.track(topic); held = true }
    stream.on('error', e => out({ ev: 'error', msg: 'stream: ' + String(e && e.message) }))
    for await (const m of stream) out({ ev: 'msg', tp: `${m.topic}/${m.partition}`, offset: Number(m.offset), value: m.value })
  } catch (e) {
    out({ ev: 'error', msg: 'consume: ' + String(e && e.message) })
    if (closing) break
    await new Promise(resolve => setTimeout(resolve, 500))
  }
}
