'use strict'
/*
 * The worker protocol's Node.js side (docs/adding-a-client.md, version 3), shared by highwater's
 * Node.js workers: highwater_worker.js (kafkajs) and ckjs_worker.js (@confluentinc/kafka-javascript).
 * What is the protocol's and not a library's lives here: the output discipline (send outcomes
 * gathered into `oks` / `sends` lines, a reply or an event only after every outcome before it,
 * nothing but protocol lines on stdout), the command loop (sends start at once, every other
 * command runs after the one before it, in order) and the process's lifetime (it ends after
 * `close`, at the end of stdin once the command at hand is answered, and within half a second
 * of its parent's death). A worker brings its roles (`start`, `send`, `handle(op, cmd)`) and its
 * library's error text.
 */

const readline = require('readline')

const PROTOCOL = 3 // 2: `revoke` events; 3: `batch` lines
// Library code that prints must not corrupt the protocol: console output goes to the log.
for (const name of ['log', 'info', 'debug', 'warn']) console[name] = (...args) => console.error(...args)

// --- output ---------------------------------------------------------------------------------

// the next outcome lines, as runs in the order the outcomes came: acknowledged sends as
// {oks: [id, offset, id, offset, ...]} (compact_oks), any other as {sends: [[id, outcome, offset, error], ...]}
let outcomes = []
let outcomesScheduled = false

function writeLine (value) {
  process.stdout.write(JSON.stringify(value) + '\n')
}

function flushOutcomes () {
  outcomesScheduled = false
  if (outcomes.length) {
    const runs = outcomes
    outcomes = []
    for (const run of runs) writeLine(run)
  }
}

/** A send's outcome (`ok` with its offset, `fail`, `info`), written with the others of its turn. */
function outcome (sid, kind, offset, error) {
  const last = outcomes[outcomes.length - 1]
  if (kind === 'ok' && offset !== null) {
    if (last && last.oks) last.oks.push(sid, offset)
    else outcomes.push({ oks: [sid, offset] })
  } else if (last && last.sends) last.sends.push([sid, kind, offset, error])
  else outcomes.push({ sends: [[sid, kind, offset, error]] })
  if (!outcomesScheduled) {
    outcomesScheduled = true
    setImmediate(flushOutcomes) // the outcomes of one response go out as one line
  }
}

/** A reply or an event: after every outcome before it (a flush's outcomes precede its reply). */
function emit (value) {
  flushOutcomes()
  writeLine(value)
}

/** A logger writing `<time> <level> <name>: <message>` lines to stderr, the worker's log. */
function makeLog (name) {
  return (level, message) => process.stderr.write(`${new Date().toISOString()} ${level} ${name}: ${message}\n`)
}

/** Rejects with a TimeoutException after `ms` unless `promise` settles first. */
function within (promise, ms, what) {
  let timer
  const deadline = new Promise((resolve, reject) => {
    timer = setTimeout(() => {
      const err = new Error(`${what} did not complete within ${ms} ms`)
      err.name = 'TimeoutException'
      reject(err)
    }, Math.max(ms, 0))
  })
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer))
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// --- the process ----------------------------------------------------------------------------

/** How long the end of stdin waits for the command at hand: a library call that hangs (a
 * connect to an unreachable cluster) must not keep the worker alive. */
const STDIN_END_GRACE_MS = 10000

function watchParent (log) {
  const parent = process.ppid
  setInterval(() => {
    if (process.ppid !== parent) {
      log('INFO', `parent ${parent} is gone, exiting`)
      process.exit(3)
    }
  }, 500).unref()
}

/**
 * Serve the protocol on stdin/stdout: the first line makes the role (`makeRole(role, settings)`
 * for `config.client` === `client`), answered with the ready reply naming `version`; then sends go
 * to `role.send` at once and every other command to `role.handle(op, cmd)`, one at a time.
 */
function serve ({ client, version, makeRole, errorText, log }) {
  process.on('unhandledRejection', err => log('ERROR', `unhandled: ${errorText(err)}`))
  watchParent(log)
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
  let role = null
  let chain = Promise.resolve() // commands run one at a time, in order
  let started = false
  lines.on('line', raw => {
    if (!raw.trim()) return
    const cmd = JSON.parse(raw)
    if (!started) {
      started = true
      chain = chain.then(async () => {
        try {
          const config = cmd.config || {}
          if (config.client !== client) throw new Error(`no ${client} worker for client ${config.client}`)
          role = makeRole(cmd.role, config.settings)
          await role.start()
          emit({ id: 0, ok: true, version, protocol: PROTOCOL, batches: true, compact_oks: true })
        } catch (err) {
          emit({ id: 0, error: errorText(err) })
          process.exit(1)
        }
      })
      return
    }
    // Sends start at once, never behind a command that waits (the harness sends only once the
    // ready reply came, so the role exists; a command is written after the sends before it)
    if (cmd.op === 'batch') { // sends first, first + 1, ... as columns (protocol 3)
      const { topic, first, partitions, values } = cmd
      for (let i = 0; i < values.length; i++) role.send(first + i, topic, partitions[i], values[i])
      return
    }
    if (cmd.op === 'sends') {
      for (const [sid, topic, partition, value] of cmd.sends) role.send(sid, topic, partition, value)
      return
    }
    if (cmd.op === 'send') {
      role.send(cmd.id, cmd.topic, cmd.partition, cmd.value)
      return
    }
    chain = chain.then(async () => {
      let reply
      try {
        reply = { id: cmd.id, ok: true, ...(await role.handle(cmd.op, cmd)) }
      } catch (err) {
        reply = { id: cmd.id, error: errorText(err) }
      }
      emit(reply)
      if (cmd.op === 'close') {
        flushOutcomes()
        process.stdout.write('', () => process.exit(0))
      }
    })
  })
  lines.on('close', () => {
    Promise.race([chain, sleep(STDIN_END_GRACE_MS)]).then(() => {
      flushOutcomes()
      process.stdout.write('', () => process.exit(0))
    })
  })
}

/**
 * One partition's records of a poll as the protocol's `batch` line carries them (version 3):
 * `offsets` as runs [first, count, first, count, ...] of consecutive offsets, `epochs` as runs
 * [epoch, count, ...] of equal leader epochs (null: unknown), `values` in order; from the
 * records' offsets, values and epochs as parallel arrays.
 */
function pollPart (topic, partition, replica, offsets, values, epochs) {
  const offsetRuns = []
  const epochRuns = []
  let expected = null
  for (let i = 0; i < offsets.length; i++) {
    const offset = offsets[i]
    if (offset === expected) offsetRuns[offsetRuns.length - 1]++
    else offsetRuns.push(offset, 1)
    expected = offset + 1
    const epoch = epochs[i]
    if (epochRuns.length && epochRuns[epochRuns.length - 2] === epoch) epochRuns[epochRuns.length - 1]++
    else epochRuns.push(epoch, 1)
  }
  return { topic, partition, replica, offsets: offsetRuns, values, epochs: epochRuns }
}

module.exports = { PROTOCOL, emit, flushOutcomes, makeLog, outcome, pollPart, serve, sleep, within, writeLine }
