//! The workload run between two power cuts, through librdkafka (the `rdkafka` crate), and
//! what it records as acknowledged.
//!
//! Threads: an idempotent acks=all producer on `plain` (2 partitions, time-rolled segments),
//! one on `compact` (a compacted topic that rolls every second so the cleaner swaps
//! segments), an offset committer for group `pc-group`, and a transactional producer on
//! `txn` that commits and aborts. Every thread stops when the shared stop flag is set, and
//! every blocking client call has a timeout, so [`Workload::stop`] is bounded.
//!
//! Record values say who wrote them: `p|round|partition|seq|…`, `c|round|key|seq|…`,
//! `t|round|txn|i`, so the checks can tell order and origin apart.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext};
use rdkafka::error::KafkaResult;
use rdkafka::message::Message;
use rdkafka::producer::{
    BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer,
};
use rdkafka::util::Timeout;
use rdkafka::{Offset, TopicPartitionList};

pub const PLAIN: &str = "plain";
pub const COMPACT: &str = "compact";
pub const TXN: &str = "txn";
pub const GROUP: &str = "pc-group";
pub const PLAIN_PARTITIONS: i32 = 2;
/// Keys of the compacted topic: few enough that every pass has plenty to remove.
pub const COMPACT_KEYS: u64 = 30;
/// Records per transaction.
pub const TXN_RECORDS: u32 = 3;

/// One acknowledged record.
#[derive(Clone, Debug)]
pub struct Ack {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: String,
    pub value: String,
}

/// Everything acknowledged during one round.
#[derive(Default)]
pub struct Acked {
    pub records: Mutex<Vec<Ack>>,
    /// Highest acknowledged committed offset per `plain` partition.
    pub commits: Mutex<HashMap<i32, i64>>,
    /// Transaction id (`round|n`) → true for an acknowledged commit, false for an abort.
    pub txns: Mutex<Vec<(String, bool)>>,
    pub failed: Mutex<u64>,
}

#[derive(Clone)]
struct AckCtx(Arc<Acked>);

impl ClientContext for AckCtx {}

impl ProducerContext for AckCtx {
    type DeliveryOpaque = Box<(String, String)>;
    fn delivery(&self, result: &DeliveryResult<'_>, kv: Box<(String, String)>) {
        match result {
            Ok(m) => {
                let (key, value) = *kv;
                if let Ok(mut r) = self.0.records.lock() {
                    r.push(Ack {
                        topic: m.topic().to_string(),
                        partition: m.partition(),
                        offset: m.offset(),
                        key,
                        value,
                    });
                }
            }
            Err(_) => {
                if let Ok(mut f) = self.0.failed.lock() {
                    *f += 1;
                }
            }
        }
    }
}

impl ConsumerContext for AckCtx {
    fn commit_callback(&self, result: KafkaResult<()>, offsets: &TopicPartitionList) {
        if result.is_err() {
            return;
        }
        if let Ok(mut c) = self.0.commits.lock() {
            for e in offsets.elements() {
                // A per-partition error leaves that partition's offset out.
                if e.error().is_err() {
                    continue;
                }
                if let Offset::Offset(o) = e.offset() {
                    let slot = c.entry(e.partition()).or_insert(o);
                    *slot = (*slot).max(o);
                }
            }
        }
    }
}

pub fn client_config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("socket.timeout.ms", "5000")
        .set("reconnect.backoff.ms", "50")
        .set("reconnect.backoff.max.ms", "300");
    c
}

fn idempotent_producer(bootstrap: &str, acked: &Arc<Acked>) -> ThreadedProducer<AckCtx> {
    let mut c = client_config(bootstrap);
    c.set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("message.timeout.ms", "4000");
    c.create_with_context(AckCtx(acked.clone()))
        .expect("creating an idempotent producer")
}

fn pad(n: usize) -> String {
    "x".repeat(n)
}

/// The running threads of one round.
pub struct Workload {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    pub acked: Arc<Acked>,
}

impl Workload {
    pub fn start(bootstrap: &str, round: u32) -> Workload {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Acked::default());
        let mut threads = Vec::new();
        {
            let (b, s, a) = (bootstrap.to_string(), stop.clone(), acked.clone());
            threads.push(std::thread::spawn(move || produce_plain(&b, round, &s, &a)));
        }
        {
            let (b, s, a) = (bootstrap.to_string(), stop.clone(), acked.clone());
            threads.push(std::thread::spawn(move || {
                produce_compact(&b, round, &s, &a)
            }));
        }
        {
            let (b, s, a) = (bootstrap.to_string(), stop.clone(), acked.clone());
            threads.push(std::thread::spawn(move || commit_offsets(&b, &s, &a)));
        }
        {
            let (b, s, a) = (bootstrap.to_string(), stop.clone(), acked.clone());
            threads.push(std::thread::spawn(move || transactions(&b, round, &s, &a)));
        }
        Workload {
            stop,
            threads,
            acked,
        }
    }

    /// Stops and joins every thread (each is bounded by its client timeouts).
    pub fn stop(self) -> Arc<Acked> {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads {
            let _ = t.join();
        }
        self.acked
    }
}

