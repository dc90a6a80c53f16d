'use strict'
/*
 * highwater's worker for kafkajs: one producer or one consumer, driven over the worker protocol
 * (docs/adding-a-client.md, version 1) on stdin/stdout; stderr is the log (kafkajs's own lines).
 *
 * kafkajs is resolved through NODE_PATH: the tree of the version under test in the cache
 * (harness/clients/node.py installs it with npm), so several versions run side by side.
 *
 * What kafkajs does not tell an application, and how this worker learns it:
 * - the broker that served a batch: ConsumerGroup#fetch(nodeId) is wrapped and its batches are
 *   tagged with the node id (kafkajs 2.x fetches from each node on its own; KIP-392's preferred
 *   read replica is followed inside that method);
 * - an offset reset (OFFSET_OUT_OF_RANGE: kafkajs goes back to its `fromBeginning` policy, and
 *   commits -1/-2 to the group, even without auto-commit): OffsetManager#setDefaultOffset is
 *   wrapped and reported as a `reset` position change whose offset is not known yet;
 * - leader epochs: each message's batchContext.partitionLeaderEpoch;
 * - the partitions a group member gave up (protocol 2's `revoke` events): kafkajs has no revocation
 *   callback and names no partition; its REBALANCING event says the member is rejoining (an eager
 *   member gives up every partition of its last join), reported for each of them as
 *   `rebalancing`; a join with no REBALANCING before it (its member id was unknown to the
 *   coordinator, a restart after a crash) reports the partitions of the previous join as `rejoin`.
 * kafkajs has no KIP-320 (no OffsetForLeaderEpoch, currentLeaderEpoch always -1): a consumer
 * never reports a truncation.
 *
 * kafkajs consumes only in groups. `assign` is emulated with a private group of one member
 * (`<group or "highwater-assign">.<client id>.<random>`) whose assigner hands it exactly the partitions
 * asked for; kafkajs goes back to the committed offsets at every rejoin (it rejoins on its own
 * after a leader change), so an assign-mode consumer seeks each partition back to its own
 * position after each join, as `assign` would have kept it.
 */

const crypto = require('crypto')
const fs = require('fs')

// first: it sends console output to the log before a library can print
const { emit, makeLog, outcome, pollPart, serve, within } = require('./worker_protocol')

const kafkajs = require('kafkajs')
const { Kafka, logLevel, AssignerProtocol } = kafkajs
const VERSION = require('kafkajs/package.json').version
const ConsumerGroup = require('kafkajs/src/consumer/consumerGroup')
const OffsetManager = require('kafkajs/src/consumer/offsetManager')

// --- errors and the log ---------------------------------------------------------------------

const log = makeLog('highwater-worker')

function errorText (err) {
  if (err === null || err === undefined) return 'Error: unknown error'
  const name = err.name || (err.constructor && err.constructor.name) || 'Error'
  const type = err.type ? `${err.type}: ` : ''
  const cause = err.cause || err.originalError
  const why = cause && cause !== err ? ` (caused by ${cause.name || 'Error'}: ${cause.type ? cause.type + ': ' : ''}${cause.message})` : ''
  return `${name}: ${type}${err.message}${why}`
}



// --- settings -------------------------------------------------------------------------------

function kafkaLogger () {
  return ({ namespace, level, log: entry }) => {
    const { message, timestamp, logger, ...extra } = entry
    const name = logLevel[level] || level
    process.stderr.write(`${timestamp} ${name} [${namespace}] ${message} ${JSON.stringify(extra)}\n`)
  }
}

