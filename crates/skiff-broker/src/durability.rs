//! Group commit: `acks=all` produce responses wait here until their data is fsynced.
//!
//! One flusher thread owns every round. Waiters queue `(partition, offset)`; each round the
//! thread takes the whole queue, flushes each distinct partition once, and answers everyone
//! it covered. While a round runs, new waiters gather for the next one, so one fsync serves
//! all requests that arrived meanwhile, across partitions and connections.
//!
//! A round with several partitions fsyncs them in parallel (up to [`MAX_PARALLEL_FSYNCS`]
//! threads for the round): a filesystem such as ext4 or xfs folds concurrent fsyncs into one
//! journal commit, where fsyncing partition after partition waits for a commit each, which
//! made acks=all on 12 partitions slower than on one.
//!
//! Thread safety: the queue is a std `Mutex` + `Condvar`; nothing is held across `.await`
//! (waiters await a oneshot channel).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex};

use tokio::sync::oneshot;
use tracing::error;

use crate::metrics::{BrokerMetrics, FsyncSite};
use crate::partition::Partition;

type Waiter = (Arc<Partition>, i64, oneshot::Sender<Result<(), String>>);

/// Most fsyncs one round runs at once. More threads than this wait on the same journal
/// commit and only add scheduling on a small machine.
const MAX_PARALLEL_FSYNCS: usize = 8;

#[derive(Default)]
struct Queue {
    waiters: Vec<Waiter>,
    stopping: bool,
}

pub struct Durability {
    queue: Arc<(Mutex<Queue>, Condvar)>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Durability {
    /// Starts the flusher thread; every fsync it runs is timed into `metrics`.
    pub fn start(metrics: Arc<BrokerMetrics>) -> std::io::Result<Self> {
        let queue: Arc<(Mutex<Queue>, Condvar)> = Arc::default();
        let for_thread = queue.clone();
        let thread = std::thread::Builder::new()
            .name("skiff-flusher".into())
            .spawn(move || flusher_loop(&for_thread, &metrics))?;
        Ok(Durability {
            queue,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Resolves once everything below `end_offset` in `partition` is on disk.
    pub async fn wait_flushed(
        &self,
        partition: Arc<Partition>,
        end_offset: i64,
    ) -> Result<(), String> {
        if partition.log.flushed_offset() >= end_offset {
            return Ok(());
        }
        let (tx, rx) = oneshot::channel();
        {
            let (lock, cvar) = &*self.queue;
            let mut queue = lock.lock().unwrap_or_else(|e| e.into_inner());
            if queue.stopping {
                return Err("broker is shutting down".into());
            }
            queue.waiters.push((partition, end_offset, tx));
            cvar.notify_one();
        }
        rx.await.unwrap_or_else(|_| Err("flusher stopped".into()))
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

fn flusher_loop(queue: &(Mutex<Queue>, Condvar), metrics: &BrokerMetrics) {
    let (lock, cvar) = queue;
    loop {
        let batch = {
            let mut q = lock.lock().unwrap_or_else(|e| e.into_inner());
            while q.waiters.is_empty() && !q.stopping {
                q = cvar.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            if q.waiters.is_empty() && q.stopping {
                return;
            }
            std::mem::take(&mut q.waiters)
        };
        flush_round(batch, metrics);
    }
}

/// Flush each distinct partition once and answer every waiter of this round.
fn flush_round(batch: Vec<Waiter>, metrics: &BrokerMetrics) {
    let mut distinct: Vec<&Arc<Partition>> = Vec::new();
    let mut seen = HashSet::new();
    for (partition, _, _) in &batch {
        if seen.insert(Arc::as_ptr(partition)) {
            distinct.push(partition);
        }
    }
    let results: HashMap<*const Partition, Result<i64, String>> = distinct
        .iter()
        .map(|p| Arc::as_ptr(p))
        .zip(flush_all(&distinct, metrics))
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

/// Fsyncs every partition of `distinct` (results in the same order): on this thread when
/// there is one, else spread over up to [`MAX_PARALLEL_FSYNCS`] threads, this one included.
fn flush_all(distinct: &[&Arc<Partition>], metrics: &BrokerMetrics) -> Vec<Result<i64, String>> {
    let threads = distinct.len().min(MAX_PARALLEL_FSYNCS);
    skiff_log::parallel::map_in_parallel(distinct, threads, "skiff-fsync", |p| {
        flush_one(p, metrics)
    })
    .into_iter()
    .map(|r| r.unwrap_or_else(|| Err("the fsync thread panicked".into())))
    .collect()
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
