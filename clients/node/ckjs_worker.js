'use strict'
/*
 * highwater's worker for @confluentinc/kafka-javascript ("ckjs": librdkafka behind a
 * kafkajs-compatible API): one producer or one consumer, driven over the worker protocol
 * (docs/adding-a-client.md, version 3) on stdin/stdout; stderr is the log.
 *
 * The library is resolved through NODE_PATH (harness/clients/ckjs.py: the tree of the version
 * under test, built from source). It is driven through its `KafkaJS` API, as a service moving off
 * kafkajs runs it: kafkajs settings in the `kafkaJS` block, librdkafka properties beside it
 * (`debug`, `statistics.interval.ms`, `stats_cb`, `rebalance_cb`, `auto.offset.reset`, ...), which
 * the compat API passes on to librdkafka.
 *
 * What the compat API does not tell an application, and how this worker learns it (the same
 * librdkafka signals clients/python/confluent.py reads; librdkafka 2.15.1 in ckjs 1.10.1):
 * - the serving broker ("replica"): librdkafka's `fetch` debug context logs every Fetch request
 *   as `host:port/<id>: Fetch topic T [p] at offset N`; the lines reach the `kafkaJS.logger`
 *   (the compat API's trampoline of librdkafka's log events), and a record's replica is the
 *   broker of the last fetch at the greatest fetch offset <= its offset. Fallback, before any
 *   fetch line was seen: librdkafka's statistics (`statistics.interval.ms` + `stats_cb`), whose
 *   partition `broker` is the broker it is fetched from (KIP-392's preferred replica included);
 * - leader epochs: each message's `leaderEpoch` (the compat API carries librdkafka's);
 * - position changes librdkafka made on its own, from its `topic` debug context (as confluent.py):
 *   `Offset BEGINNING request for T [p] returned offset N` (or a reset to a cached BEGINNING
 *   offset), reported as a `reset` once the fetcher takes it up (`start fetching at` / `fetch
 *   decide` / a Fetch at that offset); `Seek T [p] to offset N (leader epoch E)` with E >= 0 is
 *   librdkafka's own KIP-320 seek to a divergence point, a `truncation` (the worker's seeks carry
 *   no epoch; a seek with an epoch to exactly where the worker's records end is the compat
 *   layer's own repositioning, not a move); with `auto.offset.reset=error` (Kafka's `none`) the
 *   line `T [p]: offset reset (at ...) to offset INVALID: Partition log truncation detected ...:
 *   broker end offset is N` is returned as a truncation (the compat API only logs the consume
 *   error, which names no partition);
 * - revocations: the compat API calls a `rebalance_cb` of the user's with librdkafka's
 *   ERR__REVOKE_PARTITIONS and `assignmentLost()`: `revoked` or `lost` for each partition,
 *   written at once; ERR__ASSIGN_PARTITIONS is a `rebalance` position change (subscribe mode);
 * - send outcomes: one compat `send()` per record, so each delivery report gives its record's
 *   offset (a `send()` of many answers the lowest offset per partition only); `fail` when
 *   librdkafka refused the record before queueing it (the binding's `produce()` threw: a
 *   LibrdKafkaError, not a KafkaJSError of a delivery report) or for a broker's definite
 *   rejection when there was one attempt only; `info` for everything else.
 *
 * The compat API consumes in groups only (no `assign`). `assign` is emulated with a private group
 * of one member (`<group or "highwater-assign">.<client id>.<random>`) subscribed to the topics:
 * at each assignment the `rebalance_cb` returns, instead of the group's assignment, exactly the
 * partitions asked for, each at the worker's own position (the compat API assigns what the
 * callback returns), as `assign` would have kept them. An assigned partition without a position
 * starts at the offset committed to the settings' group (looked up once), else librdkafka's
 * reset policy. Commits of an assign-mode consumer go to the settings' group through a second
 * compat consumer of that group that never joins it (librdkafka commits outside any generation,
 * as a Java or librdkafka `assign` consumer does).
 *
 * Polls: `run({eachBatch})` hands batches over; each is resolved whole at once (so the compat
 * layer never seeks back on its own) and its records wait here for polls; while more than
 * RECORDS_AHEAD records wait, the batch's callback is held until polls took some (backpressure:
 * the compat layer fetches again only once its workers are free).
 *
 * What the compat API cannot do, and what is used instead: its producer's `sendOffsets` needs a
 * connected consumer of the same process (it asks the consumer's librdkafka handle for its group
 * metadata); the consumer runs in another worker, so the producer makes a compat consumer of the
 * group (never joined) and passes it: the offsets go with the group id, generation -1 and no
 * member id (no KIP-447 fencing of a stale member), as kafkajs sends them. `group_metadata`
 * answers the group id, generation -1, member id "" (the compat API exposes neither). A partition
 * librdkafka stopped after an `auto.offset.reset=error` cannot be sought again through the
 * compat API (librdkafka refuses a seek of a stopped partition; confluent.py re-assigns it): an
 * assign-mode consumer then starts over with a new private group at its positions; a subscribe-mode
 * one cannot.
 */

