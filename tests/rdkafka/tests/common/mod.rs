//! Client helpers shared by the e2e test binaries: rdkafka producer/consumer/admin builders
//! wired to a [`skiff_e2e::Broker`], bounded consume loops, and a tiny raw Kafka client
//! (kafka-protocol) for what rdkafka does not expose (topic ids).
//!
//! Every loop here has a deadline; a timeout is an error that says how far it got.
#![allow(dead_code)] // each test binary uses a different subset

pub mod groups;
pub mod http;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use skiff_e2e::Broker;

/// Upper bound for any single client operation in these tests.
pub const OP_TIMEOUT: Duration = Duration::from_secs(15);

/// A consumed record, detached from the client.
#[derive(Debug, Clone, PartialEq)]
pub struct Rec {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    pub timestamp: Option<i64>,
}

/// Base client config: bootstrap plus short timeouts so failures surface fast.
pub fn base_config(b: &Broker) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", b.bootstrap())
        .set("socket.timeout.ms", "10000")
        .set("reconnect.backoff.ms", "50")
        .set("reconnect.backoff.max.ms", "500");
    c
}

pub fn producer(b: &Broker, extra: &[(&str, &str)]) -> Result<FutureProducer> {
    let mut c = base_config(b);
    c.set("message.timeout.ms", "10000").set("linger.ms", "5");
    for (k, v) in extra {
        c.set(*k, *v);
    }
    c.create().context("creating the rdkafka producer")
}

/// A consumer for `assign()` use: the group id is required by librdkafka's config but no
/// offsets are ever committed (consumer groups are not implemented yet).
pub fn consumer(b: &Broker, extra: &[(&str, &str)]) -> Result<BaseConsumer> {
    let mut c = base_config(b);
    c.set("group.id", "skiff-e2e-assign-only")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("enable.partition.eof", "false")
        .set("fetch.wait.max.ms", "100");
    for (k, v) in extra {
        c.set(*k, *v);
    }
    c.create().context("creating the rdkafka consumer")
}

pub fn admin(b: &Broker) -> Result<AdminClient<DefaultClientContext>> {
    base_config(b)
        .create()
        .context("creating the rdkafka admin client")
}

pub fn admin_opts() -> AdminOptions {
    AdminOptions::new().request_timeout(Some(OP_TIMEOUT))
}

/// Creates a topic through CreateTopics and fails with the broker's error if it does not.
pub async fn create_topic(
    admin: &AdminClient<DefaultClientContext>,
    name: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) -> Result<()> {
    let mut t = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    for (k, v) in configs {
        t = t.set(k, v);
    }
    let res = admin
        .create_topics([&t], &admin_opts())
        .await
        .with_context(|| format!("CreateTopics {name}"))?;
    for r in res {
        r.map_err(|(t, e)| anyhow!("CreateTopics {t} failed: {e}"))?;
    }
    Ok(())
}

/// Produces `n` records to one partition and waits for every delivery report; returns
/// the offsets the broker assigned, in send order.
pub async fn produce_n(
    p: &FutureProducer,
    topic: &str,
    partition: i32,
    n: usize,
    make: impl Fn(usize) -> (Vec<u8>, Vec<u8>),
) -> Result<Vec<i64>> {
    let mut futs = Vec::with_capacity(n);
    for i in 0..n {
        let (k, v) = make(i);
        let rec = FutureRecord::to(topic)
            .partition(partition)
            .key(&k)
            .payload(&v);
        let f = p
            .send_result(rec)
            .map_err(|(e, _)| anyhow!("enqueue of record {i} failed: {e}"))?;
        futs.push(f);
    }
    let mut offsets = Vec::with_capacity(n);
    for (i, f) in futs.into_iter().enumerate() {
        let r = tokio::time::timeout(OP_TIMEOUT, f)
            .await
            .map_err(|_| anyhow!("no delivery report for record {i} within {OP_TIMEOUT:?}"))?
            .map_err(|_| anyhow!("delivery future for record {i} was cancelled"))?;
        let d = r.map_err(|(e, _)| anyhow!("delivery of record {i} failed: {e}"))?;
        offsets.push(d.offset);
    }
    Ok(offsets)
}

/// Assigns `topic`/`partition` at `from` and reads exactly `n` records (or fails after
/// `timeout`, naming how many arrived). Any consumer error fails immediately.
pub fn consume_n(
    c: &BaseConsumer,
    topic: &str,
    partition: i32,
    from: Offset,
    n: usize,
    timeout: Duration,
) -> Result<Vec<Rec>> {
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, partition, from)
        .context("building the assignment")?;
    c.assign(&tpl).context("assign")?;
    let deadline = Instant::now() + timeout;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            bail!(
                "{topic}/{partition}: read {} of {n} records within {timeout:?}",
                out.len()
            );
        }
        match c.poll(left.min(Duration::from_millis(500))) {
            None => {}
            Some(Err(e)) => bail!(
                "{topic}/{partition}: consumer error after {} records: {e}",
                out.len()
            ),
            Some(Ok(m)) => out.push(detach(&m)),
        }
    }
    Ok(out)
}

