//! Black-box compaction acceptance tests (docs/compaction.md §6, scenarios 1–27 and 33–42 that need
//! neither transactions nor idempotent producers), against the real `skiff` binary: produce
//! validation over the raw wire client, what readers see after cleaning (rdkafka consumer and
//! raw fetches), tombstone horizons, compaction lags, dirty ratio, retention, DeleteRecords,
//! live policy changes and kill -9 during cleaning.
//!
//! `sizeOf()` (DescribeLogDirs) is not available yet: where §6 compares sizes, the bytes of the
//! record batches fetched from the log start stand in for it.
//! Layout: scenario groups in `compaction_cases/` (produce, cleaning, tombstones, lifecycle),
//! broker/topic/await helpers in `compaction_support/`, rdkafka helpers and error codes here.
//! Every wait is a bounded poll; fixed sleeps only where §6 asks that something does *not*
//! happen for a while.
#![allow(clippy::unwrap_used)]

mod compaction_cases;
mod compaction_support;

use std::time::Duration;

use compaction_support::Env;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::BaseConsumer;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

pub(crate) const INVALID_RECORD: i16 = 87;
pub(crate) const CORRUPT_MESSAGE: i16 = 2;
pub(crate) const MESSAGE_TOO_LARGE: i16 = 10;
pub(crate) const RECORD_LIST_TOO_LARGE: i16 = 18;
pub(crate) const INVALID_TIMESTAMP: i16 = 32;
pub(crate) const UNSUPPORTED_COMPRESSION_TYPE: i16 = 76;
pub(crate) const OFFSET_OUT_OF_RANGE: i16 = 1;
pub(crate) const POLICY_VIOLATION: i16 = 44;
pub(crate) const INVALID_CONFIG: i16 = 40;

pub(crate) fn rd_producer(env: &Env) -> BaseProducer {
    ClientConfig::new()
        .set("bootstrap.servers", env.broker.bootstrap())
        .set("linger.ms", "5")
        .set("message.timeout.ms", "20000")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .unwrap()
}

pub(crate) fn rd_consumer(env: &Env) -> BaseConsumer {
    ClientConfig::new()
        .set("bootstrap.servers", env.broker.bootstrap())
        .set("group.id", "skiff-e2e-compaction")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "100")
        .create()
        .unwrap()
}

/// Sends every `(key, value)` with an rdkafka BaseProducer and waits until all are delivered.
pub(crate) fn rd_send_all(
    p: &BaseProducer,
    topic: &str,
    kvs: impl Iterator<Item = (String, String)>,
) {
    for (k, v) in kvs {
        let mut rec = BaseRecord::to(topic).partition(0).key(&k).payload(&v);
        loop {
            match p.send(rec) {
                Ok(()) => break,
                Err((e, r)) => {
                    assert!(
                        matches!(
                            e.rdkafka_error_code(),
                            Some(rdkafka::types::RDKafkaErrorCode::QueueFull)
                        ),
                        "enqueue failed: {e}"
                    );
                    rec = r;
                    p.poll(Duration::from_millis(10));
                }
            }
        }
    }
    p.flush(Duration::from_secs(60))
        .expect("all records delivered");
}
