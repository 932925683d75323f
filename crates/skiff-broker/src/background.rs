//! Periodic storage housekeeping on one named std thread: retention, wall-clock rolls of
//! idle segments, `flush.ms`, the first flush of data that crash recovery validated without
//! syncing, recovery-point checkpoints, expiry of idle producer ids
//! (`producer.id.expiration.ms`), and the upkeep of `__share_group_state` (cold-partition
//! snapshots and pruning, `share/upkeep.rs`). The share state jobs run here rather than on the
//! share lock-expiry task: they block, they must also run after a restart before any share
//! fetch, and this thread is joined before the logs are closed at shutdown.
//!
//! Time: the thread wakes every [`TICK`] of real time, but what is due (the retention check
//! interval, `flush.ms`, the checkpoint, producer-expiry and share state intervals) is
//! measured on the broker's clock ([`crate::builder::BrokerBuilder::clock`]), so a test with a
//! manual clock moves time and waits one tick. A clock that goes backwards restarts the
//! intervals.
//!
//! Thread safety: the stop flag is a `Mutex<bool>` + `Condvar` so shutdown interrupts the
//! sleep at once; every log call synchronises itself.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tracing::{info, warn};

use crate::broker::Broker;

/// How often (real time) idle active segments are checked for a `segment.ms` roll and `flush.ms`
/// deadlines: fine enough for second-granularity configs, cheap for thousands of logs.
const TICK: Duration = Duration::from_secs(1);
/// Kafka's `producer.id.expiration.check.interval.ms` default: how often idle producer ids
/// are looked for (expiry itself follows `producer.id.expiration.ms`).
const PRODUCER_EXPIRATION_CHECK_MS: i64 = 600_000;
/// Kafka's `log.flush.offset.checkpoint.interval.ms` default.
const CHECKPOINT_INTERVAL_MS: i64 = 60_000;

pub struct Housekeeper {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Housekeeper {
    pub fn start(broker: Arc<Broker>) -> std::io::Result<Housekeeper> {
        let stop: Arc<(Mutex<bool>, Condvar)> = Arc::default();
        let for_thread = stop.clone();
        // The intervals start now, not whenever the thread gets to run.
        let started_ms = broker.clock.now_ms();
        let thread = std::thread::Builder::new()
            .name("skiff-housekeeper".into())
            .spawn(move || run(&broker, &for_thread, started_ms))?;
        Ok(Housekeeper {
            stop,
            thread: Some(thread),
        })
    }