/// Reads whatever is in the partition from `from` to the current high watermark.
pub fn consume_to_end(
    c: &BaseConsumer,
    topic: &str,
    partition: i32,
    timeout: Duration,
) -> Result<Vec<Rec>> {
    let (low, high) = c
        .fetch_watermarks(topic, partition, timeout)
        .with_context(|| format!("watermarks of {topic}/{partition}"))?;
    let n = usize::try_from(high - low).context("negative watermark range")?;
    if n == 0 {
        return Ok(Vec::new());
    }
    consume_n(c, topic, partition, Offset::Offset(low), n, timeout)
}

pub fn detach<M: Message>(m: &M) -> Rec {
    let headers = m
        .headers()
        .map(|h| {
            h.iter()
                .map(|hd| (hd.key.to_string(), hd.value.map(<[u8]>::to_vec)))
                .collect()
        })
        .unwrap_or_default();
    Rec {
        partition: m.partition(),
        offset: m.offset(),
        key: m.key().map(<[u8]>::to_vec),
        value: m.payload().map(<[u8]>::to_vec),
        headers,
        timestamp: m.timestamp().to_millis(),
    }
}

/// Polls metadata until `topic` shows `partitions` partitions (topic creation is visible at
/// once in a single-node broker, but the client's cache may lag).
pub fn wait_topic_partitions<C: Consumer>(c: &C, topic: &str, partitions: usize) -> Result<()> {
    let deadline = Instant::now() + OP_TIMEOUT;
    let mut last;
    loop {
        match c.fetch_metadata(Some(topic), Duration::from_secs(5)) {
            Ok(md) => {
                if let Some(t) = md.topics().iter().find(|t| t.name() == topic) {
                    if t.error().is_none() && t.partitions().len() == partitions {
                        return Ok(());
                    }
                    last = format!("error {:?}, {} partitions", t.error(), t.partitions().len());
                } else {
                    last = "topic missing from metadata".into();
                }
            }
            Err(e) => last = e.to_string(),
        }
        if Instant::now() > deadline {
            bail!("{topic} never showed {partitions} partitions: {last}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---- raw protocol client (for fields rdkafka does not expose) ----

/// One request/response over a fresh connection, using kafka-protocol types.
pub fn raw_call<Req: Encodable, Resp: Decodable>(
    b: &Broker,
    key: ApiKey,
    version: i16,
    req: &Req,
) -> Result<Resp> {
    let mut s = TcpStream::connect(b.bootstrap()).context("raw connect")?;
    s.set_read_timeout(Some(OP_TIMEOUT))
        .context("set_read_timeout")?;
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(7)
        .with_client_id(Some(StrBytes::from_static_str("skiff-e2e-raw")));
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    header
        .encode(&mut buf, key.request_header_version(version))
        .context("encode request header")?;
    req.encode(&mut buf, version)
        .context("encode request body")?;
    let size = i32::try_from(buf.len() - 4).context("request too large")?;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    s.write_all(&buf).context("raw write")?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len).context("raw read size")?;
    let len = usize::try_from(i32::from_be_bytes(len)).context("negative response size")?;
    if len > 64 << 20 {
        bail!("response size {len} is implausible");
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).context("raw read body")?;
    let mut body = Bytes::from(body);
    let rh = ResponseHeader::decode(&mut body, key.response_header_version(version))
        .context("decode response header")?;
    if rh.correlation_id != 7 {
        bail!("correlation id {} != 7", rh.correlation_id);
    }
    let resp = Resp::decode(&mut body, version).context("decode response body")?;
    if body.has_remaining() {
        bail!(
            "{} trailing bytes after the {key:?} v{version} response",
            body.remaining()
        );
    }
    Ok(resp)
}

/// Topic name → topic id (as a string) from a Metadata v12 request for all topics.
pub fn topic_ids(b: &Broker) -> Result<HashMap<String, String>> {
    let req = MetadataRequest::default().with_topics(None);
    let resp: MetadataResponse = raw_call(b, ApiKey::Metadata, 12, &req)?;
    Ok(resp
        .topics
        .iter()
        .filter_map(|t| {
            t.name
                .as_ref()
                .map(|n| (n.0.to_string(), t.topic_id.to_string()))
        })
        .collect())
}
