//! `__consumer_offsets`: replaying it at start, and appending group records (the topic is
//! created on first use, see `crate::internal_topic`).
//!
//! One named std thread ("skiff-coordinator") owns every write: jobs arrive on a channel in
//! the order the state machine produced them (they are queued while the groups lock is held),
//! so a newer record for a key is never appended before an older one. The same thread first
//! replays the topic (the coordinator answers COORDINATOR_LOAD_IN_PROGRESS until it is done)
//! and between jobs drives the coordinator's deadlines and offset expiry (decided on the
//! injected clock; a test runs a pass at once with `Coordinator::tick_now`).
//!
//! Replay rebuilds classic groups, consumer groups (types 3-8), committed offsets and share
//! groups (types 10-15, through `share_group::ShareReplay`); other record types are skipped.
//!
//! On-disk format: Kafka's record schemas (see `records.rs`), one uncompressed batch per job,
//! appended with [`InternalPartition::append`] (the broker's `Log::append_internal`). The topic is compacted (`cleanup.policy=compact`,
//! `segment.bytes` 100 MiB, as Kafka creates it).

use std::collections::BTreeMap;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crate::cadence::Every;

use skiff_records::{BatchBuilder, Batches, Compression};
use tokio::sync::oneshot;
use tracing::{info, warn};

use super::group::Value;
use super::records::{self, Key};
use super::Shared;
use crate::host::{InternalPartition, Storage, LEADER_EPOCH};

pub const OFFSETS_TOPIC: &str = "__consumer_offsets";
/// How often deadlines are checked: session and rebalance timeouts are seconds long, so
/// 50 ms of lateness is invisible to clients and costs nothing when idle.
pub const TICK: Duration = Duration::from_millis(50);
/// Read size while replaying a partition.
const REPLAY_CHUNK: usize = 4 << 20;
/// Cap on the decompressed size of one replayed batch (a corrupt length cannot exhaust memory).
const MAX_DECOMPRESSED: usize = 64 << 20;

/// Where a write job's records end up: (partition, end offset) for a durability wait.
pub type WriteResult<P> = Result<(Arc<P>, i64), String>;

pub struct Job<P> {
    pub partition: i32,
    pub records: Vec<(Key, Option<Value>)>,
    pub done: Option<oneshot::Sender<WriteResult<P>>>,
}

pub fn encode_records(records: &[(Key, Option<Value>)], now: i64) -> Result<Vec<u8>, String> {
    let mut builder = BatchBuilder::new(0, Compression::None);
    for (key, value) in records {
        let k = records::encode_key(key);
        let v = value.as_ref().map(|v| match v {
            Value::Offset(o) => records::encode_offset_value(o),
            Value::Group(g) => records::encode_group_value(g),
            Value::Consumer(bytes) | Value::Share(bytes) | Value::Streams(bytes) => bytes.clone(),
        });
        builder.push(now, Some(&k), v.as_deref(), &[]);
    }
    builder.build().map_err(|e| e.to_string())
}

fn append<P: InternalPartition>(
    partition: &Arc<P>,
    records: &[(Key, Option<Value>)],
    now: i64,
) -> WriteResult<P> {
    let batch = encode_records(records, now)?;
    let end = partition
        .append(&batch, LEADER_EPOCH, now)
        .map_err(|e| e.to_string())?;
    partition.wake_readers();
    Ok((partition.clone(), end))
}

/// What the coordinator thread is sent, in order.
pub enum Msg<P> {
    /// Records to append.
    Write(Job<P>),
    /// [`super::Coordinator::tick_now`]: run the periodic pass now, write the records it
    /// queued, then answer.
    Tick(mpsc::SyncSender<()>),
}

