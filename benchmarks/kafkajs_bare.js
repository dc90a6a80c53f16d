#!/usr/bin/env node
/**
 * kafkajs alone, for benchmarks/client_throughput.py's "kafkajs bare" rows: the settings
 * highwater's Node.js worker gives it (clients/node/highwater_worker.js), no worker protocol,
 * no history. Run with NODE_PATH set to a kafkajs tree of the cache
 * (harness.clients.node.ensure_tree); one JSON argument, one JSON line out: {"rate": records/s}.
 *
 *   produce: {"mode": "produce", "bootstrap": [...], "topic": t, "records": n, "size": b, "partitions": p}
 *     records go to the partitions in turn; each partition sends one request at a time, as the
 *     worker does, of 1,000 records (the worker sends whatever queued meanwhile, up to 10,000;
 *     all 10,000 of 100 B at once would pass the broker's 1 MB message.max.bytes); timed from the
 *     first send until every send is acknowledged (acks=all, one request in flight, retries 3).
 *   consume: {"mode": "consume", "bootstrap": [...], "topic": t, "records": n}
 *     a fresh group from the beginning of the topic; timed from run() (the group join included,
 *     as the worker's private-group assign includes it) until n records with values were read.
 */
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const BATCH = 1000 // records per produce request

function kafkaOf (args) {
  return new Kafka({
    clientId: `bare-${args.topic}`,
    brokers: args.bootstrap,
    requestTimeout: 5000,
    retry: { retries: 3 },
    logLevel: logLevel.WARN
  })
}

async function produce (args) {
  const producer = kafkaOf(args).producer({ idempotent: false, maxInFlightRequests: 1, allowAutoTopicCreation: false })
  await producer.connect()
  const queues = Array.from({ length: args.partitions }, () => [])
  for (let i = 0; i < args.records; i++) {
    queues[i % args.partitions].push(`v${i}:`.padEnd(args.size, '.'))
  }
  const t0 = process.hrtime.bigint()
  await Promise.all(queues.map(async (values, partition) => {
    for (let at = 0; at < values.length; at += BATCH) {
      const messages = values.slice(at, at + BATCH).map(value => ({ value, partition }))
      await producer.send({ topic: args.topic, acks: -1, timeout: 5000, messages })
    }
  }))
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9
  await producer.disconnect()
  return args.records / seconds
}

async function consume (args) {
  const consumer = kafkaOf(args).consumer({
    groupId: `bare-${args.topic}-${process.pid}`,
    maxWaitTimeInMs: 500,
    allowAutoTopicCreation: false
  })
  // timed from before connecting, as the worker's side is: its consumer connects, subscribes
  // and joins at its first poll, which the harness's clock includes
  const t0 = process.hrtime.bigint()
  await consumer.connect()
  await consumer.subscribe({ topics: [args.topic], fromBeginning: true })
  let got = 0
  let done
  const finished = new Promise(resolve => { done = resolve })
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) if (m.value !== null) got++
      if (got >= args.records) done()
    }
  })
  await finished
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9
  await consumer.disconnect()
  return got / seconds
}

async function main () {
  const args = JSON.parse(process.argv[2])
  const rate = args.mode === 'produce' ? await produce(args) : await consume(args)
  process.stdout.write(JSON.stringify({ rate }) + '\n')
}

main().then(() => process.exit(0), err => {
  process.stderr.write(`kafkajs_bare: ${err && err.stack ? err.stack : err}\n`)
  process.exit(1)
})
