// @platformatic/kafka against a broker: the client-matrix scenarios (lib.mjs SCENARIOS).
// This client implements only recent, mostly flexible protocol versions (Produce 9+,
// Fetch 12+, Metadata 9+, ...) and the KIP-848 consumer group protocol, so it exercises the
// new encodings. 1.35.0 is the last release whose engines include node 20.
// usage: node platformatic.mjs HOST:PORT [scenario ...]

import {
  Admin, Consumer, Producer, stringSerializers, stringDeserializers, connectionsApiChannel,
  ConfigResourceTypes, FetchIsolationLevels, compressionsAlgorithms
} from '@platformatic/kafka'
import {
  COMPACT_CONFIGS, assert, assertEq, parseArgs, runSuite, sleep, uniq, waitFor, withTimeout
} from './lib.mjs'

const { bootstrap, only } = parseArgs()
const base = id => ({ clientId: `skiff-plt-${id}`, bootstrapBrokers: [bootstrap], retries: 5, retryDelay: 200, timeout: 15000 })

function admin (ctx) {
  const a = new Admin(base('admin'))
  ctx.defer(() => a.close())
  return a
}

function producer (ctx, extra = {}) {
  const p = new Producer({ ...base('producer'), serializers: stringSerializers, autocreateTopics: false, ...extra })
  ctx.defer(() => p.close(true))
  return p
}

async function createTopic (ctx, a, topic, { partitions = 1, configs = {} } = {}) {
  const created = await a.createTopics({
    topics: [topic], partitions, replicas: 1,
    configs: Object.entries(configs).map(([name, value]) => ({ name, value }))
  })
  assertEq(created.map(t => [t.name, t.partitions]), [[topic, partitions]], 'createTopics result')
  ctx.defer(() => a.deleteTopics({ topics: [topic] }).catch(() => {}))
  // Apache Kafka hosts a new partition a moment after CreateTopics returns: wait until the
  // leader answers ListOffsets for every partition.
  await waitFor(`${topic} partitions hosted`, async () => {
    const r = await a.listOffsets({ topics: [{ name: topic, partitions: [...Array(partitions).keys()].map(i => ({ partitionIndex: i, timestamp: -1n })) }] })
    return r[0].partitions.length === partitions
  }, { ms: 10000 })
  return created[0]
}

async function topicConfigs (a, topic, names) {
  const res = await a.describeConfigs({
    resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: topic, configurationKeys: names }]
  })
  assertEq(res.map(r => r.resourceName), [topic], 'describeConfigs resources')
  return Object.fromEntries(res[0].configs.map(c => [c.name, c]))
}

/** Every error code/id/message in a (possibly nested) platformatic error. */
function errorText (e, depth = 0) {
  if (!e || depth > 4) return ''
  const own = [e.code, e.apiId, e.apiCode, e.message].filter(x => x !== undefined).join(' ')
  const nested = (e.errors ?? []).map(x => errorText(x, depth + 1))
  return [own, ...nested, e.cause ? errorText(e.cause, depth + 1) : ''].join(' | ')
}

async function expectError (fn, needle) {
  try {
    await fn()
  } catch (e) {
    const text = errorText(e)
    if (text.includes(needle)) return
    throw new Error(`expected ${needle}, got: ${text}`)
  }
  throw new Error(`expected ${needle}, the call succeeded`)
}

/** Reads `topic` with a consumer group until `until(messages)` holds. Messages are
 * {partition, offset (Number), key, value, headers (object)}. */
