// Security scenarios (issue 14) for kafkajs 2.2.4 and @platformatic/kafka against the broker of
// tests/security/broker.sh, whose listeners and certificates come in SEC_* variables:
// produce and consume over SSL and mTLS; a CA that did not sign the broker (the client
// refuses), mTLS without a client certificate (the broker refuses) and a plaintext client on
// the TLS port each fail within a bounded time and leave the broker serving a fresh mTLS
// client. With SEC_SASL=1 (the default; SKIFF_SASL_TESTS=0 clears it): SASL_PLAINTEXT and SASL_SSL with PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (RS256 JWTs signed here with node:crypto), a
// wrong password and an expired token refused.
//   node security.mjs --write-jwks DIR   writes DIR/jwt-key.pem and DIR/jwks.json, exits
//   node security.mjs [scenario ...]     runs (SEC_JWT_KEY: the key file, for the SASL rows)

import { generateKeyPairSync, createPrivateKey, sign } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import kafkajs from 'kafkajs'
import { Admin, Consumer, Producer, stringSerializers, stringDeserializers } from '@platformatic/kafka'
import { Skip, assert, assertEq, runSuite, uniq, withTimeout } from './lib.mjs'

const { Kafka, logLevel } = kafkajs
const KID = 'skiff-test'
const AUDIENCE = 'skiff'
const FAIL_WITHIN_MS = 15000
const MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER']
const SKIP_SASL = 'SASL rows switched off (SKIFF_SASL_TESTS=0)'

if (process.argv[2] === '--write-jwks') {
  const dir = process.argv[3]
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  writeFileSync(join(dir, 'jwt-key.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 })
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid: KID, alg: 'RS256', use: 'sig' }
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [jwk] }))
  process.exit(0)
}

const env = process.env
const sec = {
  ssl: env.SEC_SSL,
  mtls: env.SEC_MTLS,
  saslPlaintext: env.SEC_SASL_PLAINTEXT,
  saslSsl: env.SEC_SASL_SSL,
  ca: env.SEC_CA && readFileSync(env.SEC_CA),
  untrustedCa: env.SEC_UNTRUSTED_CA && readFileSync(env.SEC_UNTRUSTED_CA),
  cert: env.SEC_CLIENT_CERT && readFileSync(env.SEC_CLIENT_CERT),
  key: env.SEC_CLIENT_KEY && readFileSync(env.SEC_CLIENT_KEY),
  sasl: env.SEC_SASL === '1',
  jwtKey: env.SEC_SASL === '1' ? createPrivateKey(readFileSync(env.SEC_JWT_KEY)) : null
}
if (!sec.ssl || !sec.mtls || !sec.ca) {
  console.error('SEC_SSL, SEC_MTLS and SEC_CA must be set (tests/security/broker.sh)')
  process.exit(2)
}

/** An RS256 JWT for sub alice, valid for lifetimeS seconds from now (negative: expired). */
function signJwt (lifetimeS) {
  const b64 = obj => Buffer.from(JSON.stringify(obj)).toString('base64url')
  const now = Math.floor(Date.now() / 1000)
  const iat = lifetimeS < 0 ? now + lifetimeS - 600 : now
  const signing = `${b64({ alg: 'RS256', typ: 'JWT', kid: KID })}.${b64({ sub: 'alice', aud: AUDIENCE, iat, exp: now + lifetimeS })}`
  return `${signing}.${sign('sha256', Buffer.from(signing), sec.jwtKey).toString('base64url')}`
}

// ---------- kafkajs ----------

/** o: { addr, tls, ca, cert, mechanism, password, expired } -> kafkajs client. */
function client (o, retries = 5) {
  const conf = {
    clientId: 'skiff-security',
    brokers: [o.addr],
    logLevel: logLevel.NOTHING,
    retry: { retries, initialRetryTime: 100, maxRetryTime: 1000 },
    connectionTimeout: 5000,
    authenticationTimeout: 5000,
    requestTimeout: 15000
  }
  if (o.tls) {
    conf.ssl = { ca: [o.ca], ...(o.cert ? { cert: sec.cert, key: sec.key } : {}) }
  }
  if (o.mechanism) {
    const mechanism = o.mechanism.toLowerCase()
    conf.sasl = o.mechanism === 'OAUTHBEARER'
      ? { mechanism, oauthBearerProvider: async () => ({ value: signJwt(o.expired ? -300 : 300) }) }
      : { mechanism, username: 'alice', password: o.password ?? 'alice-secret' }
  }
  return new Kafka(conf)
}

