//! Group commit: `acks=all` produce responses wait here until their data is fsynced.
//!
//! One flusher thread owns every round. Waiters queue `(partition, offset)`; each round the
//! thread takes the whole queue, flushes each distinct partition once, and answers everyone
//! it covered. While a round runs, new waiters gather for the next one, so one fsync serves
//! all requests that arrived meanwhile, across partitions and connections. A round about to
//! start waits briefly for acks=all appends already under way ([`AppendGuard`]), which would
//! otherwise start the next round right after it.
//!
//! A round with several partitions fsyncs them in parallel (up to [`MAX_PARALLEL_FSYNCS`]
//! threads for the round): a filesystem such as ext4 or xfs folds concurrent fsyncs into one
//! journal commit, where fsyncing partition after partition waits for a commit each, which
//! made acks=all on 12 partitions slower than on one. The helper threads are started by the
//! first such round and then kept ([`FsyncPool`]): starting threads in every round cost
//! more CPU than a round's fsyncs.
//!
//! Thread safety: the queue is a std `Mutex` + `Condvar`; nothing is held across `.await`
//! (waiters await a oneshot channel). The pool belongs to the flusher thread alone.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tracing::error;

use crate::metrics::{BrokerMetrics, FsyncSite};
use crate::partition::Partition;

type Waiter = (Arc<Partition>, i64, oneshot::Sender<Result<(), String>>);

/// Most fsyncs one round runs at once. More threads than this wait on the same journal
/// commit and only add scheduling on a small machine.
const MAX_PARALLEL_FSYNCS: usize = 8;

/// Longest a round waits for appends under way to queue their waiters (see [`AppendGuard`]).
/// Short against an fsync (150–400 µs on the disks measured), long against the rest of an
/// append.
const JOIN_WAIT: Duration = Duration::from_micros(200);

#[derive(Default)]
struct Queue {
    waiters: Vec<Waiter>,
    stopping: bool,
    /// acks=all appends under way whose waiters are not queued yet.
    appending: usize,
}

type Shared = Arc<(Mutex<Queue>, Condvar)>;

/// An acks=all append under way: a round about to start waits (at most [`JOIN_WAIT`]) for it
/// to queue its waiters, so one fsync serves it too instead of the next round.
pub struct AppendGuard {
    queue: Shared,
    armed: bool,
}

impl AppendGuard {
    fn settle(queue: &mut Queue, cvar: &Condvar) {
        queue.appending = queue.appending.saturating_sub(1);
        cvar.notify_one();
    }
}

impl Drop for AppendGuard {
    fn drop(&mut self) {
        if self.armed {
            let (lock, cvar) = &*self.queue;
            let mut queue = lock.lock().unwrap_or_else(|e| e.into_inner());
            Self::settle(&mut queue, cvar);
        }
    }
}

