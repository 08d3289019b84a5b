// Promise.withResolvers (ES2024) for Node 20, which @platformatic/kafka
// 2.x uses; load with `node --import ./with-resolvers.mjs`. Node 22+ has it.
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function withResolvers () {
    let resolve, reject
    const promise = new this((res, rej) => { resolve = res; reject = rej })
    return { promise, resolve, reject }
  }
}