async function consume (ctx, topic, until, {
  groupId = uniq('plt-read'), mode = 'earliest', isolationLevel = FetchIsolationLevels.READ_UNCOMMITTED,
  ms = 20000, keep = false, groupProtocol, opts = {}
} = {}) {
  const consumer = new Consumer({
    ...base('consumer'), groupId, deserializers: stringDeserializers,
    maxWaitTime: 100, sessionTimeout: 10000, heartbeatInterval: 500, ...(groupProtocol ? { groupProtocol } : {}), ...opts
  })
  let stream
  const stop = async () => {
    if (stream) await stream.close().catch(() => {})
    await consumer.close(true).catch(() => {})
  }
  ctx.defer(stop)
  stream = await consumer.consume({
    topics: [topic], mode, fallbackMode: 'earliest', autocommit: false, isolationLevel, maxWaitTime: 100, ...opts
  })
  const got = []
  let done, fail
  const finished = new Promise((resolve, reject) => { done = resolve; fail = reject })
  stream.on('data', m => {
    got.push({
      partition: m.partition,
      offset: Number(m.offset),
      key: m.key ?? null,
      value: m.value ?? null,
      headers: Object.fromEntries(m.headers ?? [])
    })
    if (until?.(got)) done()
  })
  stream.on('error', fail)
  if (!until) return { messages: got, consumer, stop }
  await withTimeout(finished, ms, `consume ${topic}: have ${got.length} messages`)
  if (!keep) await stop()
  return { messages: got, consumer, stop }
}

async function send (p, messages, extra = {}) {
  const res = await p.send({ messages, acks: -1, ...extra })
  return res
}

