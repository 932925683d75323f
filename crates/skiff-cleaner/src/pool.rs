//! The cleaner pool: `log.cleaner.threads` named threads (`skiff-cleaner-N`), each looping:
//! plan every compacted log, pick the most urgent one not in progress (overdue by max lag,
//! then dirtiest, then an expired tombstone horizon), check free disk space, clean it, write
//! the `cleaner-offset-checkpoint`, and otherwise sleep `log.cleaner.backoff.ms` — waking early
//! for the next delete horizon or retry, on [`CleanerPool::wake`] and on stop.
//!
//! Thread-safety: one `Mutex<State>` + `Condvar` guard the per-partition entries and the
//! in-memory checkpoint; a partition is marked in progress under that lock, so it is never
//! cleaned by two threads. Lock order: pool state → a log's own locks (planning reads a
//! `CleanerView`); passes and checkpoint file writes run without the state lock (checkpoint
//! writes are serialized by their own mutex). [`CleanerHandle`] is a cheap clone of the pool's
//! shared state, so callers can abort and wait for a pass without holding any lock of theirs.
//!
//! Partition states (*in progress*, *aborted*, *paused*, *uncleanable*) live in one place,
//! [`crate::states::CleaningStates`], with their legal transitions; the pool only calls them:
//! a pick begins a pass, its end ends it, [`CleanerHandle::abort_and_pause`] /
//! [`CleanerHandle::resume`] hold a partition off (e.g. while its topic is deleted or its
//! config changes), a panic marks it uncleanable (skipped until the topic is deleted or the
//! broker restarts, see [`CompactionStatus::uncleanable`]). A pass that fails with an error
//! (I/O, corruption) is not abandoned: it is retried with exponential back-off and its error
//! kept in the status. A panic never takes a cleaner thread down: it is caught per pass, the
//! pass's `.cleaned` files are deleted as its writer unwinds, and the thread goes on with the
//! other partitions.
//!
//! Memory: `log.cleaner.dedupe.buffer.size` is split once, 1/16 for the segment summaries of
//! every log (one [`SummaryStore`], `summary.rs`) and the rest evenly between the threads'
//! offset maps ([`split_dedupe_buffer`]).
//!
//! Disk: `cleaner-offset-checkpoint` in the log dir (format owned by `skiff-log`), holding the
//! first dirty offset of every compacted partition the source still lists.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use skiff_log::{free_space, CleanerView, Clock, Log, LogDir};

use crate::archive::{resolve_target, ArchiveSink, LogArchive};
use crate::consumers::{ConsumerHold, GroupOffsetsSource};
use crate::offset_map::OffsetMap;
use crate::pass::{run_pass, PassContext, Throttler};
use crate::planner::{choose, plan, urgency, CleanablePlan, Urgency};
use crate::states::{AbortOutcome, CleaningStates};
use crate::status::CompactionStatus;
use crate::summary::SummaryStore;
use crate::tickets::{TicketId, TicketState, Tickets};

#[path = "control.rs"]
mod control;
pub use control::DryRunReport;

/// Share of `log.cleaner.dedupe.buffer.size` that holds segment summaries (`summary.rs`); the
/// threads' offset maps split the rest. 1/16 (8 MiB of the default 128 MiB) summarizes about
/// 2.6 million keys at 16..32 bits each and costs the maps 6% of their keys.
pub const SUMMARY_SHARE_DIVISOR: u64 = 16;

/// Bytes of `dedupe_buffer_size` for summaries, and for each of `threads` offset maps.
pub fn split_dedupe_buffer(dedupe_buffer_size: u64, threads: usize) -> (u64, u64) {
    let summaries = dedupe_buffer_size / SUMMARY_SHARE_DIVISOR;
    let maps = dedupe_buffer_size - summaries;
    (summaries, maps / threads.max(1) as u64)
}

/// Extra free space required beyond the largest output group, for indexes and metadata.
const FREE_SPACE_MARGIN: u64 = 16 << 20;