pub struct Durability {
    queue: Arc<(Mutex<Queue>, Condvar)>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Durability {
    /// Starts the flusher thread; every fsync it runs is timed into `metrics`.
    pub fn start(metrics: Arc<BrokerMetrics>) -> std::io::Result<Self> {
        Self::start_with(metrics, JOIN_WAIT)
    }

    /// [`Durability::start`] with another bound on waiting for appends under way.
    fn start_with(metrics: Arc<BrokerMetrics>, join_wait: Duration) -> std::io::Result<Self> {
        let queue: Shared = Arc::default();
        let for_thread = queue.clone();
        let thread = std::thread::Builder::new()
            .name("skiff-flusher".into())
            .spawn(move || flusher_loop(&for_thread, &metrics, join_wait))?;
        Ok(Durability {
            queue,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Marks an acks=all append as under way until the guard is passed to
    /// [`Durability::wait_all_flushed`] or dropped.
    pub fn append_started(&self) -> AppendGuard {
        let (lock, _) = &*self.queue;
        lock.lock().unwrap_or_else(|e| e.into_inner()).appending += 1;
        AppendGuard {
            queue: self.queue.clone(),
            armed: true,
        }
    }

    /// Resolves once everything below `end_offset` in `partition` is on disk.
    pub async fn wait_flushed(
        &self,
        partition: Arc<Partition>,
        end_offset: i64,
    ) -> Result<(), String> {
        let mut answers = self
            .wait_all_flushed(vec![(partition, end_offset)], None)
            .await;
        answers.pop().unwrap_or(Ok(()))
    }

    /// Resolves once every `(partition, end_offset)` is on disk: one answer each, in order.
    /// All are queued at once, so one round syncs a request's partitions together (queued
    /// one after another, each would wait for a round of its own).
    pub async fn wait_all_flushed(
        &self,
        waits: Vec<(Arc<Partition>, i64)>,
        append: Option<AppendGuard>,
    ) -> Vec<Result<(), String>> {
        let mut pending = Vec::with_capacity(waits.len());
        {
            let (lock, cvar) = &*self.queue;
            let mut queue = lock.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(mut guard) = append {
                guard.armed = false;
                AppendGuard::settle(&mut queue, cvar);
            }
            for (partition, end_offset) in waits {
                if partition.log.flushed_offset() >= end_offset {
                    pending.push(None);
                } else if queue.stopping {
                    pending.push(Some(Err("broker is shutting down".to_string())));
                } else {
                    let (tx, rx) = oneshot::channel();
                    queue.waiters.push((partition, end_offset, tx));
                    pending.push(Some(Ok(rx)));
                }
            }
            if !queue.waiters.is_empty() {
                cvar.notify_one();
            }
        }
        let mut answers = Vec::with_capacity(pending.len());
        for wait in pending {
            answers.push(match wait {
                None => Ok(()),
                Some(Err(e)) => Err(e),
                Some(Ok(rx)) => rx.await.unwrap_or_else(|_| Err("flusher stopped".into())),
            });
        }
        answers
    }

    /// Stop the flusher after it has answered every queued waiter.
    pub fn stop(&self) {
        {
            let (lock, cvar) = &*self.queue;
            let mut queue = lock.lock().unwrap_or_else(|e| e.into_inner());
            queue.stopping = true;
            cvar.notify_one();
        }
        let handle = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

fn flusher_loop(
    queue: &(Mutex<Queue>, Condvar),
    metrics: &Arc<BrokerMetrics>,
    join_wait: Duration,
) {
    let (lock, cvar) = queue;
    let mut pool = FsyncPool::default();
    loop {
        let batch = {
            let mut q = lock.lock().unwrap_or_else(|e| e.into_inner());
            while q.waiters.is_empty() && !q.stopping {
                q = cvar.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            if q.waiters.is_empty() && q.stopping {
                return;
            }
            // Appends under way queue their waiters within microseconds: let them join this
            // round rather than start the next one right after it.
            let deadline = Instant::now() + join_wait;
            while q.appending > 0 && !q.stopping {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                q = cvar
                    .wait_timeout(q, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            std::mem::take(&mut q.waiters)
        };
        flush_round(batch, &mut pool, metrics);
    }
}

/// Flush each distinct partition once and answer every waiter of this round.
fn flush_round(batch: Vec<Waiter>, pool: &mut FsyncPool, metrics: &Arc<BrokerMetrics>) {
    metrics.group_commit_round();
    let mut distinct: Vec<Arc<Partition>> = Vec::new();
    let mut seen = HashSet::new();
    for (partition, _, _) in &batch {
        if seen.insert(Arc::as_ptr(partition)) {
            distinct.push(partition.clone());
        }
    }
    let keys: Vec<*const Partition> = distinct.iter().map(Arc::as_ptr).collect();
    let results: HashMap<*const Partition, Result<i64, String>> = keys
        .into_iter()
        .zip(pool.flush_all(distinct, metrics))
        .collect();
    for (partition, end_offset, tx) in batch {
        let answer = match results.get(&Arc::as_ptr(&partition)) {
            Some(Ok(durable)) if *durable >= end_offset => Ok(()),
            Some(Ok(durable)) => Err(format!(
                "flushed to {durable}, below the acknowledged end offset {end_offset}"
            )),
            Some(Err(e)) => Err(e.clone()),
            None => Err("partition was not flushed".into()),
        };
        let _ = tx.send(answer);
    }
}

/// The flusher's helper threads, started when a round first has several partitions.
#[derive(Default)]
struct FsyncPool {
    helpers: Vec<mpsc::Sender<Arc<RoundWork>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
    /// A helper could not be started: run with the ones there are from then on.
    spawn_failed: bool,
}

/// One round's partitions, claimed one at a time by the flusher and the helpers it woke.
struct RoundWork {
    partitions: Vec<Arc<Partition>>,
    next: AtomicUsize,
    results: Mutex<Vec<Option<Result<i64, String>>>>,
    /// Helpers not yet done with this round.
    busy: Mutex<usize>,
    done: Condvar,
}

impl RoundWork {
    fn run(&self, metrics: &BrokerMetrics) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(partition) = self.partitions.get(i) else {
                return;
            };
            let result = flush_one(partition, metrics);
            if let Some(slot) = self
                .results
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_mut(i)
            {
                *slot = Some(result);
            }
        }
    }

    fn helper_done(&self) {
        let mut busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        *busy = busy.saturating_sub(1);
        self.done.notify_one();
    }
}

/// Marks a helper done with its round even if an fsync panicked, so the flusher never waits
/// for it forever (the partition it held is then answered with an error).
struct DoneGuard(Arc<RoundWork>);

impl Drop for DoneGuard {
    fn drop(&mut self) {
        self.0.helper_done();
    }
}

impl FsyncPool {
    /// Fsyncs every partition of `distinct` (results in the same order): on this thread when
    /// there is one, else spread over this thread and up to [`MAX_PARALLEL_FSYNCS`] - 1
    /// helpers.
    fn flush_all(
        &mut self,
        distinct: Vec<Arc<Partition>>,
        metrics: &Arc<BrokerMetrics>,
    ) -> Vec<Result<i64, String>> {
        if distinct.len() <= 1 {
            return distinct.iter().map(|p| flush_one(p, metrics)).collect();
        }
        let wanted = (distinct.len() - 1).min(MAX_PARALLEL_FSYNCS - 1);
        self.grow(wanted, metrics);
        let helpers = wanted.min(self.helpers.len());
        let work = Arc::new(RoundWork {
            results: Mutex::new(distinct.iter().map(|_| None).collect()),
            partitions: distinct,
            next: AtomicUsize::new(0),
            busy: Mutex::new(helpers),
            done: Condvar::new(),
        });
        for helper in &self.helpers[..helpers] {
            if helper.send(work.clone()).is_err() {
                // That helper is gone (an earlier fsync panicked in it); the rest cover it.
                work.helper_done();
            }
        }
        work.run(metrics);
        let mut busy = work.busy.lock().unwrap_or_else(PoisonError::into_inner);
        while *busy > 0 {
            busy = work.done.wait(busy).unwrap_or_else(PoisonError::into_inner);
        }
        drop(busy);
        let results =
            std::mem::take(&mut *work.results.lock().unwrap_or_else(PoisonError::into_inner));
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err("the fsync thread panicked".into())))
            .collect()
    }

    /// Starts helpers until there are `wanted`; one that cannot start leaves fewer.
    fn grow(&mut self, wanted: usize, metrics: &Arc<BrokerMetrics>) {
        while !self.spawn_failed && self.helpers.len() < wanted {
            let (tx, rx) = mpsc::channel::<Arc<RoundWork>>();
            let metrics = metrics.clone();
            let spawned = std::thread::Builder::new()
                .name("skiff-fsync".into())
                .spawn(move || {
                    while let Ok(work) = rx.recv() {
                        let guard = DoneGuard(work);
                        guard.0.run(&metrics);
                    }
                });
            match spawned {
                Ok(handle) => {
                    self.helpers.push(tx);
                    self.threads.push(handle);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not start an fsync helper thread; fewer fsyncs run in parallel");
                    self.spawn_failed = true;
                }
            }
        }
    }
}

impl Drop for FsyncPool {
    /// The helpers end when their channels close; wait for them.
    fn drop(&mut self) {
        self.helpers.clear();
        for handle in self.threads.drain(..) {
            let _ = handle.join();
        }
    }
}

/// One partition's fsync, timed into `metrics`: the durable end offset or why not.
fn flush_one(partition: &Partition, metrics: &BrokerMetrics) -> Result<i64, String> {
    let started = std::time::Instant::now();
    let flushed = partition.log.flush();
    metrics.record_fsync(FsyncSite::GroupCommit, started.elapsed());
    flushed.map_err(|e| {
        error!(topic = %partition.topic, partition = partition.index, error = %e, "fsync failed");
        e.to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_log::{AppendValidation, Log, LogConfig, Recovery, SystemClock};
    use skiff_records::{BatchBuilder, Compression};

    fn partition(dir: &std::path::Path, index: i32) -> Arc<Partition> {
        let log = Log::open(
            &dir.join(format!("t-{index}")),
            LogConfig::default(),
            Arc::new(SystemClock),
            Recovery::Clean,
        )
        .unwrap();
        Arc::new(Partition::new("t".to_string(), index, log))
    }

    fn append(p: &Partition) -> i64 {
        let mut b = BatchBuilder::new(0, Compression::None);
        b.push(0, None, Some(b"value"), &[]);
        let info = p
            .log
            .append(&b.build().unwrap(), 0, &AppendValidation { now_ms: 0 })
            .unwrap();
        info.last_offset + 1
    }

    /// Rounds over many partitions answer every waiter once its data is synced.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rounds_over_many_partitions_answer_everyone() {
        let dir = tempfile::tempdir().unwrap();
        let partitions: Vec<_> = (0..12).map(|i| partition(dir.path(), i)).collect();
        let durability = Arc::new(Durability::start(Arc::new(BrokerMetrics::default())).unwrap());
        for _round in 0..20 {
            let mut waits = Vec::new();
            for p in &partitions {
                let end = append(p);
                let (d, p) = (durability.clone(), p.clone());
                waits.push(tokio::spawn(async move {
                    d.wait_flushed(p.clone(), end).await.map(|()| (p, end))
                }));
            }
            for w in waits {
                let (p, end) = w.await.unwrap().unwrap();
                assert!(p.log.flushed_offset() >= end);
            }
        }
        durability.stop();
    }

    /// A request's partitions are queued together, so one round syncs them all (awaited one
    /// after another they took a round each).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn partitions_waited_for_together_share_one_round() {
        let dir = tempfile::tempdir().unwrap();
        let partitions: Vec<_> = (0..12).map(|i| partition(dir.path(), i)).collect();
        let metrics = Arc::new(BrokerMetrics::default());
        let durability = Durability::start(metrics.clone()).unwrap();
        let waits: Vec<_> = partitions.iter().map(|p| (p.clone(), append(p))).collect();
        let answers = durability.wait_all_flushed(waits.clone(), None).await;
        assert_eq!(answers, vec![Ok(()); 12]);
        for (p, end) in &waits {
            assert!(p.log.flushed_offset() >= *end);
        }
        assert_eq!(metrics.group_commit_rounds(), 1);
        // Already durable: answered without a round.
        assert_eq!(
            durability.wait_all_flushed(waits, None).await,
            vec![Ok(()); 12]
        );
        assert_eq!(metrics.group_commit_rounds(), 1);
        durability.stop();
    }

    /// A round waits for an append under way to queue its waiter, so both share it; an
    /// append that never queues (its guard still held) delays a round by the bound only.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_round_waits_for_appends_under_way_up_to_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (partition(dir.path(), 0), partition(dir.path(), 1));
        let metrics = Arc::new(BrokerMetrics::default());
        let durability =
            Arc::new(Durability::start_with(metrics.clone(), Duration::from_secs(5)).unwrap());
        let under_way = durability.append_started();
        let first = {
            let (d, a) = (durability.clone(), a.clone());
            let end = append(&a);
            tokio::spawn(async move { d.wait_flushed(a, end).await })
        };
        let queued = || durability.queue.0.lock().unwrap().waiters.len();
        let deadline = Instant::now() + Duration::from_secs(5);
        while queued() == 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(queued(), 1, "the first waiter is queued");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            metrics.group_commit_rounds(),
            0,
            "the round waits for the append"
        );
        let end = append(&b);
        let second = durability
            .wait_all_flushed(vec![(b.clone(), end)], Some(under_way))
            .await;
        assert_eq!(second, vec![Ok(())]);
        assert_eq!(first.await.unwrap(), Ok(()));
        assert_eq!(metrics.group_commit_rounds(), 1);

        let quick =
            Arc::new(Durability::start_with(metrics.clone(), Duration::from_millis(20)).unwrap());
        let _never_queued = quick.append_started();
        let end = append(&a);
        let started = Instant::now();
        assert_eq!(quick.wait_flushed(a.clone(), end).await, Ok(()));
        assert!(started.elapsed() >= Duration::from_millis(20));
        durability.stop();
        quick.stop();
    }

    /// The first round with several partitions starts the helpers; later rounds reuse them,
    /// and every partition of a round is synced.
    #[test]
    fn the_pool_keeps_its_helpers_across_rounds() {
        let dir = tempfile::tempdir().unwrap();
        let partitions: Vec<_> = (0..12).map(|i| partition(dir.path(), i)).collect();
        let metrics = Arc::new(BrokerMetrics::default());
        let mut pool = FsyncPool::default();
        assert_eq!(pool.flush_all(partitions[..1].to_vec(), &metrics).len(), 1);
        assert!(pool.threads.is_empty(), "one partition needs no helper");
        for _ in 0..3 {
            let ends: Vec<i64> = partitions.iter().map(|p| append(p)).collect();
            let results = pool.flush_all(partitions.clone(), &metrics);
            for (r, end) in results.iter().zip(&ends) {
                assert!(*r.as_ref().unwrap() >= *end);
            }
            assert_eq!(pool.threads.len(), MAX_PARALLEL_FSYNCS - 1);
        }
        let first: Vec<_> = pool.threads.iter().map(|t| t.thread().id()).collect();
        pool.flush_all(partitions.clone(), &metrics);
        let again: Vec<_> = pool.threads.iter().map(|t| t.thread().id()).collect();
        assert_eq!(first, again);
    }
}
