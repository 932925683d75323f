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
/// How long stopping the clients may take: their own timeouts are 5 s at most.
const STOP_LIMIT: Duration = Duration::from_secs(10);
/// Index of the offset committer in `Workload::threads` (started and stopped last).
const COMMITTER: usize = 3;

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

impl ConsumerContext for AckCtx {}

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
            threads.push(std::thread::spawn(move || transactions(&b, round, &s, &a)));
        }
        {
            let (b, s, a) = (bootstrap.to_string(), stop.clone(), acked.clone());
            threads.push(std::thread::spawn(move || commit_offsets(&b, &s, &a)));
        }
        Workload {
            stop,
            threads,
            acked,
        }
    }

    /// Stops and joins every thread, waiting at most [`STOP_LIMIT`] in all. A thread still
    /// blocked in librdkafka then (a synchronous commit waiting for a coordinator that died
    /// with the broker) is left behind, detached; whatever it reports later is ignored
    /// because the acknowledgements are taken now.
    pub fn stop(self) -> Arc<Acked> {
        self.stop.store(true, Ordering::SeqCst);
        let deadline = std::time::Instant::now() + STOP_LIMIT;
        for (i, t) in self.threads.into_iter().enumerate() {
            // The committer's synchronous commit never returns once the broker is gone; give
            // it a moment after the others rather than the whole limit.
            let deadline = if i == COMMITTER {
                deadline.min(std::time::Instant::now() + Duration::from_millis(500))
            } else {
                deadline
            };
            while !t.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if t.is_finished() {
                let _ = t.join();
            } else {
                eprintln!("a client thread is still blocked in librdkafka; leaving it behind");
            }
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
    // librdkafka routes commit results to the consumer queue only once the consumer has an
    // assignment: assign the partitions, paused (nothing is fetched).
    let mut assigned = TopicPartitionList::new();
    for p in 0..PLAIN_PARTITIONS {
        assigned.add_partition(PLAIN, p);
    }
    if consumer.assign(&assigned).is_err() || consumer.pause(&assigned).is_err() {
        return;
    }
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
        // Synchronous: Ok means the broker acknowledged this very commit. (Async commits
        // report through the commit callback, which librdkafka never served here for a
        // consumer that is not a group member.)
        if consumer.commit(&tpl, CommitMode::Sync).is_ok() {
            if let Ok(mut c) = acked.commits.lock() {
                for p in 0..PLAIN_PARTITIONS {
                    c.insert(p, next);
                }
            }
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
    // InitProducerId can be refused for a moment while the previous instance's transaction
    // is being aborted (CONCURRENT_TRANSACTIONS); try a few times.
    let mut producer = None;
    for _ in 0..5 {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        producer = txn_producer(bootstrap);
        if producer.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let Some(p) = producer else {
        eprintln!("round {round}: the transactional producer could not initialise; no transactions this round");
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