function securityOf (security) {
  const out = {}
  if (!security || security.protocol === 'PLAINTEXT') return out
  if (security.protocol.endsWith('SSL')) {
    const ssl = { rejectUnauthorized: true }
    if (security.ssl_cafile) ssl.ca = [fs.readFileSync(security.ssl_cafile, 'utf8')]
    if (security.ssl_certfile) ssl.cert = fs.readFileSync(security.ssl_certfile, 'utf8')
    if (security.ssl_keyfile) ssl.key = fs.readFileSync(security.ssl_keyfile, 'utf8')
    else if (security.ssl_certfile) ssl.key = ssl.cert // one PEM file holding both
    if (security.ssl_password) ssl.passphrase = security.ssl_password
    if (security.ssl_check_hostname === false) ssl.checkServerIdentity = () => undefined
    out.ssl = ssl
  }
  if (security.protocol.startsWith('SASL_')) {
    out.sasl = {
      mechanism: String(security.sasl_mechanism).toLowerCase(),
      username: security.sasl_username,
      password: security.sasl_password
    }
  }
  return out
}

function kafkaOf (settings, retries, maxRetryTime) {
  return new Kafka({
    clientId: settings.client_id,
    brokers: settings.bootstrap,
    requestTimeout: settings.request_timeout_ms,
    retry: { retries, maxRetryTime },
    logLevel: logLevel.INFO,
    logCreator: kafkaLogger,
    ...securityOf(settings.security)
  })
}

// --- the producer ---------------------------------------------------------------------------

/** Broker errors that prove the broker did not append (each is returned before the write). */
const DEFINITE_REJECTIONS = new Set([
  'MESSAGE_TOO_LARGE',
  'RECORD_LIST_TOO_LARGE',
  'INVALID_TOPIC_EXCEPTION',
  'TOPIC_AUTHORIZATION_FAILED',
  'INVALID_REQUIRED_ACKS'
])

const BATCH_RECORDS = 10000
const BATCH_BYTES = 512 * 1024

/** How many of the queued [id, value] sends go into the next request (at least one). */
function batchLength (pending) {
  let bytes = 0
  let n = 0
  while (n < pending.length && n < BATCH_RECORDS) {
    const value = pending[n][1]
    bytes += value == null ? 0 : Buffer.byteLength(String(value))
    if (n > 0 && bytes > BATCH_BYTES) break
    n++
  }
  return n
}

class ProducerRole {
  constructor (settings) {
    this.settings = settings
    this.acks = settings.acks === 'all' ? -1 : Number(settings.acks)
    this.singleAttempt = Number(settings.retries) === 0 && !settings.idempotence
    this.transactional = Boolean(settings.transactional_id)
    // kafkajs has no delivery timeout: its retries stop after maxRetryTime, the closest bound
    this.kafka = kafkaOf(settings, Number(settings.retries), settings.delivery_timeout_ms)
    this.producer = this.kafka.producer({
      idempotent: Boolean(settings.idempotence || this.transactional),
      maxInFlightRequests: this.transactional ? 1 : Number(settings.max_in_flight),
      transactionalId: settings.transactional_id || undefined,
      transactionTimeout: settings.transaction_timeout_ms,
      allowAutoTopicCreation: false
    })
    this.connected = false
    this.txn = null
    this.queues = new Map() // "topic\0partition" -> {topic, partition, pending: [[id, value]], busy}
    this.inFlight = 0
    this.idle = [] // resolvers waiting for inFlight to reach 0
  }

  async start () {
    if (!this.transactional) { // a transactional producer connects in init_transactions
      await this.producer.connect()
      this.connected = true
    }
  }

  send (sid, topic, partition, value) {
    const key = `${topic}\u0000${partition}`
    let queue = this.queues.get(key)
    if (!queue) {
      queue = { topic, partition: Number(partition), pending: [], busy: false }
      this.queues.set(key, queue)
    }
    queue.pending.push([sid, value])
    this.inFlight++
    if (!queue.busy) this.drain(queue)
  }