/// Backs off while too many records are unacknowledged, so a dead broker does not pile up
/// an unbounded queue.
fn throttle(p: &ThreadedProducer<AckCtx>, stop: &AtomicBool) {
    for _ in 0..200 {
        if p.in_flight_count() < 200 || stop.load(Ordering::SeqCst) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn produce_plain(bootstrap: &str, round: u32, stop: &AtomicBool, acked: &Arc<Acked>) {
    let p = idempotent_producer(bootstrap, acked);
    let mut seq = [0u64; PLAIN_PARTITIONS as usize];
    let mut i = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let part = (i % PLAIN_PARTITIONS as u64) as i32;
        let s = seq[part as usize];
        let key = format!("k{}", i % 50);
        let value = format!("p|{round}|{part}|{s}|{}", pad(200));
        let rec = BaseRecord::with_opaque_to(PLAIN, Box::new((key.clone(), value.clone())))
            .partition(part)
            .key(&key)
            .payload(&value);
        if p.send(rec).is_ok() {
            seq[part as usize] += 1;
            i += 1;
        } else {
            std::thread::sleep(Duration::from_millis(5));
        }
        // About a thousand records a second: enough for rolls and batching, little enough
        // that reading everything back after each of the cuts stays quick.
        std::thread::sleep(Duration::from_millis(1));
        throttle(&p, stop);
    }
    let _ = p.flush(Timeout::After(Duration::from_millis(500)));
}

fn produce_compact(bootstrap: &str, round: u32, stop: &AtomicBool, acked: &Arc<Acked>) {
    let p = idempotent_producer(bootstrap, acked);
    let mut seq = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let key = format!("c{}", seq % COMPACT_KEYS);
        let value = format!("c|{round}|{key}|{seq}|{}", pad(1500));
        let rec = BaseRecord::with_opaque_to(COMPACT, Box::new((key.clone(), value.clone())))
            .partition(0)
            .key(&key)
            .payload(&value);
        if p.send(rec).is_ok() {
            seq += 1;
        } else {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(2));
        throttle(&p, stop);
    }
    let _ = p.flush(Timeout::After(Duration::from_millis(500)));
}

fn commit_offsets(bootstrap: &str, stop: &AtomicBool, acked: &Arc<Acked>) {
    let mut c = client_config(bootstrap);
    c.set("group.id", GROUP).set("enable.auto.commit", "false");
    let consumer: BaseConsumer<AckCtx> = c
        .create_with_context(AckCtx(acked.clone()))
        .expect("creating the committing consumer");
    // Offsets grow from wherever the previous rounds left them (the broker does not check a
    // committed offset against the log).
    let mut next = 1_000_000i64 + (std::process::id() as i64 % 1000);
    let mut start_from_committed = true;
    while !stop.load(Ordering::SeqCst) {
        if start_from_committed {
            let mut tpl = TopicPartitionList::new();
            for p in 0..PLAIN_PARTITIONS {
                tpl.add_partition(PLAIN, p);
            }
            if let Ok(got) = consumer.committed_offsets(tpl, Duration::from_secs(3)) {
                for e in got.elements() {
                    if let Offset::Offset(o) = e.offset() {
                        next = next.max(o + 1);
                    }
                }
                start_from_committed = false;
            }
        }
        let mut tpl = TopicPartitionList::new();
        for p in 0..PLAIN_PARTITIONS {
            let _ = tpl.add_partition_offset(PLAIN, p, Offset::Offset(next));
        }
        if consumer.commit(&tpl, CommitMode::Async).is_ok() {
            next += 1;
        }
        let _ = consumer.poll(Duration::from_millis(30));
    }
    // Serve the callbacks of commits still in flight.
    for _ in 0..10 {
        let _ = consumer.poll(Duration::from_millis(20));
    }
    close_bounded(consumer);
}

/// Closes a group consumer, waiting at most 3 s. rdkafka's `Drop` polls until librdkafka
/// says the consumer is closed, which never happens once the broker is dead (the close waits
/// for the group coordinator); such a consumer is leaked instead of hanging the test. Its
/// broker's port is not reused by later rounds, so it cannot commit into them.
fn close_bounded<C: ConsumerContext>(consumer: BaseConsumer<C>) {
    if consumer.close_queue().is_ok() {
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        while !consumer.closed() && std::time::Instant::now() < deadline {
            let _ = consumer.poll(Duration::from_millis(50));
        }
        if consumer.closed() {
            drop(consumer);
            return;
        }
    }
    std::mem::forget(consumer);
}

/// Creates the transactional producer and fences any earlier instance (which aborts a
/// transaction left open by a cut).
pub fn txn_producer(bootstrap: &str) -> Option<BaseProducer> {
    let mut c = client_config(bootstrap);
    c.set("transactional.id", "pc-txn")
        .set("transaction.timeout.ms", "5000")
        .set("message.timeout.ms", "4000");
    let p: BaseProducer = c.create().ok()?;
    p.init_transactions(Duration::from_secs(10)).ok()?;
    Some(p)
}

fn transactions(bootstrap: &str, round: u32, stop: &AtomicBool, acked: &Arc<Acked>) {
    let Some(p) = txn_producer(bootstrap) else {
        return;
    };
    let mut n = 0u32;
    while !stop.load(Ordering::SeqCst) {
        if p.begin_transaction().is_err() {
            return;
        }
        for i in 0..TXN_RECORDS {
            let v = format!("t|{round}|{n}|{i}");
            let rec: BaseRecord<'_, str, str> =
                BaseRecord::to(TXN).partition(0).key("t").payload(&v);
            if p.send(rec).is_err() {
                return;
            }
        }
        p.poll(Duration::from_millis(1));
        // Commit two in three, abort the third.
        let commit = n % 3 != 2;
        let r = if commit {
            p.commit_transaction(Duration::from_secs(5))
        } else {
            p.abort_transaction(Duration::from_secs(5))
        };
        if r.is_err() {
            return;
        }
        if let Ok(mut t) = acked.txns.lock() {
            t.push((format!("{round}|{n}"), commit));
        }
        n += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
}
