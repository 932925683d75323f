//! `skiff-bench fetch-sessions` (issue 19): what incremental fetch sessions (KIP-227) save a
//! consumer of many partitions of which few have data, Skiff beside Kafka 4.4 in one run.
//!
//! Per contender: a fresh broker, a topic of `--partitions` partitions (default 2,000), one
//! record in each of the first [`WITH_DATA`]. A raw client (Fetch v12, names) reads every
//! partition to its end, then polls `--fetches` times with `max_wait_ms` 0, in two ways:
//! - **full**: every fetch lists every partition (session epoch -1, no session);
//! - **session**: one full fetch opens a session (epoch 0), then incremental fetches name
//!   nothing, since nothing changed (epoch 1, 2, …).
//!
//! Before each poll the bench appends one record to one of the first [`WITH_DATA`]
//! partitions (round robin), so every fetch has one partition to answer and the others sit
//! idle. Reported per fetch: the broker's CPU µs (over the polls, appends included alike in
//! both ways), and the request and response bytes on the wire.
//!
//! Owns: [`run`]. Thread-safety: main thread only. On-disk: the brokers' temp roots. Every
//! loop is bounded by `--fetches`; every socket read by the connection's timeout.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiKey, BrokerId, FetchRequest, FetchResponse, TopicName};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use crate::broker::{BrokerKind, RunningBroker};
use crate::matrix::{Better, Matrix};
use crate::produce;
use crate::rawconn::Conn;

const TOPIC: &str = "bench-fetch-sessions";
/// Partitions that get records; the rest stay empty.
const WITH_DATA: i32 = 10;
const FETCH_VERSION: i16 = 12;
/// Per-partition and total byte limits of every fetch (one record per poll fits).
const PARTITION_MAX_BYTES: i32 = 1 << 20;
const MAX_BYTES: i32 = 50 << 20;
pub const MAX_PARTITIONS: i32 = 10_000;
pub const MAX_FETCHES: u64 = 100_000;

/// `runs` runs of each contender; prints the matrix.
pub fn run(
    skiff: &Path,
    kafka: Option<BrokerKind>,
    partitions: i32,
    fetches: u64,
    runs: u32,
    clk_tck: f64,
) -> Result<()> {
    if !(WITH_DATA..=MAX_PARTITIONS).contains(&partitions) {
        bail!("--partitions must be {WITH_DATA}..={MAX_PARTITIONS} for fetch-sessions");
    }
    if fetches == 0 || fetches > MAX_FETCHES {
        bail!("--fetches must be 1..={MAX_FETCHES}");
    }
    let contenders = crate::broker::skiff_and_kafka(skiff, kafka);
    let labels: Vec<&str> = contenders.iter().map(|(l, _)| *l).collect();
    let mut m = Matrix::new(&labels, "skiff");
    for run in 1..=runs {
        for (label, kind) in &contenders {
            eprintln!("run {run}/{runs}: {label}");
            if let Err(e) =
                kind.with_fresh(|b| measure(b, label, partitions, fetches, clk_tck, &mut m))
            {
                eprintln!("  {label}: {e:#}");
                m.not_run(label, &format!("failed in run {run}: {e}"));
            }
        }
    }
    println!();
    println!(
        "skiff-bench fetch-sessions: {partitions} partitions, {WITH_DATA} with data, \
         {fetches} fetches per way ({runs} runs; medians, min-max)"
    );
    print!("{}", m.render_text());
    Ok(())
}