/// The broker's view of its partitions; the pool asks it for the current logs every loop.
pub trait LogSource: Send + Sync {
    fn logs(&self) -> Vec<(String, i32, Arc<Log>)>;

    /// A pass appended records to this partition (an archive topic's, §5.11) behind the
    /// broker's back: wake its parked fetches.
    fn appended(&self, _topic: &str, _partition: i32) {}
}

/// Broker-level `log.cleaner.*` settings. `Default` = Apache Kafka's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct CleanerConfig {
    /// `log.cleaner.enable`: when false no thread is started.
    pub enable: bool,
    /// `log.cleaner.threads`.
    pub threads: usize,
    /// `log.cleaner.dedupe.buffer.size`: total map memory, split evenly per thread.
    pub dedupe_buffer_size: u64,
    /// `log.cleaner.io.buffer.size`: total I/O buffer memory (per thread: size/threads/2 read).
    pub io_buffer_size: usize,
    /// `log.cleaner.io.buffer.load.factor`: the map's load factor.
    pub io_buffer_load_factor: f64,
    /// `log.cleaner.backoff.ms`: idle sleep.
    pub backoff_ms: u64,
    /// `log.cleaner.io.max.bytes.per.second`: shared read+write throttle.
    pub io_max_bytes_per_second: f64,
}

impl Default for CleanerConfig {
    fn default() -> Self {
        CleanerConfig {
            enable: true,
            threads: 1,
            dedupe_buffer_size: 128 << 20,
            io_buffer_size: 512 << 10,
            io_buffer_load_factor: 0.9,
            backoff_ms: 15_000,
            io_max_bytes_per_second: f64::MAX,
        }
    }
}

type Key = (String, i32);

#[derive(Default)]
struct State {
    /// The last planned status of every compacted partition. Its `in_progress` and
    /// `uncleanable` fields are filled from `cleaning` when read (see [`State::status`]).
    entries: HashMap<Key, CompactionStatus>,
    /// In progress / aborted / paused / uncleanable: the only record of them.
    cleaning: CleaningStates,
    /// First dirty offset per partition, as persisted.
    checkpoints: BTreeMap<Key, i64>,
    stopping: bool,
    /// Bumped by `wake()` so a sleeping thread re-plans at once.
    wakes: u64,
    /// Compact-now requests and their outcomes (`control.rs`).
    tickets: Tickets,
}

struct Shared {
    config: CleanerConfig,
    source: Arc<dyn LogSource>,
    log_dir: Arc<LogDir>,
    clock: Arc<dyn Clock>,
    throttler: Throttler,
    state: Mutex<State>,
    changed: Condvar,
    checkpoint_io: Mutex<()>,
    /// Running cleaner threads (0 when disabled): sizes a dry run's map like a thread's.
    threads: usize,
    /// Committed offsets for `skiff.tombstone.wait.for.consumers`, set by the broker once its
    /// group coordinator exists (`None` until then: held tombstones are all kept).
    groups: Mutex<Option<Arc<dyn GroupOffsetsSource>>>,
    /// Serializes dry runs, so at most one dry-run map exists besides the threads' own.
    dry_runs: Mutex<()>,
    /// Segment summaries of every log, within their share of the dedupe buffer.
    summaries: SummaryStore,
}