const scenarios = {
  async admin (ctx) {
    const a = admin(ctx)
    const topic = uniq('plt-admin')
    const created = await createTopic(ctx, a, topic, { partitions: 2, configs: { 'retention.ms': '3600000', 'max.message.bytes': '200000' } })
    assert(/^[0-9a-f-]{36}$/.test(created.id) && created.id !== '00000000-0000-0000-0000-000000000000', `topic id ${created.id}`)
    assert((await a.listTopics()).includes(topic), `listTopics has ${topic}`)

    let cfg = await topicConfigs(a, topic, ['retention.ms', 'max.message.bytes', 'cleanup.policy'])
    assertEq([cfg['retention.ms'].value, cfg['retention.ms'].configSource], ['3600000', 1], 'retention.ms value/source (TOPIC_CONFIG)')
    assertEq(cfg['max.message.bytes'].value, '200000', 'max.message.bytes after create')
    assertEq([cfg['cleanup.policy'].value, cfg['cleanup.policy'].configSource], ['delete', 5], 'cleanup.policy default (DEFAULT_CONFIG)')

    // IncrementalAlterConfigs: SET one, DELETE another (back to its default).
    await a.incrementalAlterConfigs({
      resources: [{
        resourceType: ConfigResourceTypes.TOPIC, resourceName: topic,
        configs: [{ name: 'retention.ms', configOperation: 0, value: '7200000' }, { name: 'max.message.bytes', configOperation: 1 }]
      }]
    })
    cfg = await waitFor('incremental alter visible', async () => {
      const c = await topicConfigs(a, topic, ['retention.ms', 'max.message.bytes'])
      return c['retention.ms'].value === '7200000' ? c : null
    }, { ms: 5000 })
    assertEq(cfg['max.message.bytes'].configSource, 5, 'max.message.bytes source after DELETE')

    await a.createPartitions({ topics: [{ name: topic, count: 3 }] })
    await waitFor('3 partitions in metadata', async () => {
      const md = await a.metadata({ topics: [topic], forceUpdate: true })
      return md.topics.get(topic)?.partitionsCount === 3
    }, { ms: 5000 })

    await expectError(() => a.createTopics({ topics: [topic], partitions: 1, replicas: 1 }), 'TOPIC_ALREADY_EXISTS')
    await expectError(() => a.createTopics({
      topics: [uniq('plt-bad')], partitions: 1, replicas: 1, configs: [{ name: 'cleanup.policy', value: 'nonsense' }]
    }), 'INVALID_CONFIG')

    await expectError(() => a.createPartitions({ topics: [{ name: topic, count: 2 }] }), 'INVALID_PARTITIONS')
    const all = await a.describeConfigs({ resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: topic }] })
    const entries = all[0].configs
    for (const name of ['cleanup.policy', 'retention.ms', 'segment.bytes', 'min.insync.replicas', 'compression.type', 'max.message.bytes']) {
      assert(entries.some(e => e.name === name), `describeConfigs (all) lists ${name}`)
    }
    assertEq(entries.filter(e => e.configSource === 1).map(e => e.name).sort(), ['retention.ms'], 'TOPIC_CONFIG entries after the incremental alter')
    const brokerLevel = entries.filter(e => ![1, 5].includes(e.configSource)).map(e => `${e.name}(source ${e.configSource})`)

    await a.deleteTopics({ topics: [topic] })
    await waitFor('topic gone from listTopics', async () => !(await a.listTopics()).includes(topic), { ms: 5000 })
    await expectError(() => a.deleteTopics({ topics: [topic] }), 'UNKNOWN_TOPIC_OR_PARTITION')
    return 'create(configs, topic id)/list/describeConfigs/incrementalAlterConfigs SET+DELETE/createPartitions/delete; TOPIC_ALREADY_EXISTS, INVALID_CONFIG, INVALID_PARTITIONS, delete unknown' +
      `; non-default broker-level topic configs: ${brokerLevel.join(' ') || 'none'}`
  },

  async produce_consume (ctx) {
    const a = admin(ctx)
    const topic = uniq('plt-pc')
    await createTopic(ctx, a, topic)
    const p = producer(ctx)
    const sent = Array.from({ length: 20 }, (_, i) => ({
      topic, partition: 0, key: `key-${i % 4}`, value: `value-${i}`, headers: new Map([['seq', String(i)], ['x-client', 'platformatic']])
    }))
    const res = await send(p, sent.slice(0, 10))
    assertEq(res.offsets?.map(o => [o.topic, o.partition, Number(o.offset)]), [[topic, 0, 0]], 'first batch base offset')
    for (const m of sent.slice(10)) await send(p, [m])
    const { messages } = await consume(ctx, topic, got => got.length >= 20)
    assertEq(messages.map(m => m.offset), [...Array(20).keys()], 'offsets in order')
    assertEq(messages.map(m => [m.key, m.value, m.headers]),
      sent.map(m => [m.key, m.value, Object.fromEntries(m.headers)]), 'keys, values and headers')
    const offs = await a.listOffsets({ topics: [{ name: topic, partitions: [{ partitionIndex: 0, timestamp: -2n }] }] })
    const end = await a.listOffsets({ topics: [{ name: topic, partitions: [{ partitionIndex: 0, timestamp: -1n }] }] })
    assertEq([offs[0].partitions[0].offset, end[0].partitions[0].offset], [0n, 20n], 'earliest/latest')

    // acks=0: the broker must not answer (an answer would desynchronise the connection);
    // the records still land.
    await send(p, [0, 1, 2].map(i => ({ topic, partition: 0, key: 'noack', value: `noack-${i}` })), { acks: 0 })
    await send(p, [{ topic, partition: 0, key: 'after-noack', value: 'x' }])
    const idem = producer(ctx, { idempotent: true })
    for (let i = 0; i < 3; i++) await send(idem, [{ topic, partition: 0, key: 'idem', value: `idem-${i}` }, { topic, partition: 0, key: 'idem', value: `idem-${i}b` }])
    const tail = await consume(ctx, topic, got => got.length >= 30)
    assertEq(tail.messages.slice(20).map(m => m.value),
      ['noack-0', 'noack-1', 'noack-2', 'x', 'idem-0', 'idem-0b', 'idem-1', 'idem-1b', 'idem-2', 'idem-2b'], 'acks=0 and idempotent records')

    const small = uniq('plt-small')
    await createTopic(ctx, a, small, { configs: { 'max.message.bytes': '2000' } })
    await expectError(() => send(p, [{ topic: small, partition: 0, key: 'big', value: 'x'.repeat(5000) }]), 'MESSAGE_TOO_LARGE')

    // 3 MB in 100 KB batches read with 40 KB partition / 64 KB fetch limits: a batch larger
    // than the limit still comes back whole (KIP-74), order kept across many fetches.
    const bulk = uniq('plt-bulk')
    await createTopic(ctx, a, bulk)
    const blob = 'b'.repeat(10000)
    for (let j = 0; j < 30; j++) {
      await send(p, Array.from({ length: 10 }, (_, i) => ({ topic: bulk, partition: 0, key: `k${j * 10 + i}`, value: `${j * 10 + i}:${blob}` })))
    }
    const big = await consume(ctx, bulk, got => got.length >= 300, { opts: { maxBytesPerPartition: 40000, maxBytes: 65536 } })
    assertEq(big.messages.map(m => m.offset), [...Array(300).keys()], 'bulk offsets in order')
    assert(big.messages.every(m => m.value === `${m.offset}:${blob}`), 'bulk values intact')
    return '20 keyed records with headers, batch + single sends, order and watermarks; acks=0; idempotent; MESSAGE_TOO_LARGE; 3 MB with small fetch limits'
  },

  async compression (ctx) {
    const a = admin(ctx)
    const p = producer(ctx)
    const codecs = ['none', 'gzip', 'snappy', 'lz4', 'zstd'].filter(c => c === 'none' || compressionsAlgorithms[c]?.available !== false)
    const failures = []
    for (const codec of codecs) {
      try {
        const topic = uniq(`plt-comp-${codec}`)
        await createTopic(ctx, a, topic)
        const value = `${codec} `.repeat(200)
        const msgs = Array.from({ length: 50 }, (_, i) => ({ topic, partition: 0, key: `k${i}`, value: `${i}:${value}`, headers: { codec } }))
        await send(p, msgs, { compression: codec })
        const { messages } = await consume(ctx, topic, got => got.length >= 50)
        assertEq(messages.map(m => [m.offset, m.key, m.value, m.headers.codec]),
          msgs.map((m, i) => [i, m.key, m.value, codec]), `${codec} round trip`)
      } catch (e) {
        failures.push(`${codec}: ${e.message}`)
      }
    }
    if (failures.length) throw new Error(failures.join(' | '))
    const missing = codecs.includes('zstd') ? '' : ` (zstd needs node >= 22.15 zlib; node ${process.versions.node} here)`
    return `codecs: ${codecs.join(',')}${missing}`
  },

  async groups (ctx) {
    const a = admin(ctx)
    const topic = uniq('plt-groups')
    const groupId = uniq('plt-group')
    await createTopic(ctx, a, topic, { partitions: 2 })
    const p = producer(ctx)
    await send(p, Array.from({ length: 10 }, (_, i) => ({ topic, partition: 0, key: `k${i}`, value: `v${i}` })))
    await send(p, Array.from({ length: 4 }, (_, i) => ({ topic, partition: 1, key: `p${i}`, value: `w${i}` })))

    const first = await consume(ctx, topic, got => got.length >= 14, { groupId, mode: 'committed', keep: true })
    await first.consumer.commit({ offsets: [{ topic, partition: 0, offset: 6n, leaderEpoch: 0 }, { topic, partition: 1, offset: 4n, leaderEpoch: 0 }] })
    const desc = (await a.describeGroups({ groups: [groupId] })).get(groupId)
    assertEq([desc?.id, desc?.state, desc?.protocolType, desc?.members.size], [groupId, 'STABLE', 'consumer', 1], 'describeGroups while one member is up')
    const listed = await a.listGroups()
    assert(listed.has(groupId), `listGroups has ${groupId} (${[...listed.keys()].join(',')})`)
    await first.stop()

    const committed = await a.listConsumerGroupOffsets({ groups: [groupId] })
    const parts = committed[0].topics.find(t => t.name === topic)?.partitions.map(x => [x.partitionIndex, x.committedOffset]).sort()
    assertEq(parts, [[0, 6n], [1, 4n]], 'listConsumerGroupOffsets after commit')
    const empty = (await a.describeGroups({ groups: [groupId] })).get(groupId)
    assertEq(empty?.state, 'EMPTY', 'group state after the member left')

    await send(p, [{ topic, partition: 1, key: 'late', value: 'late' }])
    const second = await consume(ctx, topic, got => got.length >= 5, { groupId, mode: 'committed' })
    const seen = second.messages.map(m => [m.partition, m.offset]).sort((x, y) => x[0] - y[0] || x[1] - y[1])
    assertEq(seen, [[0, 6], [0, 7], [0, 8], [0, 9], [1, 4]], 'second member resumes from committed offsets')

    await a.deleteGroups({ groups: [groupId] })
    await waitFor('group gone from listGroups', async () => !(await a.listGroups()).has(groupId), { ms: 5000 })

    // Two members of one group split the two partitions (the first rejoins when the second arrives).
    const pair = uniq('plt-pair')
    const held = c => (c.assignments ?? []).filter(x => x.topic === topic).flatMap(x => x.partitions)
    const A = await consume(ctx, topic, null, { groupId: pair })
    await waitFor('first member holds both partitions', () => held(A.consumer).length === 2, { ms: 15000 })
    const B = await consume(ctx, topic, null, { groupId: pair })
    await waitFor('both members hold one partition each', () => {
      const pa = held(A.consumer)
      const pb = held(B.consumer)
      return pa.length === 1 && pb.length === 1 && pa[0] !== pb[0]
    }, { ms: 20000 })
    const two = (await a.describeGroups({ groups: [pair] })).get(pair)
    assertEq([two?.state, two?.members.size], ['STABLE', 2], 'describeGroups with two members')
    await A.stop()
    await B.stop()
    return 'join, commit, describe (STABLE/EMPTY), list, listConsumerGroupOffsets, restart resumes (mode committed), deleteGroups, 2-member rebalance'
  },

  async offsets_for_times (ctx) {
    const a = admin(ctx)
    const topic = uniq('plt-oft')
    await createTopic(ctx, a, topic)
    const p = producer(ctx)
    const t0 = BigInt(Date.now() - 60000)
    for (let i = 0; i < 5; i++) {
      await send(p, [{ topic, partition: 0, key: `k${i}`, value: `v${i}`, timestamp: t0 + BigInt(i * 10000) }])
    }
    const at = async ts => {
      const r = await a.listOffsets({ topics: [{ name: topic, partitions: [{ partitionIndex: 0, timestamp: ts }] }] })
      const x = r[0].partitions[0]
      return [x.offset, x.timestamp]
    }
    assertEq((await at(t0))[0], 0n, 'offset for the first timestamp')
    assertEq(await at(t0 + 15000n), [2n, t0 + 20000n], 'offset (and record timestamp) between records')
    assertEq((await at(t0 + 40000n))[0], 4n, 'offset for the last timestamp')
    assertEq((await at(t0 + 999999n))[0], -1n, 'no offset after the last timestamp')
    assertEq((await at(-2n))[0], 0n, 'EARLIEST')
    assertEq((await at(-1n))[0], 5n, 'LATEST')
    assertEq(await at(-3n), [4n, t0 + 40000n], 'MAX_TIMESTAMP (-3)')
    // The consumer's own helper (ListOffsets from the consumer client).
    const c = new Consumer({ ...base('oft-consumer'), groupId: uniq('plt-oft-group') })
    ctx.defer(() => c.close(true))
    const byConsumer = await c.listOffsets({ topics: [topic], timestamp: t0 + 15000n })
    assertEq(byConsumer.get(topic), [2n], 'consumer.listOffsets by timestamp')
    // DeleteRecords moves the log start offset: EARLIEST follows, timestamps before it map to it.
    const del = await a.deleteRecords({ topics: [{ name: topic, partitions: [{ partition: 0, offset: 2n }] }] })
    assertEq(del.map(t => t.partitions.map(x => [x.partition, x.lowWatermark])), [[[0, 2n]]], 'deleteRecords low watermark')
    assertEq((await at(-2n))[0], 2n, 'EARLIEST after deleteRecords')
    assertEq((await at(t0))[0], 2n, 'offset for a timestamp before the log start')
    return 'listOffsets by timestamp (first/between/last/after end), EARLIEST, LATEST, MAX_TIMESTAMP, consumer.listOffsets, deleteRecords'
  },

  async compaction (ctx) {
    const a = admin(ctx)
    const topic = uniq('plt-compact')
    await createTopic(ctx, a, topic, { configs: COMPACT_CONFIGS })
    const p = producer(ctx)
    const put = (key, value) => send(p, [{ topic, partition: 0, key, value }])
    for (let round = 0; round < 3; round++) {
      for (const k of ['a', 'b', 'c', 'd']) await put(k, `${k}${round}`)
    }
    await put('d', undefined) // tombstone: no value
    const roll = async () => { await sleep(150); await put('~roll', 'r') }
    await roll()

    const readAll = async () => {
      const r = await a.listOffsets({ topics: [{ name: topic, partitions: [{ partitionIndex: 0, timestamp: -1n }] }] })
      const high = Number(r[0].partitions[0].offset)
      const { messages } = await consume(ctx, topic, got => got.length > 0 && got[got.length - 1].offset >= high - 1, { ms: 10000 })
      return messages
    }
    const latest = recs => recs.filter(m => ['a', 'b', 'c'].includes(m.key)).map(m => [m.key, m.value])
    let recs = await waitFor('one record per key after cleaning', async () => {
      const r = await readAll()
      return latest(r).length === 3 && r.filter(m => m.key === 'd').length <= 1 ? r : null
    }, { ms: 30000, every: 300 })
    assertEq(latest(recs), [['a', 'a2'], ['b', 'b2'], ['c', 'c2']], 'latest value per key, in offset order')
    assertEq(recs.filter(m => m.key === 'a').map(m => m.offset), [8], 'a kept at its original offset')

    await sleep(1200)
    await put('e', 'e0')
    await roll()
    recs = await waitFor('tombstoned key gone', async () => {
      const r = await readAll()
      return r.some(m => m.key === 'd') ? null : r
    }, { ms: 30000, every: 300 })
    assertEq(latest(recs), [['a', 'a2'], ['b', 'b2'], ['c', 'c2']], 'latest values still there')
    assert(recs.some(m => m.key === 'e' && m.value === 'e0'), 'e0 present')
    return 'latest value per key at original offsets; tombstoned key removed after delete.retention.ms'
  },

  async transactions (ctx) {
    const a = admin(ctx)
    const topic = uniq('plt-txn')
    await createTopic(ctx, a, topic)
    const p = producer(ctx, { transactionalId: uniq('plt-txid'), idempotent: true })
    const plain = producer(ctx)
    let tx = await p.beginTransaction()
    await tx.send({ messages: [{ topic, partition: 0, key: 'c1', value: 'committed-1' }, { topic, partition: 0, key: 'c2', value: 'committed-2' }] })
    await tx.commit()
    tx = await p.beginTransaction()
    await tx.send({ messages: [{ topic, partition: 0, key: 'a1', value: 'aborted-1' }] })
    await tx.abort()
    tx = await p.beginTransaction()
    await tx.send({ messages: [{ topic, partition: 0, key: 'c3', value: 'committed-3' }] })
    await tx.commit()
    await send(plain, [{ topic, partition: 0, key: 'end', value: 'end' }])

    const rc = await consume(ctx, topic, got => got.some(m => m.key === 'end'), { isolationLevel: FetchIsolationLevels.READ_COMMITTED })
    assertEq(rc.messages.map(m => m.value), ['committed-1', 'committed-2', 'committed-3', 'end'], 'read_committed sees committed records only')
    // The last commit marker and `end` come in either order (Kafka writes markers after EndTxn returns).
    assertEq(rc.messages.slice(0, 3).map(m => m.offset), [0, 1, 5], 'committed record offsets (control markers take offsets)')
    assert([6, 7].includes(rc.messages[3].offset), `end at 6 or 7, got ${rc.messages[3].offset}`)
    const ru = await consume(ctx, topic, got => got.some(m => m.key === 'end'))
    assertEq(ru.messages.map(m => m.value), ['committed-1', 'committed-2', 'aborted-1', 'committed-3', 'end'], 'read_uncommitted sees the aborted record too')
    const lso = await a.listOffsets({ topics: [{ name: topic, partitions: [{ partitionIndex: 0, timestamp: -1n }] }], isolationLevel: FetchIsolationLevels.READ_COMMITTED })
    assertEq(lso[0].partitions[0].offset, 8n, 'LATEST under read_committed (last stable offset)')
    return 'commit, abort, read_committed vs read_uncommitted, LSO via ListOffsets'
  },

  async special (ctx) {
    // Record every request this client sends; it must use flexible versions only (at or
    // above each API's first flexible version) and it joins with the KIP-848 protocol.
    const firstFlexible = {
      0: 9, 1: 12, 2: 6, 3: 9, 8: 8, 9: 6, 10: 3, 11: 6, 12: 4, 13: 4, 14: 4, 15: 5, 16: 3, 18: 3, 19: 5, 20: 4, 22: 2, 32: 4, 68: 0
    }
    const names = { 0: 'Produce', 1: 'Fetch', 2: 'ListOffsets', 3: 'Metadata', 8: 'OffsetCommit', 9: 'OffsetFetch', 10: 'FindCoordinator', 18: 'ApiVersions', 19: 'CreateTopics', 20: 'DeleteTopics', 22: 'InitProducerId', 68: 'ConsumerGroupHeartbeat' }
    const seen = new Map()
    const onStart = d => { if (d?.operation === 'send') seen.set(d.apiKey, d.apiVersion) }
    connectionsApiChannel.start.subscribe(onStart)
    ctx.defer(() => connectionsApiChannel.start.unsubscribe(onStart))

    const a = admin(ctx)
    const topic = uniq('plt-special')
    await createTopic(ctx, a, topic, { partitions: 2 })
    const p = producer(ctx, { idempotent: true })
    await send(p, [{ topic, partition: 0, key: 'k0', value: 'v0' }, { topic, partition: 1, key: 'k1', value: 'v1' }])
    const groupId = uniq('plt-848')
    const { messages, consumer, stop } = await consume(ctx, topic, got => got.length >= 2, { groupId, groupProtocol: 'consumer', keep: true })
    assertEq(messages.map(m => m.value).sort(), ['v0', 'v1'], 'KIP-848 member consumed both partitions')
    await consumer.commit({ offsets: [{ topic, partition: 0, offset: 1n, leaderEpoch: 0 }, { topic, partition: 1, offset: 1n, leaderEpoch: 0 }] })
    await stop()
    const committed = await a.listConsumerGroupOffsets({ groups: [groupId] })
    assertEq(committed[0].topics.find(t => t.name === topic)?.partitions.map(x => [x.partitionIndex, x.committedOffset]).sort(),
      [[0, 1n], [1, 1n]], 'offsets committed by the KIP-848 member')

    assert(seen.has(68), `ConsumerGroupHeartbeat was used (saw keys ${[...seen.keys()].join(',')})`)
    const old = [...seen].filter(([k, v]) => k in firstFlexible && v < firstFlexible[k])
    assertEq(old, [], 'requests below the first flexible version')
    return 'KIP-848 consumer protocol + flexible versions: ' +
      [...seen].filter(([k]) => k in names).sort((x, y) => x[0] - y[0]).map(([k, v]) => `${names[k]} v${v}`).join(' ')
  }
}

const failed = await runSuite('platformatic-kafka', scenarios, { bootstrap, only, timeoutMs: Number(process.env.SCENARIO_TIMEOUT_MS ?? 90000) })
process.exit(failed ? 1 : 0)
