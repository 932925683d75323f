// kafkajs 2.2.4 against a broker: the client-matrix scenarios (lib.mjs SCENARIOS).
// kafkajs speaks only non-flexible protocol versions (ApiVersions v2, Metadata v6, Produce v7,
// Fetch v11, ...), so it exercises the old encodings of every API it touches.
// usage: node kafkajs.mjs HOST:PORT [scenario ...]

import kafkajs from 'kafkajs'
import SnappyCodec from 'kafkajs-snappy'
import { compressFrame, decompressFrame } from 'lz4-napi'
import {
  COMPACT_CONFIGS, assert, assertEq, parseArgs, runSuite, sleep, uniq, waitFor, withTimeout
} from './lib.mjs'

const { Kafka, logLevel, CompressionTypes, CompressionCodecs, ConfigResourceTypes } = kafkajs

// Codecs kafkajs does not bundle: snappy from the kafkajs authors' package, lz4 through a
// small adapter over lz4-napi's frame format (what Kafka's LZ4 batches use). No maintained
// zstd codec for kafkajs installs on node 20 without a native build, so zstd is not covered.
CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
CompressionCodecs[CompressionTypes.LZ4] = () => ({
  compress: async encoder => compressFrame(encoder.buffer),
  decompress: async buffer => decompressFrame(buffer)
})

const { bootstrap, only } = parseArgs()
const LOG = { NOTHING: logLevel.NOTHING, ERROR: logLevel.ERROR, WARN: logLevel.WARN, INFO: logLevel.INFO, DEBUG: logLevel.DEBUG }

function client (id) {
  return new Kafka({
    clientId: `skiff-${id}`,
    brokers: [bootstrap],
    logLevel: LOG[process.env.KAFKAJS_LOG ?? 'NOTHING'] ?? logLevel.NOTHING,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 },
    connectionTimeout: 5000,
    requestTimeout: 15000
  })
}

async function connected (ctx, thing) {
  await thing.connect()
  ctx.defer(() => thing.disconnect())
  return thing
}

async function createTopic (ctx, admin, topic, { partitions = 1, configs = {} } = {}) {
  // Not waitForLeaders: on Apache Kafka its metadata poll can meet UNKNOWN_TOPIC_OR_PARTITION
  // for a moment, which kafkajs does not retry. The ListOffsets wait below covers it.
  const ok = await admin.createTopics({
    waitForLeaders: false,
    topics: [{
      topic,
      numPartitions: partitions,
      replicationFactor: 1,
      configEntries: Object.entries(configs).map(([name, value]) => ({ name, value }))
    }]
  })
  assertEq(ok, true, `createTopics(${topic}) created`)
  ctx.defer(() => admin.deleteTopics({ topics: [topic], timeout: 5000 }).catch(() => {}))
  // Apache Kafka hosts a new partition a moment after CreateTopics returns: wait until the
  // leader answers ListOffsets for every partition.
  await waitFor(`${topic} partitions hosted`, async () => (await admin.fetchTopicOffsets(topic)).length === partitions, { ms: 10000 })
}

async function topicConfigs (admin, topic, names) {
  const res = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: names }]
  })
  assertEq(res.resources.length, 1, 'describeConfigs resources')
  const r = res.resources[0]
  assertEq([r.errorCode, r.resourceName], [0, topic], 'describeConfigs error/name')
  return Object.fromEntries(r.configEntries.map(e => [e.configName, e]))
}

/** Reads `topic` through a fresh consumer group until `until(messages)` holds; returns
 * [{partition, offset, key, value, headers}] (offset a Number, key/value strings or null). */
