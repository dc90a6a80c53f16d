#!/usr/bin/env node
/**
 * A Node.js client alone, for benchmarks/client_throughput.py's bare rows: kafkajs, or
 * @confluentinc/kafka-javascript through its kafkajs-compatible API (`"library": "ckjs"`), with
 * the settings highwater's Node.js workers give them (clients/node), no worker protocol, no
 * history. Run with NODE_PATH set to the library's tree in the cache
 * (harness.clients.kafkajs.ensure_tree, harness.clients.ckjs.ensure_tree); one JSON argument,
 * one JSON line out: {"rate": records/s, "cpu", "machine"}.
 *
 *   produce: {"mode": "produce", "library", "bootstrap": [...], "topic": t, "records": n, "size": b, "partitions": p}
 *     records go to the partitions in turn; each partition sends one request at a time, as the
 *     kafkajs worker does, of 1,000 records (the worker sends whatever queued meanwhile, up to 10,000;
 *     all 10,000 of 100 B at once would pass the broker's 1 MB message.max.bytes); timed from the
 *     first send until every send is acknowledged (acks=all, one request in flight, retries 3).
 *   consume: {"mode": "consume", "library", "bootstrap": [...], "topic": t, "records": n}
 *     a fresh group from the beginning of the topic; timed from run() (the group join included,
 *     as the workers' private-group assign includes it) until n records with values were read.
 *
 * The two APIs differ where ckjs moved a setting from a call to the client's config (its
 * MIGRATION.md): `acks` and `timeout` per producer, `fromBeginning` and `autoCommit` per consumer,
 * every kafkajs setting inside a `kafkaJS` block.
 */
'use strict'

let api = null // the library's KafkaJS API, by args.library (main)
let ckjs = false

const fs = require('fs')
const os = require('os')

const BATCH = 1000 // records per produce request
const TICK_S = 0.01 // /proc/stat counts in USER_HZ, 100 a second on Linux

/** The machine's busy and idle CPU seconds so far, every core (/proc/stat's first line). */
function machineCpu () {
  const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number)
  const idle = fields[3] + fields[4] // idle, iowait
  return [(fields.reduce((a, b) => a + b, 0) - idle) * TICK_S, idle * TICK_S]
}

/** A timed part's clock and CPU: `end()` gives {seconds, cpu, machine}. */
function timer () {
  const t0 = process.hrtime.bigint()
  const cpu0 = process.cpuUsage()
  const machine0 = os.platform() === 'linux' ? machineCpu() : null
  return {
    end () {
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9
      const used = process.cpuUsage(cpu0)
      const machine = machine0 && machineCpu().map((v, i) => v - machine0[i])
      return { seconds, cpu: (used.user + used.system) / 1e6, machine }
    }
  }
}

/** A client's config: kafkajs's as it is, ckjs's inside its `kafkaJS` block. */
const configOf = kafkaJS => (ckjs ? { kafkaJS } : kafkaJS)

function kafkaOf (args) {
  return new api.Kafka(configOf({
    clientId: `bare-${args.topic}`,
    brokers: args.bootstrap,
    requestTimeout: 5000,
    retry: { retries: 3 },
    logLevel: api.logLevel.WARN
  }))
}

async function produce (args) {
  const settings = { idempotent: false, maxInFlightRequests: 1, allowAutoTopicCreation: false }
  const producer = kafkaOf(args).producer(configOf(ckjs ? { ...settings, acks: -1, timeout: 5000 } : settings))
  await producer.connect()
  const queues = Array.from({ length: args.partitions }, () => [])
  for (let i = 0; i < args.records; i++) {
    queues[i % args.partitions].push(`v${i}:`.padEnd(args.size, '.'))
  }
  const clock = timer()
  await Promise.all(queues.map(async (values, partition) => {
    for (let at = 0; at < values.length; at += BATCH) {
      const messages = values.slice(at, at + BATCH).map(value => ({ value, partition }))
      await producer.send(ckjs ? { topic: args.topic, messages } : { topic: args.topic, acks: -1, timeout: 5000, messages })
    }
  }))
  const timed = clock.end()
  await producer.disconnect()
  return { rate: args.records / timed.seconds, cpu: timed.cpu, machine: timed.machine }
}

async function consume (args) {
  const settings = { groupId: `bare-${args.topic}-${process.pid}`, maxWaitTimeInMs: 500, allowAutoTopicCreation: false }
  const consumer = kafkaOf(args).consumer(configOf(ckjs ? { ...settings, fromBeginning: true, autoCommit: false } : settings))
  // timed from before connecting, as the worker's side is: its consumer connects, subscribes
  // and joins at its first poll, which the harness's clock includes
  const clock = timer()
  await consumer.connect()
  await consumer.subscribe(ckjs ? { topics: [args.topic] } : { topics: [args.topic], fromBeginning: true })
  let got = 0
  let done
  const finished = new Promise(resolve => { done = resolve })
  await consumer.run({
    ...(ckjs ? {} : { autoCommit: false }),
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) if (m.value !== null) got++
      if (got >= args.records) done()
    }
  })
  await finished
  const timed = clock.end()
  await consumer.disconnect()
  return { rate: got / timed.seconds, cpu: timed.cpu, machine: timed.machine }
}

async function main () {
  const args = JSON.parse(process.argv[2])
  ckjs = args.library === 'ckjs'
  api = ckjs ? require('@confluentinc/kafka-javascript').KafkaJS : require('kafkajs')
  const result = args.mode === 'produce' ? await produce(args) : await consume(args)
  process.stdout.write(JSON.stringify(result) + '\n')
}

main().then(() => process.exit(0), err => {
  process.stderr.write(`node_bare: ${err && err.stack ? err.stack : err}\n`)
  process.exit(1)
})
