//! The housekeeping thread (`skiff_broker::background`) decides on the broker's clock: with a
//! manual clock, time-based retention happens when the clock has moved past `retention.ms`
//! and the retention check interval, after one real tick of the thread, and not before.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;

use skiff_broker::background::Housekeeper;
use skiff_log::{AppendValidation, Clock};
use skiff_records::{BatchBuilder, Compression};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_retention_follows_the_broker_clock() {
    let dir = tempfile::tempdir().unwrap();
    let clock = common::manual_clock();
    let broker = common::broker(dir.path())
        .sets(&["log.retention.check.interval.ms=1000"])
        .clock(clock.clone())
        .start()
        .await;
    let overrides: BTreeMap<String, String> = [("retention.ms", "60000"), ("segment.ms", "100")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    broker.topics.create("r", 1, overrides, false).unwrap();
    let log = broker
        .topics
        .get("r")
        .unwrap()
        .partition(0)
        .unwrap()
        .log
        .clone();
    let append = |log: &skiff_log::Log| {
        let now = clock.now_ms();
        let mut b = BatchBuilder::new(0, Compression::None);
        b.push(now, Some(b"k"), Some(b"v"), &[]);
        log.append(&b.build().unwrap(), 0, &AppendValidation { now_ms: now })
            .unwrap();
    };
    append(&log);
    clock.advance(101);
    assert!(log.roll_if_due().unwrap());
    append(&log);
    assert_eq!(log.segment_count(), 2);

    let housekeeper = Housekeeper::start(broker.clone()).unwrap();
    // Nothing is due while the clock stands still.
    assert_eq!(log.log_start_offset(), 0);
    // Past the check interval; 60 051 ms after the first record, 59 950 after the second: the
    // next check deletes the first segment only.
    clock.advance(59_950);
    common::wait_until("time retention of the first segment", || {
        log.log_start_offset() == 1
    })
    .await;
    assert_eq!(log.log_end_offset(), 2);
    tokio::task::spawn_blocking(move || housekeeper.stop())
        .await
        .unwrap();
    common::stop(broker).await;
}