const crypto = require('crypto')

// first: it sends console output to the log before the library can print
const { emit, makeLog, outcome, pollPart, serve, sleep, within } = require('./worker_protocol')

const PACKAGE = '@confluentinc/kafka-javascript'
const ckjs = require(PACKAGE)
const { Kafka, KafkaJSError } = ckjs.KafkaJS
const VERSION = require(`${PACKAGE}/package.json`).version
const CODES = ckjs.CODES && ckjs.CODES.ERRORS ? ckjs.CODES.ERRORS : require(`${PACKAGE}/lib/error`).codes
const CODE_NAMES = new Map(Object.entries(CODES).map(([name, code]) => [code, name.replace(/^ERR_/, '')]))

const ERR_ASSIGN = CODES.ERR__ASSIGN_PARTITIONS
const ERR_REVOKE = CODES.ERR__REVOKE_PARTITIONS
const ERR_QUEUE_FULL = CODES.ERR__QUEUE_FULL

// --- errors and the log ---------------------------------------------------------------------

const log = makeLog('ckjs-worker')

function errorText (err) {
  if (err === null || err === undefined) return 'Error: unknown error'
  if (typeof err === 'string') return err
  const name = err.name || (err.constructor && err.constructor.name) || 'Error'
  const code = typeof err.code === 'number' && CODE_NAMES.has(err.code) ? `${CODE_NAMES.get(err.code)}: ` : ''
  return `${name}: ${code}${err.message}`
}




// --- settings -------------------------------------------------------------------------------

/** librdkafka's security properties (harness/security.py `as_librdkafka`). */
function securityOf (security) {
  const out = {}
  if (!security || security.protocol === 'PLAINTEXT') return out
  out['security.protocol'] = security.protocol.toLowerCase()
  if (security.protocol.startsWith('SASL_')) {
    out['sasl.mechanism'] = String(security.sasl_mechanism)
    out['sasl.username'] = String(security.sasl_username)
    out['sasl.password'] = String(security.sasl_password)
  }
  if (security.protocol.endsWith('SSL')) {
    out['ssl.endpoint.identification.algorithm'] = security.ssl_check_hostname === false ? 'none' : 'https'
    const files = { ssl_cafile: 'ssl.ca.location', ssl_certfile: 'ssl.certificate.location', ssl_keyfile: 'ssl.key.location', ssl_password: 'ssl.key.password' }
    for (const [key, prop] of Object.entries(files)) if (security[key] != null) out[prop] = security[key]
  }
  return out
}

/** The compat API's logger: librdkafka's lines (its log events) and the compat layer's own. */
/** More of librdkafka's debug contexts for an investigation (`HIGHWATER_LIBRDKAFKA_DEBUG=cgrp`,
 * say), every line of them kept in the worker's log; the worker reads only its own. */
const EXTRA_DEBUG = process.env.HIGHWATER_LIBRDKAFKA_DEBUG || ''

function makeLogger (onLine) {
  const write = (level, message, extra) => {
    const fac = extra && extra.fac ? ` [${extra.fac}]` : ''
    process.stderr.write(`${new Date().toISOString()} ${level}${fac} ${message}\n`)
  }
  const logger = {
    setLogLevel () {},
    namespace () { return logger },
    info (message, extra) { if (!onLine || !onLine(String(message), false)) write('INFO', message, extra) },
    warn (message, extra) { if (onLine) onLine(String(message), true); write('WARN', message, extra) },
    error (message, extra) { if (onLine) onLine(String(message), true); write('ERROR', message, extra) },
    debug (message, extra) {
      const kept = onLine && onLine(String(message), false) === 'keep'
      if (kept || EXTRA_DEBUG) write('DEBUG', message, extra)
    }
  }
  return logger
}

function kafkaOf (settings, logger) {
  return new Kafka({
    kafkaJS: {
      brokers: settings.bootstrap,
      clientId: settings.client_id,
      requestTimeout: settings.request_timeout_ms,
      logger
    },
    ...securityOf(settings.security)
  })
}

// --- the producer ---------------------------------------------------------------------------

/** Broker errors that prove the broker did not append (confluent.py's DEFINITE_REJECTIONS). */
const DEFINITE_REJECTIONS = new Set([
  'MSG_SIZE_TOO_LARGE',
  'RECORD_LIST_TOO_LARGE',
  'INVALID_MSG_SIZE',
  'TOPIC_EXCEPTION',
  'TOPIC_AUTHORIZATION_FAILED',
  'INVALID_REQUIRED_ACKS',
  '_PURGE_QUEUE'
])