impl State {
    /// A partition's status as reported, with the cleaning state filled in.
    fn status(&self, key: &Key) -> Option<CompactionStatus> {
        let mut status = self.entries.get(key)?.clone();
        status.in_progress = self.cleaning.is_cleaning(key);
        status.uncleanable = self.cleaning.uncleanable(key).map(str::to_string);
        Some(status)
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The running cleaner threads. See the module docs.
pub struct CleanerPool {
    handle: CleanerHandle,
    threads: Vec<JoinHandle<()>>,
}

/// Status queries and pause/abort control of a [`CleanerPool`], cloneable and usable from any
/// thread without holding the pool itself (so a caller never has to keep its own lock around
/// the pool while it waits for a pass to stop). After [`CleanerPool::stop`] nothing is in
/// progress any more, so nothing waits.
#[derive(Clone)]
pub struct CleanerHandle {
    shared: Arc<Shared>,
}

/// A log picked for cleaning.
struct Job {
    key: Key,
    log: Arc<Log>,
    view: CleanerView,
    plan: CleanablePlan,
    abort: Arc<AtomicBool>,
    /// The compact-now ticket this pass answers.
    ticket: Option<TicketId>,
    /// Where removed records go first (`skiff.compaction.archive.topic`).
    archive: Option<LogArchive>,
}

impl CleanerPool {
    /// Starts `config.threads` threads (none when disabled). A checkpoint that cannot be read
    /// is logged and treated as empty: the whole log is then reconsidered, which is safe.
    pub fn start(
        config: CleanerConfig,
        source: Arc<dyn LogSource>,
        log_dir: Arc<LogDir>,
        clock: Arc<dyn Clock>,
    ) -> CleanerPool {
        let checkpoints = log_dir.read_cleaner_checkpoint().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "unreadable cleaner checkpoint; cleaning starts over");
            BTreeMap::new()
        });
        let threads = if config.enable { config.threads } else { 0 };
        let (summary_bytes, _) = split_dedupe_buffer(config.dedupe_buffer_size, threads);
        let shared = Arc::new(Shared {
            summaries: SummaryStore::new(summary_bytes),
            throttler: Throttler::new(config.io_max_bytes_per_second),
            config,
            source,
            log_dir,
            clock,
            state: Mutex::new(State {
                checkpoints,
                ..State::default()
            }),
            changed: Condvar::new(),
            checkpoint_io: Mutex::new(()),
            threads,
            groups: Mutex::new(None),
            dry_runs: Mutex::new(()),
        });
        let mut handles = Vec::new();
        for n in 0..threads {
            let s = shared.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("skiff-cleaner-{n}"))
                .spawn(move || thread_main(&s, threads));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => tracing::error!(error = %e, "could not start cleaner thread {n}"),
            }
        }
        CleanerPool {
            handle: CleanerHandle { shared },
            threads: handles,
        }
    }

    /// Number of running cleaner threads.
    pub fn thread_count(&self) -> usize {
        self.threads.len()
    }

    /// A handle on this pool's state, for use without holding the pool.
    pub fn handle(&self) -> CleanerHandle {
        self.handle.clone()
    }

    /// The status of one partition, once the pool has planned it.
    pub fn status(&self, topic: &str, partition: i32) -> Option<CompactionStatus> {
        self.handle.status(topic, partition)
    }

    /// Every known partition's status, sorted by topic and partition.
    pub fn statuses(&self) -> Vec<(String, i32, CompactionStatus)> {
        self.handle.statuses()
    }

    /// Stops a running pass on the partition and returns once it is not in progress; see
    /// [`CleanerHandle::abort_and_pause`] (this is it followed by `resume`).
    pub fn abort_and_wait(&self, topic: &str, partition: i32) {
        self.handle.abort_and_pause(topic, partition);
        self.handle.resume(topic, partition);
    }

    /// Makes idle threads re-plan now (after appends, rolls or config changes).
    pub fn wake(&self) {
        self.handle.wake();
    }

    /// Aborts running passes and joins the threads.
    pub fn stop(self) {
        {
            let shared = &self.handle.shared;
            let mut st = shared.lock();
            st.stopping = true;
            st.cleaning.abort_all();
            shared.changed.notify_all();
        }
        for h in self.threads {
            if h.join().is_err() {
                tracing::error!("a cleaner thread panicked");
            }
        }
    }
}

impl CleanerHandle {
    /// The status of one partition, once the pool has planned it.
    pub fn status(&self, topic: &str, partition: i32) -> Option<CompactionStatus> {
        self.shared.lock().status(&(topic.to_string(), partition))
    }

