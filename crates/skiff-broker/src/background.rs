//! Periodic storage housekeeping on one named std thread: retention, wall-clock rolls of
//! idle segments, `flush.ms`, recovery-point checkpoints, and expiry of idle producer ids
//! (`producer.id.expiration.ms`).
//!
//! Thread safety: the stop flag is a `Mutex<bool>` + `Condvar` so shutdown interrupts the
//! sleep at once; every log call synchronises itself.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tracing::{info, warn};

use crate::broker::Broker;

/// How often idle active segments are checked for a `segment.ms` roll and `flush.ms`
/// deadlines: fine enough for second-granularity configs, cheap for thousands of logs.
const TICK: Duration = Duration::from_secs(1);
/// Kafka's `producer.id.expiration.check.interval.ms` default: how often idle producer ids
/// are looked for (expiry itself follows `producer.id.expiration.ms`).
const PRODUCER_EXPIRATION_CHECK: Duration = Duration::from_secs(600);
/// Kafka's `log.flush.offset.checkpoint.interval.ms` default.
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(60);

pub struct Housekeeper {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Housekeeper {
    pub fn start(broker: Arc<Broker>) -> std::io::Result<Housekeeper> {
        let stop: Arc<(Mutex<bool>, Condvar)> = Arc::default();
        let for_thread = stop.clone();
        let thread = std::thread::Builder::new()
            .name("skiff-housekeeper".into())
            .spawn(move || run(&broker, &for_thread))?;
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

fn run(broker: &Broker, stop: &(Mutex<bool>, Condvar)) {
    let retention_every = Duration::from_millis(
        u64::try_from(broker.config.log_retention_check_interval_ms).unwrap_or(300_000),
    );
    let mut last_retention = Instant::now();
    let mut last_checkpoint = Instant::now();
    let mut last_producer_expiry = Instant::now();
    let mut last_flush: HashMap<(String, i32), Instant> = HashMap::new();
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
        let retention_due = last_retention.elapsed() >= retention_every;
        let expiry_due = last_producer_expiry.elapsed() >= PRODUCER_EXPIRATION_CHECK;
        for p in &partitions {
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
                let last = last_flush.entry(key).or_insert_with(Instant::now);
                if last.elapsed() >= Duration::from_millis(u64::try_from(flush_ms).unwrap_or(0)) {
                    let started = Instant::now();
                    let flushed = p.log.flush();
                    broker
                        .metrics
                        .record_fsync(crate::metrics::FsyncSite::Scheduled, started.elapsed());
                    if let Err(e) = flushed {
                        warn!(topic = %p.topic, partition = p.index, error = %e, "flush.ms flush failed");
                    }
                    *last = Instant::now();
                }
            }
        }
        if retention_due {
            last_retention = Instant::now();
        }
        if expiry_due {
            last_producer_expiry = Instant::now();
        }
        if last_checkpoint.elapsed() >= CHECKPOINT_INTERVAL {
            if let Err(e) = broker.write_checkpoints() {
                warn!(error = %e, "writing checkpoints failed");
            }
            last_checkpoint = Instant::now();
        }
    }
}