class ProducerRole {
  constructor (settings) {
    this.settings = settings
    this.singleAttempt = Number(settings.retries) === 0 && !settings.idempotence
    this.transactional = Boolean(settings.transactional_id)
    this.logger = makeLogger(null)
    this.kafka = kafkaOf(settings, this.logger)
    const kafkaJS = {
      acks: settings.acks === 'all' ? -1 : Number(settings.acks),
      idempotent: Boolean(settings.idempotence || this.transactional),
      maxInFlightRequests: Number(settings.max_in_flight),
      retry: { retries: Number(settings.retries) },
      allowAutoTopicCreation: false
    }
    if (this.transactional) {
      kafkaJS.transactionalId = settings.transactional_id
      kafkaJS.transactionTimeout = settings.transaction_timeout_ms
    }
    this.producer = this.kafka.producer({
      kafkaJS,
      'request.timeout.ms': Number(settings.request_timeout_ms),
      'socket.timeout.ms': Number(settings.request_timeout_ms),
      'delivery.timeout.ms': Number(settings.delivery_timeout_ms),
      'linger.ms': Number(settings.linger_ms)
    })
    this.connected = false
    this.closed = false
    this.pending = new Map() // send id -> true, for sends without an outcome
    this.idle = []
    this.offsetConsumers = new Map() // group id -> a compat consumer of that group (send_offsets)
  }

  async start () {
    if (!this.transactional) { // a transactional producer connects (and inits) in init_transactions
      await this.producer.connect()
      this.connected = true
    }
  }

  send (sid, topic, partition, value) {
    this.pending.set(sid, true)
    if (!this.connected || this.closed) {
      this.done(sid, 'fail', null, 'IllegalStateError: the producer is not connected')
      return
    }
    this.produce(sid, topic, Number(partition), value, null)
  }

  /** One compat send() per record: its delivery report gives the record's own offset. */
  produce (sid, topic, partition, value, deadline) {
    this.producer.send({ topic, messages: [{ value, partition }] }).then(result => {
      const offset = result && result.length ? Number(result[0].baseOffset) : -1
      this.done(sid, 'ok', offset >= 0 ? offset : -1, null)
    }, err => {
      if (!(err instanceof KafkaJSError)) { // the binding's produce() threw: nothing was queued
        if (err && err.code === ERR_QUEUE_FULL) { // wait for room, as Java's max.block.ms
          const until = deadline === null ? Date.now() + Number(this.settings.max_block_ms) : deadline
          if (Date.now() < until && !this.closed) {
            setTimeout(() => this.produce(sid, topic, partition, value, until), 20)
            return
          }
        }
        this.done(sid, 'fail', null, errorText(err))
        return
      }
      const name = CODE_NAMES.get(err.code)
      const kind = this.singleAttempt && DEFINITE_REJECTIONS.has(name) ? 'fail' : 'info'
      this.done(sid, kind, null, errorText(err))
    })
  }

  done (sid, kind, offset, error) {
    if (!this.pending.delete(sid)) return
    outcome(sid, kind, offset, error)
    if (this.pending.size === 0) this.idle.splice(0).forEach(resolve => resolve())
  }

  sendsDone () {
    return this.pending.size === 0 ? Promise.resolve() : new Promise(resolve => this.idle.push(resolve))
  }

  async flush (timeoutMs) {
    const until = Date.now() + timeoutMs
    if (this.connected) await this.producer.flush({ timeout: Math.max(timeoutMs, 1) }).catch(err => log('WARN', `flush: ${errorText(err)}`))
    await within(this.sendsDone(), Math.max(until - Date.now(), 0), 'flush').catch(err => log('WARN', errorText(err)))
  }

  /** A transactional call, again while librdkafka says it may be retried, within `timeoutMs`
   * (the compat API bounds each call by 5 s itself). */
  async retried (call, timeoutMs, what) {
    const until = Date.now() + timeoutMs
    const attempt = async () => {
      for (;;) {
        try {
          return await call()
        } catch (err) {
          if (!err || !err.retriable || Date.now() >= until) throw err
          log('INFO', `${what}: ${errorText(err)}; again`)
          await sleep(100)
        }
      }
    }
    return within(attempt(), timeoutMs, what)
  }