async function consume (ctx, kafka, topic, until, { groupId = uniq('kjs-read'), readUncommitted = true, ms = 20000, keep = false, onJoin, opts = {} } = {}) {
  const consumer = kafka.consumer({
    groupId, readUncommitted, maxWaitTimeInMs: 100, sessionTimeout: 10000, heartbeatInterval: 300, retry: { retries: 3 }, ...opts
  })
  if (onJoin) consumer.on(consumer.events.GROUP_JOIN, e => onJoin(e.payload))
  await consumer.connect()
  const stop = async () => { await consumer.stop().catch(() => {}); await consumer.disconnect().catch(() => {}) }
  ctx.defer(stop)
  const got = []
  let done
  const finished = new Promise(resolve => { done = resolve })
  await consumer.subscribe({ topic, fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      got.push({
        partition,
        offset: Number(message.offset),
        key: message.key?.toString() ?? null,
        value: message.value?.toString() ?? null,
        headers: Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, v?.toString()]))
      })
      if (until?.(got)) done()
    }
  })
  if (!until) return { messages: got, consumer, stop }
  await withTimeout(finished, ms, `consume ${topic}: have ${got.length} messages`)
  if (!keep) await stop()
  return { messages: got, consumer, stop }
}

async function produce (producer, topic, messages, extra = {}) {
  const res = await producer.send({ topic, acks: -1, messages, ...extra })
  for (const r of res) assertEq(r.errorCode, 0, `produce ${topic} error code`)
  return res
}