    /// Every known partition's status, sorted by topic and partition.
    pub fn statuses(&self) -> Vec<(String, i32, CompactionStatus)> {
        let st = self.shared.lock();
        let mut out: Vec<_> = st
            .entries
            .keys()
            .filter_map(|k| Some((k.0.clone(), k.1, st.status(k)?)))
            .collect();
        out.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        out
    }

    /// Kafka's `abortAndPauseCleaning`: stops a running pass on the partition (its `.cleaned`
    /// files are deleted, the checkpoint untouched), returns once it is not in progress, and
    /// keeps the partition from being picked until as many [`CleanerHandle::resume`] (or a
    /// [`CleanerHandle::forget`]). A pass checks its abort flag between batches, so the wait is
    /// short; only the pool's own state lock is taken, and it is released while waiting.
    pub fn abort_and_pause(&self, topic: &str, partition: i32) {
        let key = (topic.to_string(), partition);
        let mut st = self.shared.lock();
        if st.cleaning.abort_and_pause(&key) == AbortOutcome::Paused {
            return;
        }
        while st.cleaning.is_cleaning(&key) {
            st = self
                .shared
                .changed
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Undoes one [`CleanerHandle::abort_and_pause`]. Resuming a partition that is not paused
    /// is a caller's bug: it changes nothing and is logged.
    pub fn resume(&self, topic: &str, partition: i32) {
        let mut st = self.shared.lock();
        if let Err(e) = st.cleaning.resume(&(topic.to_string(), partition)) {
            tracing::warn!(topic, partition, "{e}");
        }
        st.wakes = st.wakes.wrapping_add(1);
        self.shared.changed.notify_all();
    }

    /// Drops what the pool knows about a partition whose log was deleted (pause, status,
    /// uncleanable mark), so a topic re-created under the same name starts afresh. A pass in
    /// progress (on a log created since) is left alone.
    pub fn forget(&self, topic: &str, partition: i32) {
        let mut st = self.shared.lock();
        let key = (topic.to_string(), partition);
        if st.cleaning.forget(&key) {
            st.entries.remove(&key);
        }
    }

    /// Makes idle threads re-plan now (after appends, rolls or config changes).
    pub fn wake(&self) {
        let mut st = self.shared.lock();
        st.wakes = st.wakes.wrapping_add(1);
        self.shared.changed.notify_all();
    }
}

/// The text of a caught panic's payload.
fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

fn thread_main(shared: &Shared, threads: usize) {
    let threads = threads.max(1);
    let (_, map_bytes) = split_dedupe_buffer(shared.config.dedupe_buffer_size, threads);
    let mut map = OffsetMap::new(map_bytes, shared.config.io_buffer_load_factor);
    let io_buffer = (shared.config.io_buffer_size / threads / 2).max(1);
    loop {
        let wakes = {
            let st = shared.lock();
            if st.stopping {
                return;
            }
            st.wakes
        };
        // Planning is guarded per log inside `pick`; this catches a bug anywhere else in it,
        // so the thread lives on (and retries after the idle sleep).
        match catch_unwind(AssertUnwindSafe(|| pick(shared))) {
            Ok(Some(job)) => clean(shared, job, &mut map, io_buffer),
            Ok(None) => idle(shared, wakes),
            Err(payload) => {
                tracing::error!(
                    "the cleaner's planning panicked: {}; retrying after log.cleaner.backoff.ms",
                    panic_message(payload.as_ref())
                );
                idle(shared, wakes);
            }
        }
    }
}

/// Plans every compacted log, refreshes statuses, and marks the most urgent one in progress.
fn pick(shared: &Shared) -> Option<Job> {
    let logs = shared.source.logs();
    let now = shared.clock.now_ms();
    let checkpoints = shared.lock().checkpoints.clone();
    let mut planned = Vec::new();
    let mut panicked = Vec::new();
    let mut archives = HashMap::new();
    for (topic, partition, log) in logs.iter().cloned() {
        let view = log.cleaner_view();
        if !view.config.cleanup_policy.compact || log.is_closed() {
            continue;
        }
        let key = (topic, partition);
        let stored = checkpoints.get(&key).copied();
        let archive = resolve_target(&key.0, key.1, &view.config.archive_topic, &logs)
            .map(|a| a.map(|a| waking(a, shared.source.clone())));
        archives.insert(key.clone(), archive);
        // Never past an undecided transaction (docs/compaction.md §2.8).
        let lso = log.last_stable_offset().min(view.log_end_offset);
        match catch_unwind(AssertUnwindSafe(|| plan(&view, stored, now, lso))) {
            Ok(p) => planned.push((key, log, view, p, stored)),
            Err(payload) => panicked.push((key, panic_message(payload.as_ref()))),
        }
    }

    let mut st = shared.lock();
    let present: Vec<Key> = planned
        .iter()
        .map(|x| x.0.clone())
        .chain(panicked.iter().map(|x| x.0.clone()))
        .collect();
    let State {
        entries, cleaning, ..
    } = &mut *st;
    entries.retain(|k, _| cleaning.is_cleaning(k) || present.contains(k));
    // Summaries of logs that are gone or no longer compacted.
    shared
        .summaries
        .retain_logs(|t, p| present.iter().any(|k| k.0 == t && k.1 == p));
    // An uncleanable mark lasts while its log is listed and compacted, as the entry does.
    cleaning.retain_uncleanable(|k| present.contains(k));
    for key in st.tickets.requested() {
        if !present.contains(&key) {
            st.tickets.finish_queued(
                &key,
                TicketState::Failed("the partition is gone or no longer compacted".into()),
                now,
            );
        }
    }
    for (key, message) in panicked {
        let message = format!("planning panicked: {message}");
        st.tickets
            .finish_queued(&key, TicketState::Failed(message.clone()), now);
        if st.cleaning.mark_uncleanable(&key, message.clone()) {
            tracing::error!(topic = %key.0, partition = key.1,
                "{message}; marking this log uncleanable until the topic is deleted or the \
                 broker restarts");
            st.entries.entry(key).or_default().record_panic(message);
        }
    }
    let mut reset = false;
    let mut candidates = Vec::new();
    for (i, (key, log, view, p, stored)) in planned.iter().enumerate() {
        if stored.is_some() && p.checkpoint_reset {
            st.checkpoints.insert(key.clone(), p.first_dirty_offset);
            reset = true;
        }
        let ratio = view.config.min_cleanable_dirty_ratio;
        if st.cleaning.is_cleaning(key) {
            continue;
        }
        let can_begin = st.cleaning.can_begin(key);
        let requested = st.tickets.is_requested(key);
        if requested && !view.segments.iter().any(|s| !s.is_active) {
            st.tickets
                .finish_queued(key, TicketState::NothingToClean, now);
        }
        let requested = st.tickets.is_requested(key);
        if let (true, Some(why)) = (requested, st.cleaning.uncleanable(key)) {
            let why = format!("the partition is uncleanable: {why}");
            st.tickets.finish_queued(key, TicketState::Failed(why), now);
        }
        let status = st.entries.entry(key.clone()).or_default();
        status.apply_plan(p, ratio);
        status.archive_blocked = archives.get(key).and_then(|a| a.as_ref().err().cloned());
        if !can_begin {
            // Paused or uncleanable.
            status.waiting_for = None;
            continue;
        }
        // A requested pass does not wait for a failure's back-off either.
        if !requested && status.retry_at_ms.is_some_and(|t| t > now) {
            continue;
        }
        let u = if requested {
            Some(Urgency::Requested)
        } else {
            urgency(p, ratio, now, status.next_delete_horizon_ms)
        };
        let Some(u) = u else {
            status.waiting_for = None;
            continue;
        };
        match room_for(log, view, p) {
            Ok(()) => status.waiting_for = None,
            Err(why) => {
                status.waiting_for = Some(why);
                continue;
            }
        }
        // With an archive topic, nothing may be removed unless it can be archived first.
        if let Some(why) = status.archive_blocked.clone() {
            if requested {
                st.tickets
                    .finish_queued(key, TicketState::Failed(why.clone()), now);
            }
            continue;
        }
        candidates.push((i, u));
    }
    let urgencies: Vec<Urgency> = candidates.iter().map(|c| c.1).collect();
    let job = choose(&urgencies).and_then(|c| {
        let (key, log, view, p, _) = planned.get(candidates[c].0)?;
        // Only idle partitions are candidates, all under this same lock: this cannot fail.
        let abort = st.cleaning.begin_pass(key).ok()?;
        let ticket = st.tickets.start(key);
        let archive = archives.remove(key).and_then(|a| a.ok()).flatten();
        Some(Job {
            key: key.clone(),
            log: log.clone(),
            view: view.clone(),
            plan: p.clone(),
            abort,
            ticket,
            archive,
        })
    });
    drop(st);
    if reset {
        persist_checkpoints(shared);
    }
    job
}

/// Makes each fsync of the archive wake the fetches parked on its partition.
fn waking(mut a: LogArchive, source: Arc<dyn LogSource>) -> LogArchive {
    let (topic, partition) = (a.topic.clone(), a.partition);
    a.on_sync = Some(Arc::new(move || source.appended(&topic, partition)));
    a
}

/// Free disk space for the largest output group (≤ segment.bytes) plus a margin.
fn room_for(log: &Log, view: &CleanerView, p: &CleanablePlan) -> Result<(), String> {
    let below: u64 = view
        .segments
        .iter()
        .filter(|s| !s.is_active && s.base_offset < p.first_uncleanable_offset)
        .map(|s| s.size)
        .sum();
    let need = below
        .min(u64::try_from(view.config.segment_bytes).unwrap_or(u64::MAX))
        .saturating_add(FREE_SPACE_MARGIN);
    match free_space(log.dir()) {
        Ok(have) if have >= need => Ok(()),
        Ok(have) => Err(format!(
            "free disk space: {have} bytes available, a pass needs {need}"
        )),
        Err(e) => Err(format!("free disk space unknown: {e}")),
    }
}

fn clean(shared: &Shared, job: Job, map: &mut OffsetMap, io_buffer: usize) {
    let now = shared.clock.now_ms();
    let hold = consumer_hold(shared, &job.key, &job.view);
    let ctx = PassContext {
        topic: &job.key.0,
        partition: job.key.1,
        now_ms: now,
        io_buffer_size: io_buffer,
        abort: &job.abort,
        throttler: &shared.throttler,
        consumer_hold: hold.as_ref(),
        archive: job.archive.as_ref().map(|a| a as &dyn ArchiveSink),
        summaries: Some(&shared.summaries),
    };
    // A panic is caught here, per pass: the partition is marked uncleanable below and this
    // thread goes on with the others. Unwinding drops the pass's cleaned-segment writer,
    // which deletes its `.cleaned` files; the log itself only changes in the atomic swap. The
    // map is cleared at the start of every pass, so a half-filled one is harmless.
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        #[cfg(any(test, feature = "fault-injection"))]
        crate::fault::before_pass(&job.key.0);
        run_pass(&job.log, &job.view, &job.plan, map, &ctx)
    }));
    let end = shared.clock.now_ms();
    let result = match outcome {
        Ok(result) => result,
        Err(payload) => {
            let message = format!(
                "cleaning pass panicked: {}",
                panic_message(payload.as_ref())
            );
            tracing::error!(topic = %job.key.0, partition = job.key.1,
                "{message}; marking the partition uncleanable until the topic is deleted or \
                 the broker restarts");
            let mut st = shared.lock();
            if let Some(id) = job.ticket {
                st.tickets
                    .finish(id, TicketState::Failed(message.clone()), end);
            }
            st.cleaning.mark_uncleanable(&job.key, message.clone());
            st.entries
                .entry(job.key.clone())
                .or_default()
                .record_panic(message);
            end_pass(shared, &mut st, &job.key);
            return;
        }
    };
    match &result {
        Ok(stats) => {
            // The checkpoint is on disk before the pass is reported done.
            shared
                .lock()
                .checkpoints
                .insert(job.key.clone(), stats.end_offset);
            persist_checkpoints(shared);
        }
        Err(e) if e.is_interruption() => {
            tracing::info!(topic = %job.key.0, partition = job.key.1, "cleaning interrupted: {e}");
        }
        Err(e) => {
            tracing::warn!(topic = %job.key.0, partition = job.key.1, error = %e,
                "cleaning failed; will retry with back-off");
        }
    }
    let backoff = shared.config.backoff_ms;
    let mut st = shared.lock();
    let status = st.entries.entry(job.key.clone()).or_default();
    match &result {
        Ok(stats) => status.record_pass(stats, end),
        Err(e) if e.is_interruption() => status.last_error = Some(e.to_string()),
        Err(e) => status.record_failure(e.to_string(), end, backoff),
    }
    if let Some(id) = job.ticket {
        let outcome = match result {
            Ok(stats) => TicketState::Done(Box::new(stats)),
            Err(e) => TicketState::Failed(e.to_string()),
        };
        st.tickets.finish(id, outcome, end);
    }
    end_pass(shared, &mut st, &job.key);
}