  async handle (op, cmd) {
    const timeoutMs = Number(cmd.timeout_ms || 0)
    switch (op) {
      case 'flush':
        await this.flush(timeoutMs)
        return {}
      case 'close': {
        await this.flush(timeoutMs)
        this.closed = true
        await within(this.producer.disconnect(), 10000, 'disconnect').catch(err => log('WARN', errorText(err)))
        // the producer's own close is what the harness waits for; a group-metadata consumer that
        // does not disconnect in time ends with the process
        for (const c of this.offsetConsumers.values()) await within(c.disconnect(), 5000, 'disconnect').catch(err => log('WARN', errorText(err)))
        for (const sid of [...this.pending.keys()]) this.done(sid, 'info', null, 'Error: the producer closed before the outcome')
        return {}
      }
      case 'init_transactions':
        // the compat producer's connect() is librdkafka's init_transactions (bounded by 5 s there)
        await within(this.producer.connect(), timeoutMs, 'init_transactions')
        this.connected = true
        return {}
      case 'begin_transaction':
        // below the harness's 5 s for the reply of a call it gives no deadline: ours comes first
        await within(this.producer.transaction(), 4000, 'begin_transaction')
        return {}
      case 'commit_transaction':
        await this.retried(async () => { await this.sendsDone(); await this.producer.commit() }, timeoutMs, 'commit_transaction')
        return {}
      case 'abort_transaction':
        await this.retried(async () => { await this.sendsDone(); await this.producer.abort() }, timeoutMs, 'abort_transaction')
        return {}
      case 'send_offsets': {
        const topics = new Map()
        for (const o of cmd.offsets) {
          if (!topics.has(o.topic)) topics.set(o.topic, [])
          topics.get(o.topic).push({ partition: Number(o.partition), offset: String(o.offset) })
        }
        const send = async () => {
          const consumer = await this.offsetConsumer(cmd.group.group_id)
          await this.producer.sendOffsets({ consumer, topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })) })
        }
        await within(send(), timeoutMs, 'send_offsets')
        return {}
      }
      default:
        throw new Error(`unknown producer op ${op}`)
    }
  }

  /** A compat consumer of `groupId` that never joins it: the compat producer's sendOffsets takes
   * the group metadata from a consumer of this process (generation -1, no member id). */
  async offsetConsumer (groupId) {
    let consumer = this.offsetConsumers.get(groupId)
    if (!consumer) {
      consumer = this.kafka.consumer({ kafkaJS: { groupId, autoCommit: false } })
      await connected(consumer, CONNECT_MS)
      this.offsetConsumers.set(groupId, consumer)
    }
    return consumer
  }
}

/** How long a connect may take before the command that needed it fails (a cluster that does not
 * answer must not hold the worker's command chain past the harness's wait for the reply). */
const CONNECT_MS = 20000

/** `client` connected within `ms`, or disconnected again and the TimeoutException thrown. */
async function connected (client, ms) {
  try {
    await within(client.connect(), ms, 'connect')
  } catch (err) {
    await within(client.disconnect(), 5000, 'disconnect').catch(e => log('WARN', errorText(e)))
    throw err
  }
}

// --- librdkafka's log lines (the consumer) --------------------------------------------------