/// The coordinator thread: replay, then write jobs and tick until [`super::Coordinator::stop`]
/// (or until the coordinator is gone). It wakes at least every [`TICK`] of real time; what a
/// pass does is decided on the injected clock (group deadlines, and the offsets expiry every
/// `offsets.retention.check.interval.ms` of clock time).
pub fn run<S: Storage>(shared: Weak<Shared<S>>, msgs: Receiver<Msg<S::Partition>>) {
    let Some(s) = shared.upgrade() else { return };
    let started = Instant::now();
    let (groups, records) = replay(&s);
    s.install_loaded(groups);
    info!(
        records,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "group coordinator loaded {OFFSETS_TOPIC}"
    );
    let check_interval_ms = match s.settings.retention_check_interval_ms {
        ms if ms >= 0 => ms,
        _ => 600_000,
    };
    let mut expiry = Every::starting(check_interval_ms, s.clock.now_ms());
    drop(s);
    let mut last_tick = Instant::now();
    loop {
        let mut asked = Vec::new();
        match msgs.recv_timeout(TICK) {
            Ok(Msg::Write(job)) => {
                let Some(s) = shared.upgrade() else { return };
                s.write(job);
            }
            Ok(Msg::Tick(done)) => asked.push(done),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        let Some(s) = shared.upgrade() else { return };
        if s.stopping.load(std::sync::atomic::Ordering::Acquire) {
            // Shutdown: write what was queued before the stop (the logs are still open),
            // then end; later jobs fail to send once the receiver is gone (and a waiting
            // `tick_now` gets no answer: it returns).
            while let Ok(msg) = msgs.try_recv() {
                if let Msg::Write(job) = msg {
                    s.write(job);
                }
            }
            return;
        }
        if !asked.is_empty() || last_tick.elapsed() >= TICK {
            last_tick = Instant::now();
            s.tick();
            if expiry.due(s.clock.now_ms()) {
                s.expire_offsets();
            }
        }
        if !asked.is_empty() {
            // Write what the pass queued (after anything queued before it), then answer.
            while let Ok(msg) = msgs.try_recv() {
                match msg {
                    Msg::Write(job) => s.write(job),
                    Msg::Tick(done) => asked.push(done),
                }
            }
            for done in asked {
                let _ = done.send(());
            }
        }
    }
}

impl<S: Storage> Shared<S> {
    fn write(&self, job: Job<S::Partition>) {
        let now = self.clock.now_ms();
        let result = self
            .offsets
            .partition(&*self.storage, job.partition)
            .and_then(|p| append(&p, &job.records, now));
        if let Err(e) = &result {
            tracing::error!(partition = job.partition, error = %e, "writing group records failed");
        }
        if let Some(done) = job.done {
            let _ = done.send(result);
        }
    }
}

/// Everything replayed: group id -> (latest metadata or tombstone seen, offsets).
pub struct Replayed {
    pub metadata: Option<records::GroupValue>,
    pub offsets: BTreeMap<(String, i32), records::OffsetValue>,
    /// KIP-848 consumer group records (raw values; `consumer_store::restore` decodes them).
    pub consumer: super::consumer_store::Persisted,
    /// Share group records (types 10-15), applied in log order.
    pub share: crate::share_group::ShareReplay,
    /// Streams group records (raw values; `crate::streams_group::restore` decodes them).
    pub streams: crate::streams_group::Persisted,
}

impl Replayed {
    fn new() -> Replayed {
        Replayed {
            metadata: None,
            offsets: BTreeMap::new(),
            consumer: BTreeMap::new(),
            share: Default::default(),
            streams: BTreeMap::new(),
        }
    }
}

fn replay<S: Storage>(s: &Shared<S>) -> (BTreeMap<String, Replayed>, u64) {
    let mut groups: BTreeMap<String, Replayed> = BTreeMap::new();
    let mut count = 0u64;
    // Transactional offset commits wait for their producer's marker (`txn_offsets.rs`).
    let mut pending = super::txn_offsets::PendingTxnOffsets::new();
    for partition in s.offsets.existing() {
        let mut offset = partition.log_start_offset();
        let end = partition.log_end_offset();
        while offset < end {
            let records = match partition.read(offset, REPLAY_CHUNK) {
                Ok(r) => r,
                Err(e) => {
                    warn!(partition = partition.index(), offset, error = %e, "replay read failed; skipping the rest of this partition");
                    break;
                }
            };
            if records.is_empty() {
                break;
            }
            let mut next = offset;
            for batch in Batches::new(&records) {
                let Ok((header, bytes)) = batch else { break };
                next = header.next_offset();
                if header.is_control() {
                    if let Some((control, _)) = skiff_log::parse_marker(bytes) {
                        let commit = control == skiff_log::ControlType::Commit;
                        count += super::txn_offsets::resolve(
                            &mut pending,
                            &mut groups,
                            header.producer_id,
                            commit,
                            apply,
                        );
                    }
                    continue;
                }
                let recs = match skiff_records::records(bytes, MAX_DECOMPRESSED) {
                    Ok(r) => r,
                    Err(e) => {
                        warn!(partition = partition.index(), offset = header.base_offset, error = %e, "skipping an unreadable batch");
                        continue;
                    }
                };
                for r in recs {
                    if header.is_transactional() {
                        if let Some(k) = r.key.as_deref() {
                            super::txn_offsets::hold(
                                &mut pending,
                                header.producer_id,
                                k,
                                r.value.as_deref(),
                            );
                        }
                        continue;
                    }
                    count += 1;
                    apply(&mut groups, r.key.as_deref(), r.value.as_deref());
                }
            }
            if next <= offset {
                break;
            }
            offset = next;
        }
    }
    *s.pending_txn() = pending;
    (groups, count)
}

fn apply(groups: &mut BTreeMap<String, Replayed>, key: Option<&[u8]>, value: Option<&[u8]>) {
    let Some(key) = key else { return };
    let key = match records::decode_key(key) {
        Ok(k) => k,
        Err(e) => {
            warn!(error = %e.in_topic(OFFSETS_TOPIC), "skipping a record with an unreadable key");
            return;
        }
    };
    match key {
        Key::Offset {
            group,
            topic,
            partition,
        } => {
            let decoded = value.map(records::decode_offset_value);
            let g = groups.entry(group).or_insert_with(Replayed::new);
            match decoded {
                None => {
                    g.offsets.remove(&(topic, partition));
                }
                Some(Ok(v)) => {
                    g.offsets.insert((topic, partition), v);
                }
                Some(Err(e)) => {
                    warn!(error = %e.in_topic(OFFSETS_TOPIC), "skipping an unreadable offset commit value")
                }
            }
        }
        Key::Group { group } => match value.map(records::decode_group_value) {
            None => {
                if let Some(g) = groups.get_mut(&group) {
                    g.metadata = None;
                }
            }
            Some(Ok(v)) => {
                groups.entry(group).or_insert_with(Replayed::new).metadata = Some(v);
            }
            Some(Err(e)) => {
                warn!(error = %e.in_topic(OFFSETS_TOPIC), "skipping an unreadable group metadata value")
            }
        },
        Key::Consumer(k) => {
            let g = groups
                .entry(k.group().to_string())
                .or_insert_with(Replayed::new);
            match value {
                Some(v) => {
                    g.consumer.insert(k, v.to_vec());
                }
                None => {
                    g.consumer.remove(&k);
                }
            }
        }
        Key::Share(k) => {
            let g = groups
                .entry(k.group().to_string())
                .or_insert_with(Replayed::new);
            if let Err(e) = g.share.apply(&k, value) {
                warn!(error = %e.in_topic(OFFSETS_TOPIC), "skipping an unreadable share group record");
            }
        }
        Key::Streams(k) => {
            let g = groups
                .entry(k.group().to_string())
                .or_insert_with(Replayed::new);
            match value {
                Some(v) => {
                    g.streams.insert(k, v.to_vec());
                }
                None => {
                    g.streams.remove(&k);
                }
            }
        }
        Key::Other(_) => {}
    }
}