fn measure(
    b: &RunningBroker,
    label: &str,
    partitions: i32,
    fetches: u64,
    clk_tck: f64,
    m: &mut Matrix,
) -> Result<()> {
    let addr = b.bootstrap();
    produce::create_topic_timeout(&addr, TOPIC, partitions, Duration::from_secs(120))?;
    let mut conn = Conn::connect(&addr)?;
    let all: Vec<usize> = (0..usize::try_from(partitions).unwrap_or(0)).collect();
    let mut offsets = vec![0i64; all.len()];
    // Kafka answers NOT_LEADER_OR_FOLLOWER for a while after creating many partitions.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while let Err(e) =
        fetch(&mut conn, &offsets, &all, 0, -1).and_then(|r| advance(&r, &mut offsets))
    {
        ensure!(
            std::time::Instant::now() < deadline,
            "{label}: partitions not ready after 120 s: {e:#}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut producer = Conn::connect(&addr)?;
    let mut appended = 0u64;
    let mut append_one = |producer: &mut Conn| -> Result<()> {
        let partition = i32::try_from(appended % WITH_DATA as u64).unwrap_or(0);
        appended += 1;
        produce_one(producer, partition)
    };
    for _ in 0..WITH_DATA {
        append_one(&mut producer)?;
    }
    // Read every partition to its end (full fetches until nothing comes back).
    for _ in 0..10 {
        let r = fetch(&mut conn, &offsets, &all, 0, -1)?;
        if advance(&r, &mut offsets)?.is_empty() {
            break;
        }
    }
    for way in ["full", "session"] {
        let (mut session_id, mut epoch) = (0, -1);
        let mut moved = Vec::new();
        if way == "session" {
            let r = fetch(&mut conn, &offsets, &all, 0, 0)?;
            ensure!(
                r.session_id != 0,
                "{label}: the session fetch got no session id"
            );
            session_id = r.session_id;
            moved = advance(&r, &mut offsets)?;
            epoch = 1;
        }
        let cpu_before = b.sample(clk_tck)?.cpu_secs;
        let (sent_before, received_before) = (conn.sent_bytes, conn.received_bytes);
        let mut got = 0usize;
        for _ in 0..fetches {
            append_one(&mut producer)?;
            let named = if session_id == 0 { &all } else { &moved };
            let r = fetch(&mut conn, &offsets, named, session_id, epoch)?;
            moved = advance(&r, &mut offsets)?;
            got += moved.len();
            if session_id != 0 {
                epoch = if epoch == i32::MAX { 1 } else { epoch + 1 };
            }
        }
        let cpu = b.sample(clk_tck)?.cpu_secs - cpu_before;
        let n = fetches as f64;
        let scenario = format!("{partitions} partitions, {way} fetches");
        m.add(
            &scenario,
            "broker CPU µs/fetch",
            Better::Lower,
            label,
            cpu * 1e6 / n,
        );
        m.add(
            &scenario,
            "request B/fetch",
            Better::Lower,
            label,
            (conn.sent_bytes - sent_before) as f64 / n,
        );
        m.add(
            &scenario,
            "response B/fetch",
            Better::Lower,
            label,
            (conn.received_bytes - received_before) as f64 / n,
        );
        m.add(
            &scenario,
            "partitions with records/fetch",
            Better::Higher,
            label,
            got as f64 / n,
        );
    }
    Ok(())
}

/// One record of 100 bytes to `partition` with acks=1 (Produce v9), on the bench's own
/// connection: the same for both brokers and both ways, and answered before the next poll.
fn produce_one(conn: &mut Conn, partition: i32) -> Result<()> {
    let record = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: 0,
        key: None,
        value: Some(bytes::Bytes::from_static(&[7u8; 100])),
        headers: Default::default(),
    };
    let mut batch = bytes::BytesMut::new();
    RecordBatchEncoder::encode(
        &mut batch,
        [&record],
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .context("encoding a record batch")?;
    let req = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(batch.freeze()))])]);
    let r: ProduceResponse = conn.call(ApiKey::Produce, 9, &req)?;
    let code = r
        .responses
        .first()
        .and_then(|t| t.partition_responses.first())
        .map(|p| p.error_code)
        .context("Produce: no answer for the partition")?;
    ensure!(
        code == 0,
        "Produce to partition {partition} answered error {code}"
    );
    Ok(())
}

/// One Fetch v12 with `max_wait_ms` 0 naming the partitions `named` at their offsets: all of
/// them in a full fetch, in an incremental one those whose offset moved since the last.
fn fetch(
    conn: &mut Conn,
    offsets: &[i64],
    named: &[usize],
    session_id: i32,
    epoch: i32,
) -> Result<FetchResponse> {
    let partitions: Vec<FetchPartition> = named
        .iter()
        .filter_map(|&i| {
            Some(
                FetchPartition::default()
                    .with_partition(i32::try_from(i).ok()?)
                    .with_fetch_offset(*offsets.get(i)?)
                    .with_partition_max_bytes(PARTITION_MAX_BYTES),
            )
        })
        .collect();
    let topics = if partitions.is_empty() {
        Vec::new()
    } else {
        vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partitions(partitions)]
    };
    let req = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(MAX_BYTES)
        .with_session_id(session_id)
        .with_session_epoch(epoch)
        .with_topics(topics);
    let r: FetchResponse = conn.call(ApiKey::Fetch, FETCH_VERSION, &req)?;
    ensure!(
        r.error_code == 0,
        "Fetch (session {session_id}, epoch {epoch}) answered error {}",
        r.error_code
    );
    Ok(r)
}

/// Moves each answered partition's offset to its high watermark (every record of a
/// partition comes back in one answer here); returns the partitions whose offset moved.
fn advance(r: &FetchResponse, offsets: &mut [i64]) -> Result<Vec<usize>> {
    let mut moved = Vec::new();
    for t in &r.responses {
        for p in &t.partitions {
            ensure!(
                p.error_code == 0,
                "partition {} answered error {}",
                p.partition_index,
                p.error_code
            );
            let i = usize::try_from(p.partition_index).unwrap_or(usize::MAX);
            let slot = offsets
                .get_mut(i)
                .context("an answer for a partition not asked for")?;
            if p.high_watermark > *slot {
                ensure!(
                    p.records.as_ref().is_some_and(|r| !r.is_empty()),
                    "partition {i}: high watermark {} above the offset {} but no records",
                    p.high_watermark,
                    *slot
                );
                *slot = p.high_watermark;
                moved.push(i);
            }
        }
    }
    Ok(moved)
}