async function kafkajsRoundTrip (ctx, o, tag) {
  const kafka = client(o)
  const topic = uniq(`js-sec-${tag}`)
  const admin = kafka.admin()
  await admin.connect()
  ctx.defer(() => admin.disconnect())
  assert(await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true }), 'topic created')
  const producer = kafka.producer()
  await producer.connect()
  ctx.defer(() => producer.disconnect())
  await producer.send({ topic, messages: [0, 1, 2].map(i => ({ key: `k${i}`, value: `v${i}` })) })
  const consumer = kafka.consumer({ groupId: uniq('js-sec-g'), maxWaitTimeInMs: 100 })
  await consumer.connect()
  ctx.defer(() => consumer.disconnect())
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await withTimeout(new Promise((resolve, reject) => {
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message.value.toString())
        if (got.length === 3) resolve()
      }
    }).catch(reject)
  }), 30000, 'three records consumed')
  assertEq(got, ['v0', 'v1', 'v2'], 'values read back')
  return `3 records through ${o.addr}`
}

/** Admin connect + listTopics once, no retries; resolves to the error (or null). */
async function kafkajsAttempt (o) {
  const admin = client(o, 0).admin()
  try {
    await withTimeout(admin.connect().then(() => admin.listTopics()), FAIL_WITHIN_MS + 5000, 'attempt')
    return null
  } catch (e) {
    return e
  } finally {
    await admin.disconnect().catch(() => {})
  }
}

// ---------- @platformatic/kafka ----------

function pltOptions (o, retries = 5) {
  const opts = { clientId: 'skiff-plt-security', bootstrapBrokers: [o.addr], retries, retryDelay: 200, timeout: 15000, connectTimeout: 5000 }
  if (o.tls) opts.tls = { ca: [o.ca], ...(o.cert ? { cert: sec.cert, key: sec.key } : {}) }
  if (o.mechanism) {
    opts.sasl = o.mechanism === 'OAUTHBEARER'
      ? { mechanism: o.mechanism, token: () => signJwt(o.expired ? -300 : 300) }
      : { mechanism: o.mechanism, username: 'alice', password: o.password ?? 'alice-secret' }
  }
  return opts
}

async function pltRoundTrip (ctx, o, tag) {
  const topic = uniq(`plt-sec-${tag}`)
  const admin = new Admin(pltOptions(o))
  ctx.defer(() => admin.close())
  await admin.createTopics({ topics: [topic], partitions: 1, replicas: 1 })
  const producer = new Producer({ ...pltOptions(o), serializers: stringSerializers, autocreateTopics: false })
  ctx.defer(() => producer.close(true))
  await producer.send({ messages: [0, 1, 2].map(i => ({ topic, key: `k${i}`, value: `v${i}` })), acks: -1 })
  const consumer = new Consumer({ ...pltOptions(o), groupId: uniq('plt-sec-g'), deserializers: stringDeserializers, maxWaitTime: 100 })
  ctx.defer(() => consumer.close(true).catch(() => {}))
  const stream = await consumer.consume({ topics: [topic], mode: 'earliest', autocommit: false, maxWaitTime: 100 })
  ctx.defer(() => stream.close().catch(() => {}))
  const got = []
  await withTimeout(new Promise((resolve, reject) => {
    stream.on('data', m => {
      got.push(m.value)
      if (got.length === 3) resolve()
    })
    stream.on('error', reject)
  }), 30000, 'three records consumed')
  assertEq(got, ['v0', 'v1', 'v2'], 'values read back')
  return `3 records through ${o.addr}`
}