  /** One request at a time per partition, carrying the sends queued meanwhile (a linger of
   * its own; at most BATCH_RECORDS records and about BATCH_BYTES of values, below the broker's
   * 1 MB message.max.bytes): offsets are then the partition's base offset plus each record's index. */
  async drain (queue) {
    queue.busy = true
    while (queue.pending.length) {
      const batch = queue.pending.splice(0, batchLength(queue.pending))
      try {
        if (!this.connected) throw Object.assign(new Error('the producer is not connected'), { name: 'IllegalStateError' })
        const target = this.txn || this.producer
        const result = await target.send({
          topic: queue.topic,
          acks: this.acks,
          timeout: this.settings.request_timeout_ms,
          messages: batch.map(([, value]) => ({ value, partition: queue.partition }))
        })
        const mine = (result || []).find(r => r.topicName === queue.topic && Number(r.partition) === queue.partition)
        if (!mine) { // acks=0: nothing is acknowledged, no offset is known
          for (const [sid] of batch) outcome(sid, 'ok', -1, null)
        } else {
          const base = Number(mine.baseOffset)
          batch.forEach(([sid], i) => outcome(sid, 'ok', base + i, null))
        }
      } catch (err) {
        const definite = err && err.name === 'KafkaJSProtocolError' && DEFINITE_REJECTIONS.has(err.type)
        const kind = (definite && this.singleAttempt) || (err && err.name === 'IllegalStateError') ? 'fail' : 'info'
        const text = errorText(err)
        for (const [sid] of batch) outcome(sid, kind, null, text)
      }
      this.inFlight -= batch.length
    }
    queue.busy = false
    if (this.inFlight === 0) this.idle.splice(0).forEach(resolve => resolve())
  }

  sendsDone () {
    return this.inFlight === 0 ? Promise.resolve() : new Promise(resolve => this.idle.push(resolve))
  }

  async handle (op, cmd) {
    const timeoutMs = Number(cmd.timeout_ms || 0)
    switch (op) {
      case 'flush':
        await within(this.sendsDone(), timeoutMs, 'flush').catch(err => log('WARN', errorText(err)))
        return {}
      case 'close':
        await within(this.sendsDone(), timeoutMs, 'close').catch(err => log('WARN', errorText(err)))
        await within(this.producer.disconnect(), 5000, 'disconnect').catch(err => log('WARN', errorText(err)))
        for (const queue of this.queues.values()) {
          for (const [sid] of queue.pending.splice(0)) outcome(sid, 'info', null, 'Error: the producer closed before the outcome')
        }
        return {}
      case 'init_transactions': {
        // kafkajs asks the coordinator for its producer id (fencing an older instance) at its
        // first transaction(); an empty transaction ends locally, without EndTxn
        const init = async () => {
          await this.producer.connect()
          this.connected = true
          await (await this.producer.transaction()).abort()
        }
        await within(init(), timeoutMs, 'init_transactions')
        return {}
      }
      case 'begin_transaction':
        this.txn = await within(this.producer.transaction(), 5000, 'begin_transaction')
        return {}
      case 'commit_transaction':
        await within(this.sendsDone().then(() => this.active().commit()), timeoutMs, 'commit_transaction')
        this.txn = null
        return {}
      case 'abort_transaction':
        await within(this.sendsDone().then(() => this.active().abort()), timeoutMs, 'abort_transaction')
        this.txn = null
        return {}
      case 'send_offsets': {
        const topics = new Map()
        for (const o of cmd.offsets) {
          if (!topics.has(o.topic)) topics.set(o.topic, [])
          topics.get(o.topic).push({ partition: Number(o.partition), offset: String(o.offset) })
        }
        // kafkajs sends the group id only (TxnOffsetCommit v1): no generation, no member id, so
        // the coordinator cannot fence a stale member (KIP-447)
        const offsets = { consumerGroupId: cmd.group.group_id, topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })) }
        await within(this.active().sendOffsets(offsets), timeoutMs, 'send_offsets')
        return {}
      }
      default:
        throw new Error(`unknown producer op ${op}`)
    }
  }

  active () {
    if (!this.txn) throw Object.assign(new Error('no transaction is open'), { name: 'IllegalStateError' })
    return this.txn
  }
}

// --- the consumer ---------------------------------------------------------------------------