/// The consumer rule of a pass on a topic with `skiff.tombstone.wait.for.consumers=true`.
fn consumer_hold(shared: &Shared, key: &Key, view: &CleanerView) -> Option<ConsumerHold> {
    if !view.config.tombstone_wait_for_consumers {
        return None;
    }
    let source = shared
        .groups
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    Some(ConsumerHold {
        max_wait_ms: view.config.tombstone_wait_max_ms,
        committed: source.and_then(|g| g.committed(&key.0, key.1)),
    })
}

/// Ends the pass's state (an aborted one becomes paused) and wakes the callers waiting on it.
fn end_pass(shared: &Shared, st: &mut State, key: &Key) {
    if let Err(e) = st.cleaning.end_pass(key) {
        // Only `pick` begins passes and only the pass's own thread ends it.
        tracing::error!(topic = %key.0, partition = key.1, "{e}");
    }
    shared.changed.notify_all();
}

/// Writes the checkpoint of every partition the source still lists.
fn persist_checkpoints(shared: &Shared) {
    let _io = shared
        .checkpoint_io
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let present: Vec<Key> = shared
        .source
        .logs()
        .into_iter()
        .map(|(t, p, _)| (t, p))
        .collect();
    let entries: BTreeMap<Key, i64> = {
        let mut st = shared.lock();
        st.checkpoints.retain(|k, _| present.contains(k));
        st.checkpoints.clone()
    };
    if let Err(e) = shared.log_dir.write_cleaner_checkpoint(&entries) {
        tracing::warn!(error = %e, "could not write the cleaner checkpoint");
    }
}

/// Sleeps `log.cleaner.backoff.ms`, or less when a horizon or retry falls due sooner.
fn idle(shared: &Shared, wakes: u64) {
    let now = shared.clock.now_ms();
    let st = shared.lock();
    let mut wait_ms = shared.config.backoff_ms;
    for e in st.entries.values() {
        for due in [e.next_delete_horizon_ms, e.retry_at_ms]
            .into_iter()
            .flatten()
        {
            // Already due: the log was planned and not picked (e.g. waiting for disk space).
            if due > now {
                let until = u64::try_from(due - now).unwrap_or(u64::MAX);
                wait_ms = wait_ms.min(until);
            }
        }
    }
    if st.stopping || st.wakes != wakes {
        return;
    }
    let _unused = shared
        .changed
        .wait_timeout_while(st, Duration::from_millis(wait_ms), |s| {
            !s.stopping && s.wakes == wakes
        })
        .unwrap_or_else(PoisonError::into_inner);
}