async function pltAttempt (o) {
  const admin = new Admin(pltOptions(o, 0))
  try {
    await withTimeout(admin.listTopics(), FAIL_WITHIN_MS + 5000, 'attempt')
    return null
  } catch (e) {
    return e
  } finally {
    await admin.close().catch(() => {})
  }
}

/** Every message in a (possibly nested) error. */
function errorText (e, depth = 0) {
  if (!e || depth > 4) return ''
  const own = `${e.name ?? 'Error'}: ${e.code ? e.code + ' ' : ''}${e.message}`
  const nested = (e.errors ?? []).map(x => errorText(x, depth + 1))
  return [own, ...nested, e.cause ? errorText(e.cause, depth + 1) : ''].filter(Boolean).join(' | ')
}

// ---------- scenarios, the same for both clients ----------

function scenariosFor ({ roundTrip, attempt }) {
  async function expectRefused (o, want) {
    const t0 = Date.now()
    const err = await attempt(o)
    const took = Date.now() - t0
    assert(err !== null, 'the client got through')
    const text = errorText(err)
    assert(!/timed out after .* attempt/.test(text), `no answer within ${FAIL_WITHIN_MS + 5000} ms (hang)`)
    if (want) assert(want.test(text), `error "${text}" does not match ${want}`)
    const after = await attempt({ addr: sec.mtls, tls: true, ca: sec.ca, cert: true })
    assert(after === null, `after the refusal a good mTLS client failed: ${after && errorText(after)}`)
    return `refused in ${(took / 1000).toFixed(1)}s: ${text}`
  }

  const trusted = { tls: true, ca: sec.ca }
  const scenarios = {
    security_ssl: ctx => roundTrip(ctx, { addr: sec.ssl, ...trusted }, 'ssl'),
    security_mtls: ctx => roundTrip(ctx, { addr: sec.mtls, ...trusted, cert: true }, 'mtls'),
    // Node's TLS (OpenSSL) names the verification failure.
    security_untrusted_ca: () => expectRefused({ addr: sec.ssl, tls: true, ca: sec.untrustedCa },
      /self[- ]signed|unable to verify|certificate/i),
    security_mtls_no_cert: () => expectRefused({ addr: sec.mtls, ...trusted }),
    security_plaintext_to_tls: () => expectRefused({ addr: sec.ssl })
  }
  for (const listener of ['SASL_PLAINTEXT', 'SASL_SSL']) {
    for (const mechanism of MECHANISMS) {
      const id = `sasl_${listener}_${mechanism}`.toLowerCase().replaceAll('-', '_')
      scenarios[id] = ctx => {
        if (!sec.sasl) throw new Skip(SKIP_SASL)
        const o = listener === 'SASL_SSL'
          ? { addr: sec.saslSsl, ...trusted, mechanism }
          : { addr: sec.saslPlaintext, mechanism }
        return roundTrip(ctx, o, `${listener}-${mechanism}`.toLowerCase())
      }
    }
  }
  for (const mechanism of MECHANISMS.slice(0, 3)) {
    scenarios[`sasl_wrong_password_${mechanism.toLowerCase().replaceAll('-', '_')}`] = () => {
      if (!sec.sasl) throw new Skip(SKIP_SASL)
      return expectRefused({ addr: sec.saslPlaintext, mechanism, password: 'not-the-password' })
    }
  }
  scenarios.sasl_expired_token = () => {
    if (!sec.sasl) throw new Skip(SKIP_SASL)
    return expectRefused({ addr: sec.saslSsl, ...trusted, mechanism: 'OAUTHBEARER', expired: true })
  }
  return scenarios
}

const only = process.argv.slice(2)
let failed = 0
for (const [name, impl] of [
  ['kafkajs', { roundTrip: kafkajsRoundTrip, attempt: kafkajsAttempt }],
  ['platformatic-kafka', { roundTrip: pltRoundTrip, attempt: pltAttempt }]
]) {
  const scenarios = scenariosFor(impl)
  failed += await runSuite(name, scenarios, { bootstrap: sec.ssl, only, order: Object.keys(scenarios) })
}
process.exit(failed ? 1 : 0)