const ASSIGN_GROUP = 'highwater-assign'

/** An assigner that gives the group's first member exactly `wanted` ({topic: [partitions]}). */
function fixedAssigner (wanted) {
  return () => ({
    name: 'HighwaterAssign',
    version: 0,
    async assign ({ members }) {
      return members.map(({ memberId }, i) => ({
        memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment: i === 0 ? wanted : {} })
      }))
    },
    protocol ({ topics }) {
      return { name: 'HighwaterAssign', metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics }) }
    }
  })
}

/** How many partitions' batches kafkajs may hand to eachBatch at once (each waits in `batches`
 * until polls take it; a partition has at most one there, as kafkajs fetches it again only
 * after its batch was handled). */
const BATCHES_AT_HAND = 16

/** How many records may wait here, taken from kafkajs but not yet polled, before a batch is
 * held until polls take records: kafkajs fetches a partition again only once its last batch was
 * handled, so a batch is handed back at once (its offsets resolved: where kafkajs fetches next),
 * and the next fetch and its decoding overlap the polls of this one. Positions and commits are
 * the polled records' (`positions`), never kafkajs's resolved offsets. */
const RECORDS_AHEAD = 10000

const keyOf = (topic, partition) => `${topic}\u0000${partition}`

/** One entry of a poll reply (docs/adding-a-client.md, "Poll replies"): kafkajs messages of one
 * partition served by `replica`, offsets as runs of consecutive offsets, leader epochs (each
 * message's batchContext.partitionLeaderEpoch; -1 or none is null) as runs of one epoch. */
function partOf (topic, partition, replica, messages) {
  const offsets = new Array(messages.length)
  const epochs = new Array(messages.length)
  const values = new Array(messages.length)
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    offsets[i] = Number(m.offset)
    const ctx = m.batchContext
    epochs[i] = ctx && ctx.partitionLeaderEpoch >= 0 ? ctx.partitionLeaderEpoch : null
    values[i] = m.value === null ? null : m.value.toString('utf8')
  }
  return pollPart(topic, partition, replica, offsets, values, epochs)
}

// One consumer of this process: the wrappers below report to it.
let current = null

const fetchOf = ConsumerGroup.prototype.fetch
ConsumerGroup.prototype.fetch = async function (nodeId) {
  const batches = await fetchOf.call(this, nodeId)
  for (const batch of batches || []) batch.highwaterNode = Number(nodeId)
  return batches
}

const setDefaultOffsetOf = OffsetManager.prototype.setDefaultOffset
OffsetManager.prototype.setDefaultOffset = async function ({ topic, partition }) {
  if (current) current.resetByLibrary(topic, Number(partition))
  return setDefaultOffsetOf.apply(this, arguments)
}

class ConsumerRole {
  constructor (settings) {
    this.settings = settings
    this.kafka = kafkaOf(settings, 5, 30000)
    this.mode = null // 'assign' or 'subscribe'
    this.topics = []
    this.wanted = {} // assign mode: topic -> partitions
    this.groupId = settings.group_id
    this.consumer = null
    this.running = false
    this.joins = 0
    this.memberId = ''
    this.assigned = new Set() // keys of the partitions assigned now
    this.owned = new Set() // subscribe mode: keys of the last join's partitions not yet reported given up
    this.positions = new Map() // key -> the next offset to return
    this.seeks = new Map() // key -> an offset to seek to once the group is joined
    this.batches = [] // {batch, taken, done, resolveOffset, isStale, released}
    this.waiting = null // a poll waiting for a batch
    this.events = [] // position events for the next reply
    this.admin = null
    this.stopped = null // why kafkajs stopped this consumer for good (a crash it does not restart)
    current = this
  }

  async start () {}