const scenarios = {
  async admin (ctx) {
    const admin = await connected(ctx, client('admin').admin())
    const topic = uniq('kjs-admin')
    await createTopic(ctx, admin, topic, { partitions: 2, configs: { 'retention.ms': '3600000', 'max.message.bytes': '200000' } })
    const topics = await admin.listTopics()
    assert(topics.includes(topic), `listTopics has ${topic}`)

    let cfg = await topicConfigs(admin, topic, ['retention.ms', 'max.message.bytes', 'cleanup.policy'])
    assertEq(cfg['retention.ms'].configValue, '3600000', 'retention.ms after create')
    assertEq(cfg['retention.ms'].isDefault, false, 'retention.ms isDefault after create')
    assertEq(cfg['max.message.bytes'].configValue, '200000', 'max.message.bytes after create')
    assertEq(cfg['cleanup.policy'].configValue, 'delete', 'cleanup.policy default')
    assertEq(cfg['cleanup.policy'].isDefault, true, 'cleanup.policy isDefault')

    // AlterConfigs (not incremental) replaces the topic's whole dynamic config set:
    // max.message.bytes, not named here, goes back to its default.
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: '7200000' }] }]
    })
    cfg = await waitFor('altered retention.ms visible', async () => {
      const c = await topicConfigs(admin, topic, ['retention.ms', 'max.message.bytes'])
      return c['retention.ms'].configValue === '7200000' ? c : null
    }, { ms: 5000 })
    assertEq(cfg['max.message.bytes'].isDefault, true, 'max.message.bytes back to default after AlterConfigs')

    await admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] })
    await waitFor('3 partitions in metadata', async () => {
      const md = await admin.fetchTopicMetadata({ topics: [topic] })
      return md.topics[0].partitions.length === 3
    }, { ms: 5000 })

    // Errors a user sees: creating it again, and a bad config value.
    // kafkajs maps TOPIC_ALREADY_EXISTS to a `false` result.
    assertEq(await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] }), false, 'createTopics of an existing topic')
    await expectKafkaError(() => admin.createTopics({
      topics: [{ topic: uniq('kjs-bad'), numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'nonsense' }] }]
    }), 'INVALID_CONFIG')

    await expectKafkaError(() => admin.createPartitions({ topicPartitions: [{ topic, count: 2 }] }), 'INVALID_PARTITIONS')
    // All configs of the topic: every entry carries a value source, and the ones we set say so.
    const all = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }] })
    const entries = all.resources[0].configEntries
    for (const name of ['cleanup.policy', 'retention.ms', 'segment.bytes', 'min.insync.replicas', 'compression.type', 'max.message.bytes']) {
      assert(entries.some(e => e.configName === name), `describeConfigs (all) lists ${name}`)
    }
    // configSource 1 = TOPIC_CONFIG. Other non-default sources are broker-level (Kafka 4.4
    // reports min.insync.replicas as DYNAMIC_DEFAULT_BROKER_CONFIG, 3); the note lists them.
    assertEq(entries.filter(e => e.configSource === 1).map(e => e.configName).sort(), ['retention.ms'], 'TOPIC_CONFIG entries after AlterConfigs')
    const brokerLevel = entries.filter(e => !e.isDefault && e.configSource !== 1).map(e => `${e.configName}(source ${e.configSource})`)

    await admin.deleteTopics({ topics: [topic], timeout: 5000 })
    await waitFor('topic gone from listTopics', async () => !(await admin.listTopics()).includes(topic), { ms: 5000 })
    await expectKafkaError(() => admin.deleteTopics({ topics: [topic], timeout: 2000 }), 'UNKNOWN_TOPIC_OR_PARTITION')
    return 'create(configs)/list/describeConfigs/alterConfigs/createPartitions/delete; existing topic, INVALID_CONFIG, INVALID_PARTITIONS, delete unknown' +
      `; non-default broker-level topic configs: ${brokerLevel.join(' ') || 'none'}`
  },

  async produce_consume (ctx) {
    const kafka = client('pc')
    const admin = await connected(ctx, kafka.admin())
    const topic = uniq('kjs-pc')
    await createTopic(ctx, admin, topic)
    const producer = await connected(ctx, kafka.producer({ allowAutoTopicCreation: false }))
    const sent = Array.from({ length: 20 }, (_, i) => ({
      key: `key-${i % 4}`, value: `value-${i}`, partition: 0, headers: { seq: String(i), 'x-client': 'kafkajs' }
    }))
    const res = await produce(producer, topic, sent.slice(0, 10))
    assertEq(res[0].baseOffset, '0', 'first batch base offset')
    for (const m of sent.slice(10)) await produce(producer, topic, [m])
    const { messages } = await consume(ctx, kafka, topic, got => got.length >= 20)
    assertEq(messages.map(m => m.offset), [...Array(20).keys()], 'offsets in order')
    assertEq(messages.map(m => [m.key, m.value, m.headers]),
      sent.map(m => [m.key, m.value, m.headers]), 'keys, values and headers')
    const offs = await admin.fetchTopicOffsets(topic)
    assertEq(offs.map(o => [o.partition, o.low, o.high]), [[0, '0', '20']], 'low/high watermarks')

    // acks=0: the broker must not answer (an answer would desynchronise the connection);
    // the records still land.
    await producer.send({ topic, acks: 0, messages: [0, 1, 2].map(i => ({ key: 'noack', value: `noack-${i}`, partition: 0 })) })
    await produce(producer, topic, [{ key: 'after-noack', value: 'x', partition: 0 }])
    // Idempotent producer (InitProducerId + sequence numbers).
    const idem = await connected(ctx, kafka.producer({ idempotent: true, maxInFlightRequests: 1 }))
    for (let i = 0; i < 3; i++) await produce(idem, topic, [{ key: 'idem', value: `idem-${i}`, partition: 0 }, { key: 'idem', value: `idem-${i}b`, partition: 0 }])
    const tail = await consume(ctx, kafka, topic, got => got.length >= 30)
    assertEq(tail.messages.slice(20).map(m => m.value),
      ['noack-0', 'noack-1', 'noack-2', 'x', 'idem-0', 'idem-0b', 'idem-1', 'idem-1b', 'idem-2', 'idem-2b'], 'acks=0 and idempotent records')

    // A record over the topic's max.message.bytes is refused.
    const small = uniq('kjs-small')
    await createTopic(ctx, admin, small, { configs: { 'max.message.bytes': '2000' } })
    await expectKafkaError(() => producer.send({ topic: small, acks: -1, messages: [{ key: 'big', value: 'x'.repeat(5000), partition: 0 }] }), 'MESSAGE_TOO_LARGE')

    // 3 MB in 100 KB batches read with 40 KB partition / 64 KB fetch limits: a batch larger
    // than the limit still comes back whole (KIP-74), order kept across many fetches.
    const bulk = uniq('kjs-bulk')
    await createTopic(ctx, admin, bulk)
    const blob = 'b'.repeat(10000)
    for (let j = 0; j < 30; j++) {
      await produce(producer, bulk, Array.from({ length: 10 }, (_, i) => ({ key: `k${j * 10 + i}`, value: `${j * 10 + i}:${blob}`, partition: 0 })))
    }
    const big = await consume(ctx, kafka, bulk, got => got.length >= 300, { opts: { maxBytesPerPartition: 40000, maxBytes: 65536 } })
    assertEq(big.messages.map(m => m.offset), [...Array(300).keys()], 'bulk offsets in order')
    assert(big.messages.every(m => m.value === `${m.offset}:${blob}`), 'bulk values intact')
    return '20 keyed records with headers, batch + single sends, order and watermarks; acks=0; idempotent; MESSAGE_TOO_LARGE; 3 MB with small fetch limits'
  },

  async compression (ctx) {
    const kafka = client('comp')
    const admin = await connected(ctx, kafka.admin())
    const producer = await connected(ctx, kafka.producer())
    const codecs = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy, lz4: CompressionTypes.LZ4 }
    const failures = []
    for (const [name, type] of Object.entries(codecs)) {
      try {
        const topic = uniq(`kjs-comp-${name}`)
        await createTopic(ctx, admin, topic)
        const value = `${name} `.repeat(200)
        const msgs = Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, value: `${i}:${value}`, headers: { codec: name } }))
        await produce(producer, topic, msgs, { compression: type })
        const { messages } = await consume(ctx, kafka, topic, got => got.length >= 50)
        assertEq(messages.map(m => [m.offset, m.key, m.value, m.headers.codec]),
          msgs.map((m, i) => [i, m.key, m.value, name]), `${name} round trip`)
      } catch (e) {
        failures.push(`${name}: ${e.message}`)
      }
    }
    if (failures.length) throw new Error(failures.join(' | '))
    return `codecs: ${Object.keys(codecs).join(',')} (zstd: no maintained kafkajs codec on node 20)`
  },

  async groups (ctx) {
    const kafka = client('groups')
    const admin = await connected(ctx, kafka.admin())
    const topic = uniq('kjs-groups')
    const groupId = uniq('kjs-group')
    await createTopic(ctx, admin, topic, { partitions: 2 })
    const producer = await connected(ctx, kafka.producer())
    await produce(producer, topic, Array.from({ length: 10 }, (_, i) => ({ key: `k${i}`, value: `v${i}`, partition: 0 })))
    await produce(producer, topic, Array.from({ length: 4 }, (_, i) => ({ key: `p${i}`, value: `w${i}`, partition: 1 })))

    // First member: reads everything, commits p0 up to offset 6 and p1 up to 4.
    const first = await consume(ctx, kafka, topic, got => got.length >= 14, { groupId, keep: true })
    await first.consumer.commitOffsets([{ topic, partition: 0, offset: '6' }, { topic, partition: 1, offset: '4' }])
    const desc = await admin.describeGroups([groupId])
    const g = desc.groups[0]
    assertEq([g.groupId, g.errorCode, g.state, g.protocolType, g.members.length], [groupId, 0, 'Stable', 'consumer', 1],
      'describeGroups while one member is up')
    const listed = await admin.listGroups()
    assert(listed.groups.some(x => x.groupId === groupId && x.protocolType === 'consumer'), `listGroups has ${groupId}`)
    await first.stop()

    const offs = await admin.fetchOffsets({ groupId, topics: [topic] })
    assertEq(offs[0].partitions.map(p => [p.partition, p.offset]).sort(), [[0, '6'], [1, '4']], 'fetchOffsets after commit')
    const empty = await admin.describeGroups([groupId])
    assertEq(empty.groups[0].state, 'Empty', 'group state after the member left')

    // A new member of the same group resumes at the committed offsets.
    await produce(producer, topic, [{ key: 'late', value: 'late', partition: 1 }])
    const second = await consume(ctx, kafka, topic, got => got.length >= 5, { groupId })
    const seen = second.messages.map(m => [m.partition, m.offset]).sort((a, b) => a[0] - b[0] || a[1] - b[1])
    assertEq(seen, [[0, 6], [0, 7], [0, 8], [0, 9], [1, 4]], 'second member resumes from committed offsets')

    await admin.deleteGroups([groupId])
    await waitFor('group gone from listGroups', async () => !(await admin.listGroups()).groups.some(x => x.groupId === groupId), { ms: 5000 })

    // Two members of one group split the two partitions (the first rejoins when the second arrives).
    const pair = uniq('kjs-pair')
    const joins = {}
    const A = await consume(ctx, kafka, topic, null, { groupId: pair, onJoin: j => { joins.a = j } })
    await waitFor('first member joined', () => joins.a, { ms: 15000 })
    const B = await consume(ctx, kafka, topic, null, { groupId: pair, onJoin: j => { joins.b = j } })
    await waitFor('both members hold one partition each', async () => {
      const pa = joins.a?.memberAssignment?.[topic] ?? []
      const pb = joins.b?.memberAssignment?.[topic] ?? []
      return pa.length === 1 && pb.length === 1 && pa[0] !== pb[0]
    }, { ms: 20000 })
    const two = (await admin.describeGroups([pair])).groups[0]
    assertEq([two.state, two.members.length], ['Stable', 2], 'describeGroups with two members')
    await A.stop()
    await B.stop()
    return 'join, manual commit, describe (Stable/Empty), list, fetchOffsets, restart resumes, deleteGroups, 2-member rebalance'
  },

  async offsets_for_times (ctx) {
    const kafka = client('oft')
    const admin = await connected(ctx, kafka.admin())
    const topic = uniq('kjs-oft')
    await createTopic(ctx, admin, topic)
    const producer = await connected(ctx, kafka.producer())
    const base = Date.now() - 60000
    // Timestamps 0, 10, 20, ... seconds after base, one record per send.
    for (let i = 0; i < 5; i++) {
      await produce(producer, topic, [{ key: `k${i}`, value: `v${i}`, partition: 0, timestamp: String(base + i * 10000) }])
    }
    const byTs = async ts => (await admin.fetchTopicOffsetsByTimestamp(topic, ts)).map(p => [p.partition, p.offset])
    assertEq(await byTs(base), [[0, '0']], 'offset for the first timestamp')
    assertEq(await byTs(base + 15000), [[0, '2']], 'offset for a timestamp between records')
    assertEq(await byTs(base + 40000), [[0, '4']], 'offset for the last timestamp')
    assertEq(await byTs(base + 999999), [[0, '5']], 'timestamp after the last record gives the log end (kafkajs maps -1 to latest)')
    const offs = await admin.fetchTopicOffsets(topic)
    assertEq(offs.map(o => [o.partition, o.low, o.high, o.offset]), [[0, '0', '5', '5']], 'earliest/latest')
    // DeleteRecords moves the log start offset: earliest follows, timestamps before it map to it.
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '2' }] })
    const after = await admin.fetchTopicOffsets(topic)
    assertEq(after.map(o => [o.low, o.high]), [['2', '5']], 'earliest/latest after deleteTopicRecords')
    assertEq(await byTs(base), [[0, '2']], 'offset for a timestamp before the log start')
    return 'fetchTopicOffsetsByTimestamp (first/between/last/after end), fetchTopicOffsets earliest+latest, deleteTopicRecords'
  },

  async compaction (ctx) {
    const kafka = client('compact')
    const admin = await connected(ctx, kafka.admin())
    const topic = uniq('kjs-compact')
    await createTopic(ctx, admin, topic, { configs: COMPACT_CONFIGS })
    const producer = await connected(ctx, kafka.producer())
    const put = async (key, value) => (await produce(producer, topic, [{ key, value, partition: 0 }]))[0]
    for (let round = 0; round < 3; round++) {
      for (const k of ['a', 'b', 'c', 'd']) await put(k, `${k}${round}`)
    }
    await put('d', null) // tombstone
    const roll = async () => { await sleep(150); await put('~roll', 'r') }
    await roll()

    const readAll = async () => {
      const offs = await admin.fetchTopicOffsets(topic)
      const high = Number(offs[0].high)
      const { messages } = await consume(ctx, kafka, topic, got => got.length > 0 && got[got.length - 1].offset >= high - 1, { ms: 10000 })
      return messages
    }
    const latest = recs => recs.filter(m => ['a', 'b', 'c'].includes(m.key)).map(m => [m.key, m.value])
    let recs = await waitFor('one record per key after cleaning', async () => {
      const r = await readAll()
      return latest(r).length === 3 && r.filter(m => m.key === 'd').length <= 1 ? r : null
    }, { ms: 30000, every: 300 })
    assertEq(latest(recs), [['a', 'a2'], ['b', 'b2'], ['c', 'c2']], 'latest value per key, in offset order')
    assertEq(recs.filter(m => m.key === 'a').map(m => m.offset), [8], 'a kept at its original offset')

    // The tombstone leaves after delete.retention.ms (1 s) and another cleaning pass.
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
    const kafka = client('txn')
    const admin = await connected(ctx, kafka.admin())
    const topic = uniq('kjs-txn')
    const source = uniq('kjs-txn-src')
    const groupId = uniq('kjs-txn-group')
    await createTopic(ctx, admin, topic)
    await createTopic(ctx, admin, source)
    const producer = await connected(ctx, kafka.producer({
      transactionalId: uniq('kjs-txid'), idempotent: true, maxInFlightRequests: 1
    }))
    const plain = await connected(ctx, kafka.producer())

    let txn = await producer.transaction()
    await txn.send({ topic, messages: [{ key: 'c1', value: 'committed-1', partition: 0 }, { key: 'c2', value: 'committed-2', partition: 0 }] })
    await txn.commit()
    txn = await producer.transaction()
    await txn.send({ topic, messages: [{ key: 'a1', value: 'aborted-1', partition: 0 }] })
    await txn.abort()
    txn = await producer.transaction()
    await txn.send({ topic, messages: [{ key: 'c3', value: 'committed-3', partition: 0 }] })
    // Offsets for a consumer group, committed with the transaction (AddOffsetsToTxn + TxnOffsetCommit).
    await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: source, partitions: [{ partition: 0, offset: '42' }] }] })
    await txn.commit()
    await produce(plain, topic, [{ key: 'end', value: 'end', partition: 0 }])

    const rc = await consume(ctx, kafka, topic, got => got.some(m => m.key === 'end'), { readUncommitted: false })
    assertEq(rc.messages.map(m => m.value), ['committed-1', 'committed-2', 'committed-3', 'end'], 'read_committed sees committed records only')
    const ru = await consume(ctx, kafka, topic, got => got.some(m => m.key === 'end'), { readUncommitted: true })
    assertEq(ru.messages.map(m => m.value), ['committed-1', 'committed-2', 'aborted-1', 'committed-3', 'end'], 'read_uncommitted sees the aborted record too')
    // Offsets: records at 0,1 / marker 2 / aborted 3 / marker 4 / 5 / then the last marker and
    // `end` in either order (Kafka writes markers after EndTxn returns).
    assertEq(rc.messages.slice(0, 3).map(m => m.offset), [0, 1, 5], 'committed record offsets (control markers take offsets)')
    assert([6, 7].includes(rc.messages[3].offset), `end at 6 or 7, got ${rc.messages[3].offset}`)
    const offs = await admin.fetchOffsets({ groupId, topics: [source] })
    assertEq(offs[0].partitions.map(p => [p.partition, p.offset]), [[0, '42']], 'sendOffsets committed with the transaction')
    return 'commit, abort, read_committed vs read_uncommitted, sendOffsets'
  },

  async special (ctx) {
    // kafkajs negotiates ApiVersions v2 and then uses only non-flexible versions; record every
    // request it sent and check each used the highest version kafkajs knows (the broker
    // advertised a range covering it).
    const kafka = client('special')
    const seen = new Map()
    const track = thing => {
      thing.on(thing.events.REQUEST, e => seen.set(e.payload.apiName, e.payload.apiVersion))
      return thing
    }
    const admin = await connected(ctx, track(kafka.admin()))
    const topic = uniq('kjs-special')
    await createTopic(ctx, admin, topic)
    const producer = await connected(ctx, track(kafka.producer()))
    await produce(producer, topic, [{ key: 'k', value: 'v', partition: 0 }], { compression: CompressionTypes.GZIP })
    const groupId = uniq('kjs-special-group')
    const c = kafka.consumer({ groupId, maxWaitTimeInMs: 100 })
    track(c)
    await c.connect()
    ctx.defer(() => c.disconnect())
    await c.subscribe({ topic, fromBeginning: true })
    const deliveries = []
    await c.run({ autoCommit: true, autoCommitThreshold: 1, eachMessage: async ({ message }) => { deliveries.push(message) } })
    await waitFor('one message consumed', () => deliveries.length >= 1, { ms: 20000 })
    assertEq(deliveries[0].value.toString(), 'v', 'consumed value')
    // Seeking past the log end makes Fetch answer OFFSET_OUT_OF_RANGE; kafkajs then resets
    // to the earliest offset (fromBeginning) and reads offset 0 again.
    c.seek({ topic, partition: 0, offset: '1000' })
    await waitFor('re-delivery after OFFSET_OUT_OF_RANGE reset', () => deliveries.length >= 2, { ms: 20000 })
    assertEq([deliveries[1].offset, deliveries[1].value.toString()], ['0', 'v'], 'record after the reset')
    await c.stop()
    await c.disconnect()
    await admin.fetchTopicOffsets(topic)
    await admin.fetchOffsets({ groupId, topics: [topic] })
    const cluster = await admin.describeCluster()
    assertEq(cluster.brokers.length, 1, 'describeCluster brokers')
    assertEq(cluster.controller, cluster.brokers[0].nodeId, 'describeCluster controller is the broker')
    assert(typeof cluster.clusterId === 'string' && cluster.clusterId.length > 0, 'describeCluster clusterId')
    const expected = {
      ApiVersions: 2, Metadata: 6, CreateTopics: 3, Produce: 7, Fetch: 11, ListOffsets: 3,
      GroupCoordinator: 2, JoinGroup: 5, SyncGroup: 3, OffsetCommit: 5, OffsetFetch: 4, LeaveGroup: 3
    }
    const actual = Object.fromEntries(Object.keys(expected).filter(k => seen.has(k)).map(k => [k, seen.get(k)]))
    assertEq(actual, expected, 'negotiated request versions')
    return 'OFFSET_OUT_OF_RANGE reset, describeCluster; non-flexible versions: ' + Object.entries(expected).map(([k, v]) => `${k} v${v}`).join(' ')
  }
}

async function expectKafkaError (fn, type) {
  const typesOf = (e, depth = 0) => !e || depth > 4
    ? []
    : [e.type, ...(e.errors ?? []).flatMap(x => typesOf(x, depth + 1)), ...typesOf(e.originalError, depth + 1), ...typesOf(e.cause, depth + 1)]
  try {
    await fn()
  } catch (e) {
    const types = typesOf(e).filter(Boolean)
    if (types.includes(type)) return
    throw new Error(`expected ${type}, got ${e.name}: ${e.message} [${types.join(',')}]`)
  }
  throw new Error(`expected ${type}, the call succeeded`)
}

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const failed = await runSuite('kafkajs', scenarios, { bootstrap, only, timeoutMs: Number(process.env.SCENARIO_TIMEOUT_MS ?? 90000) })
// kafkajs may keep retry timers alive after a failed scenario: exit explicitly.
process.exit(failed ? 1 : 0)
