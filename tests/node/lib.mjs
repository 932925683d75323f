// Shared harness for the Node client suites (kafkajs.mjs, platformatic.mjs): a scenario
// runner with a per-scenario deadline and cleanup, small assertion helpers, bounded polling,
// and the client-matrix result lines (MATRIX_RESULTS, see HELPERS/issue 6):
//     <client>\t<scenario>\t<PASS|FAIL|SKIP>\t<note>
// Every wait in here is bounded; a scenario that overruns its deadline is a FAIL.

import { appendFileSync } from 'node:fs'
import { isDeepStrictEqual, inspect } from 'node:util'
import { randomBytes } from 'node:crypto'

export const SCENARIOS = [
  'admin', 'produce_consume', 'compression', 'groups', 'offsets_for_times',
  'compaction', 'transactions', 'special'
]

/** Thrown by a scenario body to report SKIP (with the reason as note). */
export class Skip extends Error {}

export function assert (cond, msg) {
  if (!cond) throw new Error(`assertion failed: ${msg}`)
}

export function assertEq (actual, expected, what) {
  if (!isDeepStrictEqual(actual, expected)) {
    throw new Error(`${what}: expected ${inspect(expected, { depth: 6, breakLength: Infinity })}, ` +
      `got ${inspect(actual, { depth: 6, breakLength: Infinity })}`)
  }
}

export const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/** Unique names so scenarios and reruns against one broker never collide. */
export function uniq (prefix) {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`
}

/** Polls `fn` until it returns a truthy value or `ms` passes; the last error/value goes in
 * the message so a failure says what was seen. */
export async function waitFor (what, fn, { ms = 15000, every = 100 } = {}) {
  const deadline = Date.now() + ms
  let last
  for (;;) {
    try {
      const v = await fn()
      if (v) return v
      last = 'falsy'
    } catch (e) {
      last = e
    }
    if (Date.now() > deadline) {
      throw new Error(`not within ${ms} ms: ${what}; last: ${last instanceof Error ? last.message : inspect(last)}`)
    }
    await sleep(every)
  }
}

/** Rejects after `ms` with a message naming `what` (the promise itself keeps running). */
export function withTimeout (promise, ms, what) {
  let timer
  const t = new Promise((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)
  })
  return Promise.race([promise, t]).finally(() => clearTimeout(timer))
}

function oneLine (s) {
  return String(s).replace(/[\t\r\n]+/g, ' ').slice(0, 400)
}

/**
 * Runs the named scenarios of one client in order and returns the number that failed.
 * scenarios: { name: async (ctx) => note }, ctx = { bootstrap, defer(fn), note(s) }; `order`
 * lists the scenario ids in run order (default SCENARIOS, the matrix columns).
 * Cleanups registered with ctx.defer run after the body (last first), each bounded.
 */
export async function runSuite (client, scenarios, { bootstrap, only, timeoutMs = 60000, order = SCENARIOS }) {
  const results = []
  const names = order.filter(s => s in scenarios && (!only.length || only.includes(s)))
  for (const unknown of only.filter(s => !order.includes(s))) {
    console.error(`${client}: unknown scenario ${unknown} (known: ${order.join(' ')})`)
    results.push({ scenario: unknown, status: 'FAIL', note: 'unknown scenario' })
  }
  for (const name of names) {
    const cleanups = []
    const notes = []
    const ctx = { bootstrap, defer: fn => cleanups.push(fn), note: s => notes.push(s) }
    const t0 = Date.now()
    let status = 'PASS'
    let note = ''
    try {
      const ret = await withTimeout(scenarios[name](ctx), timeoutMs, `${client} ${name}`)
      if (ret) notes.unshift(ret)
      note = notes.join('; ')
    } catch (e) {
      if (e instanceof Skip) {
        status = 'SKIP'
        note = e.message
      } else {
        status = 'FAIL'
        note = (notes.length ? notes.join('; ') + '; ' : '') + (e?.stack?.split('\n').slice(0, 2).join(' ') ?? String(e))
        if (process.env.NODE_SUITE_VERBOSE) console.error(e)
      }
    }
    for (const fn of cleanups.reverse()) {
      try {
        await withTimeout(Promise.resolve().then(fn), 10000, `${name} cleanup`)
      } catch (e) {
        console.error(`${client} ${name}: cleanup: ${e.message}`)
      }
    }
    const secs = ((Date.now() - t0) / 1000).toFixed(1)
    note = oneLine(note)
    console.log(`${client}\t${name}\t${status}\t${secs}s\t${note}`)
    results.push({ scenario: name, status, note })
  }
  if (process.env.MATRIX_RESULTS) {
    appendFileSync(process.env.MATRIX_RESULTS,
      results.map(r => `${client}\t${r.scenario}\t${r.status}\t${oneLine(r.note)}\n`).join(''))
  }
  const failed = results.filter(r => r.status === 'FAIL').length
  const passed = results.filter(r => r.status === 'PASS').length
  const skipped = results.filter(r => r.status === 'SKIP').length
  console.log(`${client}: ${passed} passed, ${failed} failed, ${skipped} skipped`)
  return failed
}

/** argv: BOOTSTRAP [scenario ...] */
export function parseArgs () {
  const [bootstrap, ...only] = process.argv.slice(2)
  if (!bootstrap) {
    console.error('usage: node <suite>.mjs HOST:PORT [scenario ...]')
    process.exit(2)
  }
  return { bootstrap, only }
}

/** Topic configs that make the broker compact within a second or two (the recipe of
 * tests/python/test_compaction.py). */
export const COMPACT_CONFIGS = {
  'cleanup.policy': 'compact',
  'segment.ms': '100',
  'min.cleanable.dirty.ratio': '0.01',
  'delete.retention.ms': '1000',
  'file.delete.delay.ms': '0'
}