  makeConsumer () {
    const s = this.settings
    const assign = this.mode === 'assign'
    // a fresh private group per worker: nothing committed to it (kafkajs's own resets commit
    // -1/-2) outlives this process, and a restarted client does not wait for its old member
    const groupId = assign ? `${s.group_id || ASSIGN_GROUP}.${s.client_id}.${crypto.randomBytes(4).toString('hex')}` : s.group_id
    const session = s.session_timeout_ms || 30000
    const options = {
      groupId,
      rackId: s.client_rack || undefined,
      sessionTimeout: session,
      heartbeatInterval: Math.max(100, Math.min(3000, Math.floor(session / 3))),
      maxWaitTimeInMs: s.fetch_max_wait_ms,
      metadataMaxAge: s.metadata_max_age_ms,
      readUncommitted: s.isolation_level !== 'read_committed',
      allowAutoTopicCreation: false
    }
    if (assign) options.partitionAssigners = [fixedAssigner(this.wanted)]
    this.consumer = this.kafka.consumer(options)
    this.consumer.on(this.consumer.events.GROUP_JOIN, e => this.joined(e.payload))
    if (this.consumer.events.REBALANCING) this.consumer.on(this.consumer.events.REBALANCING, () => this.gaveUp('rebalancing'))
    this.consumer.on(this.consumer.events.CRASH, e => {
      log('ERROR', `consumer crashed: ${errorText(e.payload.error)} (restart: ${e.payload.restart})`)
      // kafkajs gave up on this consumer: every later poll says so, never a silent stop
      if (!e.payload.restart) this.stopped = `the kafkajs consumer stopped after a crash: ${errorText(e.payload.error)}`
    })
  }

  joined ({ memberId, memberAssignment }) {
    this.joins++
    this.memberId = memberId
    const now = new Set()
    for (const [topic, partitions] of Object.entries(memberAssignment || {})) {
      for (const p of partitions) now.add(keyOf(topic, p))
    }
    this.assigned = now
    this.dropBatches(() => true) // fetched in the old generation: kafkajs fetches again
    if (this.mode === 'assign') {
      // kafkajs went back to the committed offsets (none: the reset policy): back to ours
      for (const key of now) {
        const to = this.seeks.has(key) ? this.seeks.get(key) : this.positions.get(key)
        if (to !== undefined) this.seekNow(key, to)
      }
      this.seeks.clear()
      return
    }
    this.gaveUp('rejoin') // a join without REBALANCING before it: the previous join's partitions are gone
    this.owned = new Set(now)
    for (const key of now) { // a new assignment: where each partition starts is not known yet
      const [topic, partition] = key.split('\u0000')
      this.positions.delete(key)
      this.events.push({ event: 'position', topic, partition: Number(partition), offset: null, reason: 'rebalance' })
    }
    this.wake()
  }

  /** Subscribe mode: every partition of the last join, reported given up (`revoke` events; kafkajs
   * names none itself). */
  gaveUp (reason) {
    if (this.mode !== 'subscribe' || !this.owned.size) return
    for (const key of this.owned) {
      const [topic, partition] = key.split('\u0000')
      this.events.push({ event: 'revoke', topic, partition: Number(partition), reason })
    }
    this.owned.clear()
    this.wake()
  }

  resetByLibrary (topic, partition) {
    const key = keyOf(topic, partition)
    this.positions.delete(key)
    this.dropBatches(b => keyOf(b.batch.topic, b.batch.partition) === key)
    this.events.push({ event: 'position', topic, partition, offset: null, reason: 'reset' })
    this.wake()
  }

  seekNow (key, offset) {
    const [topic, partition] = key.split('\u0000')
    this.consumer.seek({ topic, partition: Number(partition), offset: String(offset) })
    this.positions.set(key, offset)
    this.dropBatches(b => keyOf(b.batch.topic, b.batch.partition) === key)
  }

  dropBatches (which) {
    const keep = []
    for (const b of this.batches) {
      if (which(b)) b.done()
      else keep.push(b)
    }
    this.batches = keep
  }

  wake () {
    if (this.waiting) {
      const w = this.waiting
      this.waiting = null
      w()
    }
  }