    pub fn stop(mut self) {
        {
            let (lock, cvar) = &*self.stop;
            *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
            cvar.notify_all();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(broker: &Broker, stop: &(Mutex<bool>, Condvar), start: i64) {
    let retention_every = match broker.config.log_retention_check_interval_ms {
        ms if ms < 0 => 300_000,
        ms => ms,
    };
    let clock = &broker.clock;
    let mut last_retention = start;
    let mut last_checkpoint = start;
    let mut last_producer_expiry = start;
    let mut share_state = ShareStateJobs::new(broker, start);
    let mut last_flush: HashMap<(String, i32), i64> = HashMap::new();
    loop {
        {
            let (lock, cvar) = stop;
            let stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
            let (stopped, _) = cvar
                .wait_timeout_while(stopped, TICK, |s| !*s)
                .unwrap_or_else(|e| e.into_inner());
            if *stopped {
                return;
            }
        }
        let partitions = broker.topics.all_partitions();
        let now = clock.now_ms();
        let retention_due = due(&mut last_retention, now, retention_every);
        let expiry_due = due(&mut last_producer_expiry, now, PRODUCER_EXPIRATION_CHECK_MS);
        for p in &partitions {
            if p.log.take_recovered_unsynced() {
                // Crash recovery left validated data unsynced to serve sooner; make it durable
                // now, off the path to the first request.
                scheduled_flush(broker, p, "flushing data recovered after a crash failed");
            }
            if let Err(e) = p.log.roll_if_due() {
                warn!(topic = %p.topic, partition = p.index, error = %e, "time-based roll failed");
            }
            if expiry_due {
                p.log
                    .remove_expired_producers(broker.live_config().producer_id_expiration_ms);
            }
            if retention_due {
                match p.log.apply_retention() {
                    Ok(outcome) => {
                        if outcome.deleted_segments > 0 {
                            info!(
                                topic = %p.topic,
                                partition = p.index,
                                segments = outcome.deleted_segments,
                                log_start_offset = p.log.log_start_offset(),
                                "retention deleted segments"
                            );
                        }
                    }
                    Err(e) => {
                        warn!(topic = %p.topic, partition = p.index, error = %e, "retention failed")
                    }
                }
            }
            let flush_ms = p.log.config().flush_ms;
            if flush_ms != i64::MAX && p.log.flushed_offset() < p.log.log_end_offset() {
                let key = (p.topic.clone(), p.index);
                let last = last_flush.entry(key).or_insert(now);
                if due(last, now, flush_ms) {
                    scheduled_flush(broker, p, "flush.ms flush failed");
                    *last = clock.now_ms();
                }
            }
        }
        if retention_due {
            last_retention = clock.now_ms();
        }
        if expiry_due {
            last_producer_expiry = clock.now_ms();
        }
        share_state.run_due(broker);
        if due(&mut last_checkpoint, clock.now_ms(), CHECKPOINT_INTERVAL_MS) {
            if let Err(e) = broker.write_checkpoints() {
                warn!(error = %e, "writing checkpoints failed");
            }
            last_checkpoint = clock.now_ms();
        }
    }
}

/// When the `__share_group_state` jobs last ran, and how often they run.
pub(crate) struct ShareStateJobs {
    cold_every: i64,
    prune_every: i64,
    last_cold: i64,
    last_prune: i64,
}

impl ShareStateJobs {
    pub(crate) fn new(broker: &Broker, start: i64) -> ShareStateJobs {
        ShareStateJobs {
            cold_every: broker
                .config
                .share_coordinator_cold_partition_snapshot_interval_ms,
            prune_every: broker
                .config
                .share_coordinator_state_topic_prune_interval_ms,
            last_cold: start,
            last_prune: start,
        }
    }

    /// Cold snapshots first, so a prune due at the same time already deletes what they made
    /// redundant.
    pub(crate) fn run_due(&mut self, broker: &Broker) {
        if due(&mut self.last_cold, broker.clock.now_ms(), self.cold_every) {
            broker.share.snapshot_cold_partitions();
            self.last_cold = broker.clock.now_ms();
        }
        if due(
            &mut self.last_prune,
            broker.clock.now_ms(),
            self.prune_every,
        ) {
            broker.share.prune_state();
            self.last_prune = broker.clock.now_ms();
        }
    }
}

/// Flushes `p` off the request path, counting the time as a scheduled fsync; a failure is
/// logged with `failure` (the log has taken itself offline).
fn scheduled_flush(broker: &Broker, p: &crate::partition::Partition, failure: &str) {
    let started = Instant::now();
    let flushed = p.log.flush();
    broker
        .metrics
        .record_fsync(crate::metrics::FsyncSite::Scheduled, started.elapsed());
    if let Err(e) = flushed {
        warn!(topic = %p.topic, partition = p.index, error = %e, "{failure}");
    }
}

/// True when `every` ms have passed since `*last` at `now`. A clock that went backwards
/// (wall-clock change) restarts the interval from `now` instead of stalling it.
fn due(last: &mut i64, now: i64, every: i64) -> bool {
    if now < *last {
        *last = now;
    }
    now.saturating_sub(*last) >= every
}

#[cfg(test)]
mod tests {
    use super::due;

    #[test]
    fn due_after_the_interval_and_restarted_when_the_clock_goes_back() {
        let mut last = 1_000;
        assert!(!due(&mut last, 1_999, 1_000));
        assert!(due(&mut last, 2_000, 1_000));
        assert!(!due(&mut last, 500, 1_000), "back in time");
        assert_eq!(last, 500);
        assert!(due(&mut last, 1_500, 1_000));
        assert!(due(&mut last, 1_500, 0));
    }
}
