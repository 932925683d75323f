//! The broker's side of the key indexes (`skiff.key.index.enable`, docs/key-index.md): the
//! shared memory budget (`skiff.key.index.memory.bytes`), switching a partition's index on
//! and off as its topic config says, and one background thread that builds new indexes.
//!
//! Why one builder thread: at start-up every indexed partition needs a full read of its
//! log; doing them one after another on a named thread keeps start-up and the runtime's
//! workers free (lookups answer "loading" until their partition is done) and bounds the
//! extra I/O to one partition's scan at a time.
//!
//! Builds start only once the broker has opened every log (`start_builds`, called at the end
//! of `Broker::start`), so a restart's recovery reads do not share the disk with them.
//!
//! Thread-safety: `sync` may be called from any thread (it takes the queue's std Mutex for a
//! push). The builder thread holds only `Weak` references between steps, so a deleted or
//! closed log is never kept alive by it; it exits when the queue is empty and is started
//! again by the next `sync` that queues work.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use skiff_log::{KeyIndexBudget, Log};
use tracing::{error, warn};

/// Bytes of log one build step reads: small enough that the index's lock is free again
/// within a few milliseconds for appends and lookups waiting on it.
const BUILD_STEP_BYTES: usize = 1 << 20;
/// Pause before retrying a build that failed on I/O or a corrupt batch.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// The budget and the build queue; one per broker (owned by the topic registry).
pub struct KeyIndexes {
    budget: Arc<KeyIndexBudget>,
    queue: Arc<Mutex<Queue>>,
    /// `skiff.key.index.build.bytes.per.second` (0: unlimited).
    rate: u64,
}

struct Queue {
    logs: VecDeque<Weak<Log>>,
    /// A builder thread is running (it drains `logs` before it exits).
    running: bool,
    /// Builds wait until the broker has opened every log ([`KeyIndexes::start_builds`]),
    /// so they never compete with start-up's own reads.
    held: bool,
}

impl KeyIndexes {
    pub fn new(memory_bytes: i64, build_bytes_per_second: i64) -> KeyIndexes {
        KeyIndexes {
            budget: Arc::new(KeyIndexBudget::new(
                u64::try_from(memory_bytes).unwrap_or(0),
            )),
            queue: Arc::new(Mutex::new(Queue {
                logs: VecDeque::new(),
                running: false,
                held: true,
            })),
            rate: u64::try_from(build_bytes_per_second).unwrap_or(0),
        }
    }

    /// The shared budget (for status and tests).
    pub fn budget(&self) -> &Arc<KeyIndexBudget> {
        &self.budget
    }

    /// Makes `log`'s index match its config: enabled on a compacted topic with
    /// `skiff.key.index.enable=true` (a new index is queued for a background build),
    /// otherwise dropped with its memory.
    pub fn sync(&self, log: &Arc<Log>) {
        let config = log.config();
        if config.key_index_enable && config.cleanup_policy.compact {
            if log.enable_key_index(&self.budget) {
                self.queue_build(log);
            }
        } else {
            log.disable_key_index();
        }
    }

    /// Lets queued and future builds run: called once start-up has opened every log.
    pub fn start_builds(&self) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.held = false;
        if !q.logs.is_empty() {
            self.spawn_builder(&mut q);
        }
    }

    fn queue_build(&self, log: &Arc<Log>) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.logs.push_back(Arc::downgrade(log));
        self.spawn_builder(&mut q);
    }

    /// Starts the builder thread unless one runs or builds are held (queue lock held).
    fn spawn_builder(&self, q: &mut Queue) {
        if q.running || q.held {
            return;
        }
        let queue = self.queue.clone();
        let rate = self.rate;
        let spawned = std::thread::Builder::new()
            .name("skiff-keyindex".into())
            .spawn(move || build_queued(&queue, rate));
        match spawned {
            Ok(_) => q.running = true,
            // The index stays Loading and the next sync retries the spawn.
            Err(e) => error!(error = %e, "cannot start the key index builder thread"),
        }
    }
}

/// The builder thread: builds each queued index to the end, then exits. With a `rate`
/// (bytes/s), steps are smaller and spaced so the reads stay at about that rate.
fn build_queued(queue: &Mutex<Queue>, rate: u64) {
    let step = match rate {
        0 => BUILD_STEP_BYTES,
        r => usize::try_from(r / 4)
            .unwrap_or(BUILD_STEP_BYTES)
            .clamp(4096, BUILD_STEP_BYTES),
    };
    let pause = match rate {
        0 => Duration::ZERO,
        r => Duration::from_secs_f64(step as f64 / r as f64),
    };
    loop {
        let next = {
            let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
            match q.logs.pop_front() {
                Some(log) => log,
                None => {
                    q.running = false;
                    return;
                }
            }
        };
        loop {
            let Some(log) = next.upgrade() else { break };
            let started = std::time::Instant::now();
            match log.build_key_index(step) {
                Ok(true) => break,
                Ok(false) => {
                    drop(log);
                    std::thread::sleep(pause.saturating_sub(started.elapsed()));
                }
                Err(e) => {
                    warn!(dir = %log.dir().display(), error = %e,
                        "key index build failed; retrying in 5 s (lookups answer loading)");
                    drop(log);
                    std::thread::sleep(RETRY_AFTER);
                    let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
                    q.logs.push_back(next);
                    break;
                }
            }
        }
    }
}
