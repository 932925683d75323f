//! History beside state (docs/compaction.md §5.11) over the wire, against the real binary: a
//! compacted topic with `skiff.compaction.archive.topic` set through CreateTopics, written by
//! librdkafka, cleaned in several passes, with the broker killed (-9) while the passes run.
//! Afterwards the archive and the compacted topic together hold every record ever written,
//! each exactly once, the archive in original order per key with its source headers. Kafka
//! has no such config; this is not a §6 scenario.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::compaction_support::*;
use crate::*;
use skiff_e2e::raw::{RawRecord, LATEST};

/// The value of header `name` of an archived record, as text.
fn header<'a>(r: &'a RawRecord, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| k.as_slice() == name.as_bytes())
        .and_then(|(_, v)| v.as_deref())
        .map(|v| std::str::from_utf8(v).unwrap())
}

#[test]
fn archive_holds_exactly_what_compaction_removed_across_kill9() {
    let n = 20_000;
    // One cleaner thread with a small map: the cleaning takes several passes, so the kill
    // lands between or inside them.
    let mut env = Env::start(&[
        ("log.cleaner.threads", "1"),
        ("log.cleaner.dedupe.buffer.size", "262144"),
    ]);
    let archive = skiff_e2e::unique_topic("history");
    let (e, m) = env
        .raw
        .create_topic(&archive, 1, &[("cleanup.policy", "delete")])
        .unwrap();
    assert_eq!(e, 0, "{m:?}");
    // Tombstones are kept for an hour: the cleaned log ends with one record per key, so
    // "done" is easy to see; superseded tombstones still go to the archive.
    let t = env.topic(
        "archived",
        &[
            ("segment.ms", "3600000"),
            ("delete.retention.ms", "3600000"),
            ("skiff.compaction.archive.topic", &archive),
        ],
    );
    let p = rd_producer(&env);
    for round in 1..=3 {
        rd_send_all(
            &p,
            &t,
            (0..n).map(|i| (format!("key-{i:06}"), format!("v{round}"))),
        );
    }
    let mut history = env.read(&t);
    assert_eq!(history.len(), 3 * n, "nothing cleaned before the roll");
    env.hold_rolls(&t, false);
    env.roll(&t);
    history.extend(env.raw.read_all(&t, 0, 3 * n as i64).unwrap());
    assert_eq!(history.len() as i64, env.raw.offset(&t, 0, LATEST).unwrap());
    env.await_records(&t, Duration::from_secs(30), "cleaning started", |r| {
        r.len() < history.len()
    });
    env.broker.kill9().unwrap();
    env.broker.restart().unwrap();
    env.reconnect();
    let keys = n + 1; // + ~roll
    let log = env.await_records(&t, Duration::from_secs(60), "fully cleaned", |r| {
        r.len() == keys
    });

    let archived = env.raw.read_all(&archive, 0, 0).unwrap();
    let by_offset: BTreeMap<i64, &RawRecord> = history.iter().map(|r| (r.offset, r)).collect();
    let mut seen = BTreeSet::new();
    let mut last_per_key: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
    for a in &archived {
        assert_eq!(header(a, "skiff.source.topic"), Some(t.as_str()));
        assert_eq!(header(a, "skiff.source.partition"), Some("0"));
        let source: i64 = header(a, "skiff.source.offset").unwrap().parse().unwrap();
        assert!(seen.insert(source), "offset {source} archived twice");
        let original = by_offset[&source];
        assert_eq!(
            (&a.key, &a.value, a.timestamp),
            (&original.key, &original.value, original.timestamp),
            "archived copy of offset {source} differs"
        );
        let key = a.key.clone().unwrap();
        if let Some(before) = last_per_key.insert(key, source) {
            assert!(before < source, "history of a key out of order");
        }
    }
    for r in &log {
        assert!(
            !seen.contains(&r.offset),
            "offset {} both kept and archived",
            r.offset
        );
        assert_eq!(r, by_offset[&r.offset], "a kept record changed");
    }
    assert_eq!(
        seen.len() + log.len(),
        history.len(),
        "archive + compacted topic = every record written"
    );
}