const FETCH = /\/(\d+): Fetch topic (\S+) \[(\d+)\] at offset (\d+)/
const LOOKED_UP = /Offset \S+ request for (\S+) \[(\d+)\] returned offset \S+ \((-?\d+)\)/
const CACHED_RESET = /(\S+) \[(\d+)\]: offset reset \(at .*\) to cached BEGINNING offset offset (\d+)/
const START_FETCHING = /Partition (\S+) \[(\d+)\] start fetching at offset (\S+) \(/
const FETCH_DECIDE = /Topic (\S+) \[(\d+)\]: fetch decide: updating to version \d+ \(was -?\d+\) at offset (\S+) \(/
const START_STOP = /(?:Start|Stopping) fetch for (\S+) \[(\d+)\] in state/
const SEEK = /Seek (\S+) \[(\d+)\] to offset (\S+) \(leader epoch (-?\d+)\) in state/
const INVALID_RESET = /(\S+) \[(\d+)\]: offset reset \(at .*\) to offset INVALID: (.*)/
const TRUNCATED = /log truncation detected at .*: broker end offset is (-?\d+)/
/** lines about a partition's position, kept in the log (never the per-Fetch ones) */
const EVIDENCE = ['request for ', 'offset reset (at ', 'start fetching at ', 'fetch decide: ', 'Seek ', 'fetch for ', 'Offset reply', 'offset query', 'changed fetch state']

const keyOf = (topic, partition) => `${topic}\u0000${partition}`
const splitKey = key => { const [topic, p] = key.split('\u0000'); return [topic, Number(p)] }

/** Which broker answered the fetches of each partition, by fetch offset (confluent.py's
 * FetchSources: a fetch at N forgets those noted above N, a position left behind). */
class FetchSources {
  constructor () { this.byKey = new Map() } // key -> [[fetchOffset, node], ...] ascending

  note (key, offset, node) {
    let list = this.byKey.get(key)
    if (!list) this.byKey.set(key, (list = []))
    while (list.length && list[list.length - 1][0] >= offset) list.pop()
    list.push([offset, node])
    if (list.length > 64) list.splice(0, list.length - 64)
  }

  sourceOf (key, offset) {
    const list = this.byKey.get(key)
    if (!list) return null
    for (let i = list.length - 1; i >= 0; i--) if (list[i][0] <= offset) return list[i][1]
    return null
  }
}

// --- the consumer ---------------------------------------------------------------------------

const ASSIGN_GROUP = 'highwater-assign'
/** How many records may wait here before a batch's callback is held (backpressure). */
const RECORDS_AHEAD = 10000

/** One entry of a poll reply: records of one partition served by `replica`, as columns. */
class ConsumerRole {
  constructor (settings) {
    this.settings = settings
    this.sources = new FetchSources()
    this.statsBroker = new Map() // key -> the broker statistics last named
    this.unapplied = new Map() // key -> [looked-up offset, fetches seen at another offset]
    this.logger = makeLogger((line, warned) => this.line(line, warned))
    this.kafka = kafkaOf(settings, this.logger)
    this.mode = null
    this.topics = []
    this.wanted = new Set() // assign mode: keys asked for
    this.consumer = null
    this.committer = null // assign mode: a compat consumer of the settings' group, never joined
    this.running = false
    this.assigned = new Set() // keys assigned now
    this.positions = new Map() // key -> the next offset to return (or -2: the beginning)
    this.delivered = new Map() // key -> the offset after the last record the compat layer handed over
    this.queue = [] // in order: {records} (one partition's, some taken) and {event} / {truncation} / {error}
    this.waiting = null
    this.held = [] // resolvers of held eachBatch callbacks
    this.stopped = new Set() // keys librdkafka stopped (auto.offset.reset=error)
  }

  async start () {}

  consumerConfig (groupId) {
    const s = this.settings
    const kafkaJS = {
      groupId,
      fromBeginning: s.auto_offset_reset !== 'latest',
      autoCommit: false,
      maxWaitTimeInMs: s.fetch_max_wait_ms,
      metadataMaxAge: s.metadata_max_age_ms,
      readUncommitted: s.isolation_level !== 'read_committed',
      allowAutoTopicCreation: false
    }
    if (s.client_rack) kafkaJS.rackId = s.client_rack // client.rack (KIP-392)
    const config = {
      kafkaJS,
      debug: ['fetch,topic', EXTRA_DEBUG].filter(Boolean).join(','), // the lines `line` reads (and more, asked for)
      log_level: 7,
      'statistics.interval.ms': 1000,
      stats_cb: event => this.stats(event),
      rebalance_cb: (err, assignment, fns) => this.rebalance(err, assignment, fns),
      'enable.partition.eof': false
    }
    if (s.auto_offset_reset === 'none') config['auto.offset.reset'] = 'error'
    if (this.mode === 'subscribe' && s.group_protocol && s.group_protocol !== 'classic') {
      config['group.protocol'] = s.group_protocol
      if (s.group_remote_assignor) config['group.remote.assignor'] = s.group_remote_assignor
      delete kafkaJS.metadataMaxAge
      config['topic.metadata.refresh.interval.ms'] = s.metadata_max_age_ms
    } else if (s.session_timeout_ms != null) {
      kafkaJS.sessionTimeout = Number(s.session_timeout_ms)
    }
    return config
  }

  // --- librdkafka's signals

  stats (event) {
    try {
      const stats = JSON.parse(event && event.message !== undefined ? event.message : event)
      for (const [topic, t] of Object.entries(stats.topics || {})) {
        for (const [p, part] of Object.entries(t.partitions || {})) {
          if (Number(p) >= 0 && part.broker >= 0) this.statsBroker.set(keyOf(topic, Number(p)), Number(part.broker))
        }
      }
    } catch (err) {
      log('WARN', `statistics: ${errorText(err)}`)
    }
  }

  /** A log line of librdkafka's (or the compat layer's); 'keep' to write a debug line to the log. */
  line (text, warned) {
    if (text.includes('Fetch topic ')) {
      const m = FETCH.exec(text)
      if (m) {
        const key = keyOf(m[2], Number(m[3]))
        const offset = Number(m[4])
        this.sources.note(key, offset, Number(m[1]))
        if (this.unapplied.has(key)) this.fetching(key, offset)
      }
      return false
    }
    if (!EVIDENCE.some(marker => text.includes(marker))) return false
    let m
    if (text.includes('request for ')) {
      if ((m = LOOKED_UP.exec(text)) && Number(m[3]) >= 0) this.unapplied.set(keyOf(m[1], Number(m[2])), [Number(m[3]), 0])
    } else if (text.includes('to offset INVALID')) {
      if ((m = INVALID_RESET.exec(text))) this.lostPosition(m[1], Number(m[2]), m[3])
    } else if (text.includes('to cached BEGINNING')) {
      if ((m = CACHED_RESET.exec(text))) this.unapplied.set(keyOf(m[1], Number(m[2])), [Number(m[3]), 0])
    } else if (text.includes('start fetching at ')) {
      if ((m = START_FETCHING.exec(text))) this.startsAt(keyOf(m[1], Number(m[2])), m[3])
    } else if (text.includes('fetch decide: ')) {
      if ((m = FETCH_DECIDE.exec(text))) this.startsAt(keyOf(m[1], Number(m[2])), m[3])
    } else if (text.includes('Seek ')) {
      if ((m = SEEK.exec(text))) {
        const key = keyOf(m[1], Number(m[2]))
        this.forget(key, 'a seek')
        // the worker's seeks carry no leader epoch; librdkafka's KIP-320 seek does, and so does
        // the compat layer's repositioning to where its records to us ended (not a move)
        if (/^\d+$/.test(m[3]) && Number(m[4]) >= 0 && Number(m[3]) !== this.delivered.get(key)) {
          this.moved(key, Number(m[3]), 'truncation')
        }
      }
    } else if (text.includes('fetch for ')) {
      if ((m = START_STOP.exec(text))) this.forget(keyOf(m[1], Number(m[2])), 'a fetch start or stop')
    }
    return warned ? false : 'keep'
  }

  startsAt (key, start) {
    const pending = this.unapplied.get(key)
    if (pending === undefined) return
    this.unapplied.delete(key)
    if (start === String(pending[0])) this.moved(key, pending[0], 'reset')
    else log('INFO', `${key.replace('\u0000', ' [')}]: looked-up offset ${pending[0]} not taken up (the fetcher goes on at ${start}): no reset`)
  }

  fetching (key, offset) {
    const [lookedUp, others] = this.unapplied.get(key)
    if (offset === lookedUp) {
      this.unapplied.delete(key)
      this.moved(key, lookedUp, 'reset')
    } else if (others) {
      this.unapplied.delete(key)
    } else {
      this.unapplied.set(key, [lookedUp, 1])
    }
  }

  forget (key) {
    this.unapplied.delete(key)
  }

  /** librdkafka moved a partition on its own: reported in order with the records (the ones that
   * wait here were fetched before the move). */
  moved (key, offset, reason) {
    const [topic, partition] = splitKey(key)
    log('INFO', `${topic} [${partition}]: position change to ${offset} (${reason})`)
    if (this.mode === 'assign' && !this.wanted.has(key)) return
    this.queue.push({ event: { event: 'position', topic, partition, offset, reason } })
    this.wake()
  }

  /** auto.offset.reset=error: librdkafka stopped the partition; a truncation it found is left to us. */
  lostPosition (topic, partition, reason) {
    const key = keyOf(topic, partition)
    this.stopped.add(key)
    const m = TRUNCATED.exec(reason)
    if (m) {
      const offset = Number(m[1])
      this.queue.push({ truncation: [{ topic, partition, offset: offset >= 0 ? offset : null }], error: `KafkaError: _AUTO_OFFSET_RESET: ${reason}` })
    } else {
      this.queue.push({ error: `KafkaError: _AUTO_OFFSET_RESET: ${topic} [${partition}]: ${reason}` })
    }
    this.wake()
  }

  // --- the group

  /** The compat API's rebalance_cb: sees assignments and revocations. Assign mode returns the
   * partitions asked for at the worker's positions (the compat layer assigns what it returns). */
  rebalance (err, assignment, fns) {
    const assigning = err && err.code === ERR_ASSIGN
    const revoking = err && err.code === ERR_REVOKE
    if (revoking) {
      const lost = fns && fns.assignmentLost ? fns.assignmentLost() : false
      for (const tp of assignment) {
        const key = keyOf(tp.topic, tp.partition)
        this.assigned.delete(key)
        this.dropRecords(k => k === key)
        if (this.mode === 'subscribe') emit({ event: 'revoke', topic: tp.topic, partition: tp.partition, reason: lost ? 'lost' : 'revoked' })
      }
      this.releaseHeld()
      return undefined
    }
    if (!assigning) return undefined
    if (this.mode === 'assign') {
      const mine = []
      for (const tp of assignment) {
        const key = keyOf(tp.topic, tp.partition)
        if (!this.wanted.has(key)) continue
        const entry = { topic: tp.topic, partition: tp.partition }
        if (this.positions.has(key)) entry.offset = this.positions.get(key)
        mine.push(entry)
        this.assigned.add(key)
        this.stopped.delete(key)
        this.dropRecords(k => k === key)
      }
      log('INFO', `assigned ${JSON.stringify(mine)}`)
      return mine
    }
    for (const tp of assignment) {
      const key = keyOf(tp.topic, tp.partition)
      this.assigned.add(key)
      this.stopped.delete(key)
      this.positions.delete(key)
      this.dropRecords(k => k === key)
      this.queue.push({ event: { event: 'position', topic: tp.topic, partition: tp.partition, offset: null, reason: 'rebalance' } })
    }
    this.wake()
    return undefined
  }

  // --- records

  onBatch ({ batch, resolveOffset }) {
    const { topic, partition, messages } = batch
    if (!messages.length) return Promise.resolve()
    const last = messages[messages.length - 1]
    resolveOffset(last.offset, last.leaderEpoch) // handed over whole: the compat layer never seeks back
    const key = keyOf(topic, partition)
    this.delivered.set(key, Number(last.offset) + 1)
    if (this.mode === 'assign' && !this.assigned.has(key)) return Promise.resolve()
    const offsets = []
    const values = []
    const epochs = []
    const replicas = []
    for (const m of messages) {
      const offset = Number(m.offset)
      offsets.push(offset)
      values.push(m.value === null || m.value === undefined ? null : m.value.toString('utf8'))
      epochs.push(m.leaderEpoch >= 0 ? m.leaderEpoch : null)
      let replica = this.sources.sourceOf(key, offset)
      if (replica === null) replica = this.statsBroker.has(key) ? this.statsBroker.get(key) : null
      replicas.push(replica)
    }
    this.queue.push({ key, topic, partition, offsets, values, epochs, replicas, taken: 0 })
    this.wake()
    if (this.waitingRecords() <= RECORDS_AHEAD) return Promise.resolve()
    return new Promise(resolve => this.held.push(resolve))
  }

  waitingRecords () {
    let n = 0
    for (const item of this.queue) if (item.offsets) n += item.offsets.length - item.taken
    return n
  }

  releaseHeld () {
    for (const resolve of this.held.splice(0)) resolve()
  }

  dropRecords (which) {
    this.queue = this.queue.filter(item => !(item.offsets && which(item.key)))
  }

  wake () {
    if (this.waiting) {
      const w = this.waiting
      this.waiting = null
      w()
    }
  }

  async ensureRunning (timeoutMs) {
    if (this.running) return
    if (!this.mode) throw new Error('poll before assign or subscribe')
    const s = this.settings
    const assign = this.mode === 'assign'
    // a fresh private group per worker: nothing committed to it outlives this process
    const groupId = assign ? `${s.group_id || ASSIGN_GROUP}.${s.client_id}.${crypto.randomBytes(4).toString('hex')}` : s.group_id
    if (assign && s.group_id) await this.startAtCommitted(timeoutMs)
    const consumer = this.kafka.consumer(this.consumerConfig(groupId))
    try {
      await within(consumer.connect(), timeoutMs + CONNECT_MS, 'connect')
      await consumer.subscribe({ topics: this.topics })
      await consumer.run({ eachBatchAutoResolve: false, eachBatch: payload => this.onBatch(payload) })
    } catch (err) {
      await within(consumer.disconnect(), 5000, 'disconnect').catch(e => log('WARN', errorText(e)))
      throw err
    }
    this.consumer = consumer
    this.running = true
  }

  /** Assign mode: a partition asked for without a position starts at the offset committed to
   * the settings' group, as librdkafka's or Java's `assign` does. */
  async startAtCommitted (timeoutMs) {
    const open = [...this.wanted].filter(key => !this.positions.has(key))
    if (!open.length) return
    try {
      const committer = await this.committerOf()
      const found = await within(committer.committed(open.map(key => { const [topic, partition] = splitKey(key); return { topic, partition } }), Math.max(timeoutMs, 1000)), Math.max(timeoutMs, 1000) + 1000, 'committed')
      for (const c of found) if (c.offset !== null && Number(c.offset) >= 0) this.positions.set(keyOf(c.topic, c.partition), Number(c.offset))
    } catch (err) {
      log('WARN', `committed offsets of ${this.settings.group_id} not looked up: ${errorText(err)}`)
    }
  }

  async committerOf () {
    if (!this.committer) {
      const committer = this.kafka.consumer({ kafkaJS: { groupId: this.settings.group_id, autoCommit: false } })
      await connected(committer, CONNECT_MS)
      this.committer = committer
    }
    return this.committer
  }

  take (max) {
    const parts = []
    let room = max
    while (room > 0 && this.queue.length && this.queue[0].offsets) {
      const item = this.queue[0]
      const end = Math.min(item.offsets.length, item.taken + room)
      let i = item.taken
      while (i < end) { // one part per run of one replica
        const replica = item.replicas[i]
        let j = i + 1
        while (j < end && item.replicas[j] === replica) j++
        parts.push(pollPart(item.topic, item.partition, replica, item.offsets.slice(i, j), item.values.slice(i, j), item.epochs.slice(i, j)))
        i = j
      }
      room -= end - item.taken
      item.taken = end
      this.positions.set(item.key, item.offsets[end - 1] + 1)
      if (item.taken >= item.offsets.length) this.queue.shift()
    }
    if (this.waitingRecords() <= RECORDS_AHEAD) this.releaseHeld()
    return parts
  }

  /** Events at the head of the queue go out before the reply (in order with the records). */
  writeEvents () {
    while (this.queue.length && this.queue[0].event) emit(this.queue.shift().event)
  }

  async poll (timeoutMs) {
    await this.ensureRunning(timeoutMs)
    if (!this.queue.length) {
      await new Promise(resolve => {
        const timer = setTimeout(() => { this.waiting = null; resolve() }, timeoutMs)
        this.waiting = () => { clearTimeout(timer); resolve() }
      })
    }
    this.writeEvents()
    const head = this.queue[0]
    if (head && head.truncation) {
      this.queue.shift()
      return { truncation: head.truncation, error: head.error }
    }
    if (head && head.error) {
      this.queue.shift()
      throw Object.assign(new Error(head.error.replace(/^KafkaError: /, '')), { name: 'KafkaError' })
    }
    return { parts: this.take(this.settings.max_poll_records) }
  }

  async seek (topic, partition, offset) {
    const key = keyOf(topic, partition)
    this.positions.set(key, offset)
    this.dropRecords(k => k === key)
    this.unapplied.delete(key)
    this.releaseHeld()
    if (!this.running || !this.assigned.has(key)) return // applied at the assignment
    if (this.stopped.has(key)) {
      // librdkafka refuses to seek a partition it stopped (auto.offset.reset=error), and the
      // compat API has no assign to start it again: an assign-mode consumer starts over
      if (this.mode !== 'assign') throw Object.assign(new Error(`${topic} [${partition}] was stopped by librdkafka and cannot be sought in subscribe mode`), { name: 'IllegalStateError' })
      log('INFO', `${topic} [${partition}] was stopped by librdkafka: the consumer starts over at its positions`)
      await this.restart()
      return
    }
    this.consumer.seek({ topic, partition, offset: String(offset) })
  }

  async restart () {
    const old = this.consumer
    this.consumer = null
    this.running = false
    this.assigned.clear()
    this.stopped.clear()
    this.queue = this.queue.filter(item => !item.offsets)
    this.releaseHeld()
    if (old) await within(old.disconnect(), 10000, 'disconnect').catch(err => log('WARN', errorText(err)))
  }

  async commitOutsideGroup (offsets) {
    const committer = await this.committerOf()
    await committer.commitOffsets(offsets)
  }

  async handle (op, cmd) {
    switch (op) {
      case 'assign':
        this.mode = 'assign'
        this.wanted = new Set(cmd.partitions.map(p => keyOf(p.topic, Number(p.partition))))
        this.topics = [...new Set(cmd.partitions.map(p => String(p.topic)))]
        if (this.running) await this.restart() // a new assignment: a new private group
        return {}
      case 'subscribe':
        if (!this.settings.group_id) throw new Error('subscribe needs a group id')
        this.mode = 'subscribe'
        this.topics = cmd.topics.map(String)
        return {}
      case 'seek':
        await this.seek(cmd.topic, Number(cmd.partition), Number(cmd.offset))
        return {}
      case 'seek_to_beginning':
        // librdkafka resolves the beginning itself; where it lands is reported as a `reset`
        // (its `Offset BEGINNING request ... returned offset N` line)
        await this.seek(cmd.topic, Number(cmd.partition), -2)
        return {}
      case 'poll':
        return this.poll(Number(cmd.timeout_ms))
      case 'commit': {
        const offsets = cmd.offsets
          ? cmd.offsets.map(o => ({ topic: o.topic, partition: Number(o.partition), offset: String(o.offset) }))
          : [...this.positions].filter(([key, offset]) => this.assigned.has(key) && offset >= 0).map(([key, offset]) => {
              const [topic, partition] = splitKey(key)
              return { topic, partition, offset: String(offset) }
            })
        if (!offsets.length || !this.settings.group_id) return {}
        if (this.mode === 'assign') await this.commitOutsideGroup(offsets)
        else if (!this.running) throw new Error('commit before the consumer joined its group')
        else await this.consumer.commitOffsets(offsets)
        this.writeEvents()
        return {}
      }
      case 'group_metadata':
        // the compat API exposes no generation or member id (and its producer takes the group
        // metadata from a consumer object of its own process: see the header)
        return { group_id: this.settings.group_id, generation_id: -1, member_id: '', group_instance_id: null }
      case 'close':
        this.queue = []
        this.releaseHeld()
        if (this.consumer) await within(this.consumer.disconnect(), 10000, 'close').catch(err => log('WARN', errorText(err)))
        if (this.committer) await within(this.committer.disconnect(), 5000, 'close').catch(err => log('WARN', errorText(err)))
        return {}
      default:
        throw new Error(`unknown consumer op ${op}`)
    }
  }
}

// --- the process ----------------------------------------------------------------------------

if (require.main === module) {
  serve({
    client: 'ckjs',
    version: VERSION,
    makeRole: (role, settings) => (role === 'producer' ? new ProducerRole(settings) : new ConsumerRole(settings)),
    errorText,
    log
  })
} else {
  module.exports = { errorText, within, ConsumerRole, FetchSources }
}
