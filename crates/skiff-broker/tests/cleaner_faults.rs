//! A bug (a panic) inside a cleaning pass is contained (issue 12, item 7): the partition is
//! marked uncleanable (visible in its status and in /metrics), the other partitions are still
//! cleaned, and DeleteTopics of that topic, /metrics and shutdown all finish. Every wait is
//! bounded so that a regression fails instead of hanging. The broker runs on a manual clock:
//! `segment.ms` rolls and retry back-offs are reached by moving it, not by sleeping.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::{ApiKey, DeleteTopicsRequest, RequestKind, ResponseKind, TopicName};
use kafka_protocol::protocol::StrBytes;
use skiff_broker::Broker;
use skiff_cleaner::CompactionStatus;
use skiff_log::{AppendValidation, Clock, ManualClock};
use skiff_records::{BatchBuilder, Compression};

/// How long any one step may take before the test calls it a hang.
const BOUND: Duration = Duration::from_secs(20);

fn compacted() -> BTreeMap<String, String> {
    [("cleanup.policy", "compact"), ("segment.ms", "100")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A compacted one-partition topic with 50 records over 5 keys in a sealed segment (rolled by
/// `segment.ms` once the clock has moved past it).
fn filled_topic(broker: &Broker, clock: &ManualClock, name: &str) {
    broker.topics.create(name, 1, compacted(), false).unwrap();
    let log = broker
        .topics
        .get(name)
        .unwrap()
        .partition(0)
        .unwrap()
        .log
        .clone();
    let now = clock.now_ms();
    for i in 0..50 {
        let mut b = BatchBuilder::new(0, Compression::None);
        b.push(now, Some(format!("k{}", i % 5).as_bytes()), Some(b"v"), &[]);
        log.append(&b.build().unwrap(), 0, &AppendValidation { now_ms: now })
            .unwrap();
    }
    assert!(
        !log.roll_if_due().unwrap(),
        "{name}: rolled before segment.ms"
    );
    clock.advance(101);
    assert!(
        log.roll_if_due().unwrap(),
        "{name}: segment.ms roll not due"
    );
}

/// Polls the cleaner's status of `topic`-0 until `done` holds.
async fn wait_for(
    broker: &Arc<Broker>,
    topic: &str,
    what: &str,
    done: impl Fn(&CompactionStatus) -> bool,
) -> CompactionStatus {
    let deadline = Instant::now() + BOUND;
    loop {
        if let Some(s) = broker.compaction_status(topic, 0).filter(|s| done(s)) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "{topic}: {what} not reached within {BOUND:?}: {:?}",
            broker.compaction_statuses()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_pass_marks_the_partition_uncleanable_and_wedges_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = common::manual_clock();
    // One thread: without containment the panic would kill the only cleaner thread.
    let broker = common::broker(dir.path())
        .sets(&["log.cleaner.threads=1", "log.cleaner.backoff.ms=50"])
        .clock(clock.clone())
        .start()
        .await;
    let (faulty, healthy) = ("faults-panicking", "faults-healthy");
    skiff_cleaner::fault::panic_passes_of(faulty);
    filled_topic(&broker, &clock, faulty);
    filled_topic(&broker, &clock, healthy);

    let failed = wait_for(&broker, faulty, "marked uncleanable", |s| {
        s.uncleanable.is_some() && !s.in_progress
    })
    .await;
    let message = failed.uncleanable.unwrap();
    assert!(message.contains("injected fault"), "{message}");
    assert_eq!(failed.totals.failures, 1);
    assert_eq!(failed.last_pass, None);
    // The other partition is still cleaned, by the same (surviving) thread.
    let cleaned = wait_for(&broker, healthy, "cleaned", |s| s.last_pass.is_some()).await;
    assert_eq!(cleaned.last_error, None);
    // Skipped, not retried: the failure count stays at one over many back-off periods. The
    // clock moves past the longest retry delay (5 min), so a failure that were only retried
    // with back-off would be due; the cleaner thread's rounds (every 50 ms) are real time.
    clock.advance(300_001);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let still = broker.compaction_status(faulty, 0).unwrap();
    assert_eq!((still.totals.failures, still.in_progress), (1, false));

    let b = broker.clone();
    let metrics = tokio::time::timeout(
        BOUND,
        tokio::task::spawn_blocking(move || skiff_broker::metrics::render::render(&b)),
    )
    .await
    .expect("/metrics hangs")
    .unwrap();
    for line in [
        format!(
            "skiff_compaction_uncleanable{{topic=\"{faulty}\",partition=\"0\",reason=\"marked_uncleanable\"}} 1"
        ),
        format!("skiff_compaction_failures_total{{topic=\"{faulty}\",partition=\"0\"}} 1"),
        "skiff_log_cleaner_uncleanable_partitions 1".to_string(),
    ] {
        assert!(metrics.lines().any(|l| l == line), "missing {line} in\n{metrics}");
    }

    let body = RequestKind::DeleteTopics(
        DeleteTopicsRequest::default()
            .with_topic_names(vec![TopicName(StrBytes::from_static_str(faulty))]),
    );
    let ResponseKind::DeleteTopics(r) =
        tokio::time::timeout(BOUND, common::call(&broker, ApiKey::DeleteTopics, 5, body))
            .await
            .expect("DeleteTopics of the failed topic hangs")
    else {
        panic!("not a DeleteTopics response")
    };
    assert_eq!(r.responses[0].error_code, 0);
    assert!(broker.topics.get(faulty).is_none());

    // A topic re-created under the name starts afresh and is cleaned.
    skiff_cleaner::fault::stop_panicking(faulty);
    filled_topic(&broker, &clock, faulty);
    let again = wait_for(&broker, faulty, "cleaned after re-creation", |s| {
        s.last_pass.is_some()
    })
    .await;
    assert_eq!((again.uncleanable, again.totals.failures), (None, 0));

    let b = broker.clone();
    tokio::time::timeout(BOUND, tokio::task::spawn_blocking(move || b.shutdown()))
        .await
        .expect("shutdown hangs")
        .unwrap()
        .unwrap();
}