  /** eachBatch: the batch waits here until polls have taken its records (kafkajs fetches
   * again from that broker after every batch of its last fetch was handled). */
  onBatch ({ batch, resolveOffset, heartbeat, isStale }) {
    if (isStale() || !batch.messages.length) return Promise.resolve()
    return new Promise(resolve => {
      const beat = setInterval(() => heartbeat().catch(() => {}), 1000)
      const entry = { batch, taken: 0, resolveOffset, isStale, released: false, done: () => { clearInterval(beat); resolve() } }
      this.batches.push(entry)
      this.releaseAhead()
      this.wake()
    })
  }

  /** Hand batches back to kafkajs (fetch ahead) while fewer than RECORDS_AHEAD records wait. */
  releaseAhead () {
    let before = 0
    for (const b of this.batches) {
      if (before >= RECORDS_AHEAD) return
      if (!b.released) {
        b.released = true
        b.resolveOffset(b.batch.lastOffset())
        b.done()
      }
      before += b.batch.messages.length - b.taken
    }
  }

  async ensureRunning () {
    if (this.stopped) throw Object.assign(new Error(this.stopped), { name: 'KafkaJSConsumerStopped' })
    if (this.running) return
    if (!this.mode) throw new Error('poll before assign or subscribe')
    this.makeConsumer()
    try {
      await this.consumer.connect()
      const fromBeginning = this.settings.auto_offset_reset !== 'latest'
      await this.consumer.subscribe({ topics: this.topics, fromBeginning })
      await this.consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        // every assigned partition's batch may wait here at once, so a poll that empties one
        // takes the next at hand while kafkajs fetches again from the first one's broker (with
        // one, each batch's end waited for a fetch: 5-20 ms every ~11 polls, 200,000 records)
        partitionsConsumedConcurrently: BATCHES_AT_HAND,
        eachBatch: payload => this.onBatch(payload)
      })
    } catch (err) { // the next poll starts over with a new consumer; this one lets go of its connections
      const failed = this.consumer
      this.consumer = null
      await within(failed.disconnect(), 5000, 'disconnect').catch(e => log('WARN', errorText(e)))
      throw err
    }
    this.running = true
  }

  take (max) {
    const parts = []
    let room = max
    while (room > 0 && this.batches.length) {
      const b = this.batches[0]
      if (b.isStale()) { this.batches.shift(); b.done(); continue }
      const { topic, partition } = b.batch
      const key = keyOf(topic, partition)
      const messages = b.batch.messages.slice(b.taken, b.taken + room)
      b.taken += messages.length
      room -= messages.length
      if (messages.length) {
        const last = messages[messages.length - 1].offset
        if (!b.released) b.resolveOffset(last) // a released batch's offsets were resolved whole
        this.positions.set(key, Number(last) + 1)
        parts.push(partOf(topic, partition, b.batch.highwaterNode ?? null, messages))
      }
      if (b.taken >= b.batch.messages.length) { this.batches.shift(); b.done() }
    }
    this.releaseAhead()
    return parts
  }

  async poll (timeoutMs) {
    await this.ensureRunning()
    if (!this.batches.length && !this.events.length) {
      await new Promise(resolve => {
        const timer = setTimeout(() => { this.waiting = null; resolve() }, timeoutMs)
        this.waiting = () => { clearTimeout(timer); resolve() }
      })
    }
    this.writeEvents()
    return { parts: this.take(this.settings.max_poll_records) }
  }

  writeEvents () {
    for (const e of this.events.splice(0)) emit(e)
  }

  /** An admin client of this consumer's own (log starts, assign-mode commits), kept open. */
  async adminClient () {
    if (!this.admin) {
      const admin = this.kafka.admin()
      await admin.connect()
      this.admin = admin
    }
    return this.admin
  }

  async lowOffset (topic, partition) {
    const admin = await this.adminClient()
    const found = (await admin.fetchTopicOffsets(topic)).find(o => Number(o.partition) === partition)
    if (!found) throw new Error(`no partition ${topic}-${partition}`)
    return Number(found.low)
  }

  /** Offsets committed for the group, as an assign-mode consumer commits them (outside any
   * generation: the group named in the settings has no members, the private one does). */
  async commitOutsideGroup (offsets) {
    if (!this.settings.group_id) throw new Error('commit needs a group id')
    const admin = await this.adminClient()
    const byTopic = new Map()
    for (const o of offsets) {
      if (!byTopic.has(o.topic)) byTopic.set(o.topic, [])
      byTopic.get(o.topic).push({ partition: o.partition, offset: o.offset })
    }
    for (const [topic, partitions] of byTopic) await admin.setOffsets({ groupId: this.settings.group_id, topic, partitions })
  }

  async seek (topic, partition, offset) {
    const key = keyOf(topic, partition)
    if (this.running && this.assigned.has(key)) this.seekNow(key, offset)
    else {
      this.seeks.set(key, offset)
      this.positions.set(key, offset)
    }
  }

  async handle (op, cmd) {
    switch (op) {
      case 'assign': {
        this.mode = 'assign'
        this.wanted = {}
        for (const p of cmd.partitions) (this.wanted[p.topic] = this.wanted[p.topic] || []).push(Number(p.partition))
        this.topics = Object.keys(this.wanted)
        return {}
      }
      case 'subscribe':
        if (!this.settings.group_id) throw new Error('subscribe needs a group id')
        this.mode = 'subscribe'
        this.topics = cmd.topics.map(String)
        return {}
      case 'seek':
        await this.seek(cmd.topic, Number(cmd.partition), Number(cmd.offset))
        return {}
      case 'seek_to_beginning': {
        // kafkajs's own "beginning" (-2) without auto-commit fetches from offset 0, not the log
        // start: the log start is looked up and sought explicitly, and reported where it landed
        const partition = Number(cmd.partition)
        const low = await this.lowOffset(cmd.topic, partition)
        await this.seek(cmd.topic, partition, low)
        emit({ event: 'position', topic: cmd.topic, partition, offset: low, reason: 'reset' })
        return {}
      }
      case 'poll':
        return this.poll(Number(cmd.timeout_ms))
      case 'commit': {
        const offsets = cmd.offsets
          ? cmd.offsets.map(o => ({ topic: o.topic, partition: Number(o.partition), offset: String(o.offset) }))
          : [...this.positions].filter(([key]) => this.assigned.has(key)).map(([key, offset]) => {
              const [topic, partition] = key.split('\u0000')
              return { topic, partition: Number(partition), offset: String(offset) }
            })
        if (!offsets.length) return {}
        if (this.mode === 'assign') await this.commitOutsideGroup(offsets)
        else if (!this.running) throw new Error('commit before the consumer joined its group')
        else await this.consumer.commitOffsets(offsets)
        this.writeEvents()
        return {}
      }
      case 'group_metadata':
        // kafkajs exposes no generation id; its transactions send the group id only
        return { group_id: this.settings.group_id, generation_id: -1, member_id: this.memberId, group_instance_id: null }
      case 'close':
        this.dropBatches(() => true)
        if (this.admin) await within(this.admin.disconnect(), 5000, 'close').catch(err => log('WARN', errorText(err)))
        if (this.consumer) await within(this.consumer.disconnect(), 10000, 'close').catch(err => log('WARN', errorText(err)))
        return {}
      default:
        throw new Error(`unknown consumer op ${op}`)
    }
  }
}

if (require.main === module) {
  serve({
    client: 'kafkajs',
    version: VERSION,
    makeRole: (role, settings) => (role === 'producer' ? new ProducerRole(settings) : new ConsumerRole(settings)),
    errorText,
    log
  })
} else {
  module.exports = { partOf, errorText, within, batchLength, ConsumerRole } // for tests/unit/test_kafkajs_client.py, test_revocations.py
}
