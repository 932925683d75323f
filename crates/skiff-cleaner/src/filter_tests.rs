//! Unit tests of the batch filter: retention rules, horizon stamping and expiry, empty batches,
//! byte-identical copies and what a rebuilt batch preserves.

use super::*;
use skiff_records::{records, validate_batch, BatchBuilder, BatchHeader, Compression};

type Rec<'a> = (i32, i64, Option<&'a [u8]>, Option<&'a [u8]>);

fn batch(base: i64, codec: Compression, recs: &[Rec<'_>]) -> Vec<u8> {
    let mut b = BatchBuilder::new(base, codec);
    for (delta, ts, k, v) in recs {
        b.push_at(*delta, *ts, *k, *v, &[(b"h", Some(b"x"))]);
    }
    b.build().unwrap()
}

fn map_of(entries: &[(&[u8], i64)], latest: i64) -> OffsetMap {
    let mut m = OffsetMap::new(1 << 16, 0.9);
    m.clear(-1);
    for (k, o) in entries {
        assert!(m.put(k, *o));
    }
    m.update_latest_offset(latest);
    m
}

/// The producer state's entry for a producer whose last data batch ends at `last`.
fn data_at(last: i64, epoch: i16) -> ProducerLast {
    ProducerLast {
        last_data_offset: Some(last),
        epoch,
    }
}

struct Ctx {
    map: OffsetMap,
    producers: ProducerLastRecords,
    now: i64,
    upper: i64,
    aborted: AbortedRanges,
    hold: Option<crate::consumers::ConsumerHold>,
    collect: bool,
    archived: Option<crate::archive::ArchivedOffsets>,
}

impl Ctx {
    fn new(map: OffsetMap) -> Ctx {
        Ctx {
            map,
            producers: HashMap::new(),
            now: 1_000_000,
            upper: 1_000,
            aborted: AbortedRanges::new(),
            hold: None,
            collect: false,
            archived: None,
        }
    }
    fn run(&self, bytes: &[u8]) -> BatchResult {
        let ctx = self.filter_context();
        let h = validate_batch(bytes).unwrap();
        filter_batch(&h, bytes, &ctx).unwrap()
    }
    fn filter_context(&self) -> FilterContext<'_> {
        FilterContext {
            map: &self.map,
            now_ms: self.now,
            delete_retention_ms: 500,
            upper_bound_offset: self.upper,
            producer_last_offsets: &self.producers,
            max_decompressed_bytes: 1 << 20,
            aborted: &self.aborted,
            consumer_hold: self.hold.as_ref(),
            collect_removed: self.collect,
            already_archived: self.archived.as_ref(),
        }
    }
}

fn rewritten(r: &BatchResult) -> &[u8] {
    match &r.output {
        BatchOutput::Rewritten(b) => b,
        other => panic!("expected a rewritten batch, got {other:?}"),
    }
}

/// (offset, absolute timestamp, key, value) of a record.
type Decoded = (i64, i64, Option<Vec<u8>>, Option<Vec<u8>>);

/// The header and every record of a batch.
fn decode(bytes: &[u8]) -> (BatchHeader, Vec<Decoded>) {
    let h = validate_batch(bytes).unwrap();
    let recs = records(bytes, 1 << 20)
        .unwrap()
        .into_iter()
        .map(|r| {
            (
                h.base_offset + i64::from(r.offset_delta),
                h.base_timestamp + r.timestamp_delta,
                r.key.map(|k| k.to_vec()),
                r.value.map(|v| v.to_vec()),
            )
        })
        .collect();
    (h, recs)
}

#[test]
fn unchanged_batch_is_copied() {
    let b = batch(
        10,
        Compression::None,
        &[
            (0, 5, Some(b"a"), Some(b"1")),
            (1, 6, Some(b"b"), Some(b"2")),
        ],
    );
    let ctx = Ctx::new(map_of(&[(b"a", 10), (b"b", 11)], 11));
    let r = ctx.run(&b);
    assert_eq!(r.output, BatchOutput::Copy);
    assert_eq!((r.records_read, r.records_kept), (2, 2));
}

#[test]
fn superseded_records_removed_offsets_and_fields_kept() {
    let b = batch(
        10,
        Compression::Lz4,
        &[
            (0, 5, Some(b"a"), Some(b"1")),
            (1, 9, Some(b"b"), Some(b"2")),
            (2, 7, Some(b"a"), Some(b"3")),
        ],
    );
    let ctx = Ctx::new(map_of(&[(b"a", 12), (b"b", 11)], 12));
    let r = ctx.run(&b);
    let (h, recs) = decode(rewritten(&r));
    assert_eq!(
        recs,
        vec![
            (11, 9, Some(b"b".to_vec()), Some(b"2".to_vec())),
            (12, 7, Some(b"a".to_vec()), Some(b"3".to_vec()))
        ]
    );
    assert_eq!(h.base_offset, 10);
    assert_eq!(h.last_offset(), 12);
    assert_eq!(h.compression().unwrap(), Compression::Lz4);
    assert_eq!(h.max_timestamp, 9);
    assert!(!h.has_delete_horizon());
    let hdrs = records(rewritten(&r), 1 << 20).unwrap()[0].headers.clone();
    assert_eq!(hdrs[0].0.as_ref(), b"h");
}

#[test]
fn last_offset_kept_when_last_records_removed() {
    let b = batch(
        0,
        Compression::None,
        &[
            (0, 1, Some(b"a"), Some(b"1")),
            (1, 1, Some(b"b"), Some(b"2")),
        ],
    );
    let ctx = Ctx::new(map_of(&[(b"a", 0), (b"b", 50)], 50));
    let (h, recs) = decode(rewritten(&ctx.run(&b)));
    assert_eq!(recs.len(), 1);
    assert_eq!(h.last_offset(), 1);
}

#[test]
fn records_beyond_map_coverage_are_kept() {
    let b = batch(
        10,
        Compression::None,
        &[
            (0, 1, Some(b"a"), Some(b"1")),
            (1, 1, Some(b"a"), Some(b"2")),
        ],
    );
    // The map saw a later "a" at 20 but covers only up to 10 (partial pass).
    let mut m = map_of(&[(b"a", 10)], 10);
    m.update_latest_offset(10);
    let ctx = Ctx::new(m);
    let r = ctx.run(&b);
    assert_eq!(r.output, BatchOutput::Copy);
}

#[test]
fn keys_absent_from_map_are_kept() {
    let b = batch(0, Compression::None, &[(0, 1, Some(b"old"), Some(b"1"))]);
    let ctx = Ctx::new(map_of(&[(b"other", 40)], 40));
    assert_eq!(ctx.run(&b).output, BatchOutput::Copy);
}

#[test]
fn keyless_records_dropped_within_coverage() {
    let b = batch(
        0,
        Compression::None,
        &[(0, 1, None, Some(b"1")), (1, 1, Some(b"k"), Some(b"2"))],
    );
    let ctx = Ctx::new(map_of(&[(b"k", 1)], 1));
    let r = ctx.run(&b);
    assert_eq!(r.keyless_removed, 1);
    assert_eq!(decode(rewritten(&r)).1.len(), 1);
}

#[test]
fn tombstone_gets_horizon_then_expires() {
    let b = batch(
        5,
        Compression::Gzip,
        &[(0, 100, Some(b"a"), Some(b"1")), (1, 123, Some(b"k"), None)],
    );
    let mut ctx = Ctx::new(map_of(&[(b"a", 5), (b"k", 6)], 6));
    let r = ctx.run(&b);
    assert!(r.horizon_stamped);
    assert_eq!(r.horizon_ms, Some(ctx.now + 500));
    let stamped = rewritten(&r).to_vec();
    let (h, recs) = decode(&stamped);
    assert!(h.has_delete_horizon());
    assert_eq!(h.base_timestamp, ctx.now + 500);
    assert_eq!(h.compression().unwrap(), Compression::Gzip);
    // Absolute timestamps survive the new base timestamp (deltas go negative).
    assert_eq!(recs[0].1, 100);
    assert_eq!(recs[1], (6, 123, Some(b"k".to_vec()), None));
    assert_eq!(h.max_timestamp, 123);

    // Before the horizon: kept as is, never restamped.
    ctx.now += 499;
    let r = ctx.run(&stamped);
    assert_eq!(r.output, BatchOutput::Copy);
    assert_eq!(r.horizon_ms, Some(ctx.now + 1));
    assert!(!r.horizon_stamped);

    // At the horizon (T >= horizon): the tombstone goes, the value stays.
    ctx.now += 1;
    let r = ctx.run(&stamped);
    assert_eq!(r.tombstones_removed, 1);
    let (h2, recs2) = decode(rewritten(&r));
    assert_eq!(
        recs2,
        vec![(5, 100, Some(b"a".to_vec()), Some(b"1".to_vec()))]
    );
    assert_eq!(h2.last_offset(), 6);
    assert_eq!(r.horizon_ms, None);
}

#[test]
fn zero_retention_still_needs_two_passes() {
    let b = batch(0, Compression::None, &[(0, 1, Some(b"k"), None)]);
    let mut ctx = Ctx::new(map_of(&[(b"k", 0)], 0));
    ctx.upper = 100;
    let ctx0 = FilterContext {
        map: &ctx.map,
        now_ms: ctx.now,
        delete_retention_ms: 0,
        upper_bound_offset: 100,
        producer_last_offsets: &ctx.producers,
        max_decompressed_bytes: 1 << 20,
        aborted: &ctx.aborted,
        consumer_hold: None,
        collect_removed: false,
        already_archived: None,
    };
    let r = filter_batch(&validate_batch(&b).unwrap(), &b, &ctx0).unwrap();
    let stamped = rewritten(&r).to_vec();
    assert_eq!(decode(&stamped).1.len(), 1, "first pass keeps it");
    ctx.now += 0;
    let ctx1 = FilterContext {
        now_ms: ctx.now,
        ..ctx0
    };
    let r = filter_batch(&validate_batch(&stamped).unwrap(), &stamped, &ctx1).unwrap();
    assert_eq!(r.output, BatchOutput::Dropped, "second pass removes it");
}

#[test]
fn superseded_tombstone_removed_at_once() {
    let b = batch(
        0,
        Compression::None,
        &[(0, 1, Some(b"k"), None), (1, 1, Some(b"x"), Some(b"v"))],
    );
    let ctx = Ctx::new(map_of(&[(b"k", 7), (b"x", 1)], 7));
    let r = ctx.run(&b);
    assert_eq!(r.tombstones_removed, 1);
    assert!(!r.horizon_stamped);
    assert!(!decode(rewritten(&r)).0.has_delete_horizon());
}

#[test]
fn empty_value_is_not_a_tombstone() {
    let b = batch(0, Compression::None, &[(0, 1, Some(b"k"), Some(b""))]);
    let ctx = Ctx::new(map_of(&[(b"k", 0)], 0));
    let r = ctx.run(&b);
    assert_eq!(r.output, BatchOutput::Copy);
    assert_eq!(r.tombstones_kept, 0);
}

#[test]
fn fully_removed_batch_dropped() {
    let b = batch(0, Compression::None, &[(0, 1, Some(b"k"), Some(b"1"))]);
    let ctx = Ctx::new(map_of(&[(b"k", 9)], 9));
    assert_eq!(ctx.run(&b).output, BatchOutput::Dropped);
}

#[test]
fn last_batch_of_round_retained_empty() {
    let b = BatchBuilder::new(7, Compression::Snappy);
    let mut b = b.producer_id(-1);
    b.push_at(0, 42, Some(b"k"), Some(b"1"), &[]);
    b.push_at(2, 43, Some(b"k"), Some(b"2"), &[]);
    let bytes = b.build().unwrap();
    let mut ctx = Ctx::new(map_of(&[(b"k", 20)], 20));
    ctx.upper = 10; // batch covers 7..=9, next offset 10
    let r = ctx.run(&bytes);
    let out = rewritten(&r);
    let h = validate_batch(out).unwrap();
    assert_eq!(out.len(), 61);
    assert_eq!((h.base_offset, h.last_offset(), h.record_count), (7, 9, 0));
    assert_eq!(h.max_timestamp, 43);
    assert_eq!(h.base_timestamp, -1);
    assert_eq!(h.compression().unwrap(), Compression::None);
}

#[test]
fn last_batch_of_producer_retained_empty_with_producer_fields() {
    let mut b = BatchBuilder::new(3, Compression::None)
        .producer_id(77)
        .producer_epoch(4)
        .base_sequence(12)
        .partition_leader_epoch(9);
    b.push(50, Some(b"k"), Some(b"v"), &[]);
    let bytes = b.build().unwrap();
    let mut ctx = Ctx::new(map_of(&[(b"k", 30)], 30));
    ctx.producers.insert(77, data_at(3, 4));
    let h = validate_batch(rewritten(&ctx.run(&bytes))).unwrap();
    assert_eq!(
        (h.producer_id, h.producer_epoch, h.base_sequence),
        (77, 4, 12)
    );
    assert_eq!(h.partition_leader_epoch, 9);
    assert_eq!((h.base_offset, h.last_offset(), h.record_count), (3, 3, 0));
    // Not the producer's last batch any more: dropped.
    ctx.producers.insert(77, data_at(31, 4));
    assert_eq!(ctx.run(&bytes).output, BatchOutput::Dropped);
}

#[test]
fn an_expired_producer_protects_nothing_and_a_marker_only_state_protects_its_epochs_markers() {
    let mut b = BatchBuilder::new(3, Compression::None)
        .producer_id(77)
        .producer_epoch(4)
        .base_sequence(12);
    b.push(50, Some(b"k"), Some(b"v"), &[]);
    let bytes = b.build().unwrap();
    let mut ctx = Ctx::new(map_of(&[(b"k", 30)], 30));
    // Expired (or never known): the superseded batch goes whole.
    assert_eq!(ctx.run(&bytes).output, BatchOutput::Dropped);
    // The state knows only markers of epoch 4 (a bumped epoch forgot the data batches): a
    // data batch is not protected, a marker of epoch 4 is, one of epoch 3 is not.
    let markers_only = ProducerLast {
        last_data_offset: None,
        epoch: 4,
    };
    ctx.producers.insert(77, markers_only);
    assert_eq!(ctx.run(&bytes).output, BatchOutput::Dropped);
    let marker_of = |epoch: i16| {
        let mut m =
            skiff_log::control_batch(77, epoch, 0, skiff_log::ControlType::Commit, 5).unwrap();
        skiff_records::stamp_base_offset(&mut m, 20);
        m
    };
    let ctx_at = |c: &Ctx, m: &[u8], now: i64| {
        let h = validate_batch(m).unwrap();
        let f = FilterContext {
            now_ms: now,
            ..c.filter_context()
        };
        filter_batch_with(&h, m, &f, true).unwrap().output
    };
    // A removable marker first gets a horizon, then, past it, goes or stays empty.
    let stamped = match ctx_at(&ctx, &marker_of(4), 0) {
        BatchOutput::Rewritten(b) => b,
        other => panic!("expected a stamped marker, got {other:?}"),
    };
    let after = ctx.now + 1_000_000;
    let kept = ctx_at(&ctx, &stamped, after);
    let h = validate_batch(rewritten_output(&kept)).unwrap();
    assert_eq!(
        (h.base_offset, h.record_count, h.is_control()),
        (20, 0, true)
    );
    let mut old_epoch = marker_of(3);
    if let BatchOutput::Rewritten(b) = ctx_at(&ctx, &old_epoch, 0) {
        old_epoch = b;
    }
    assert_eq!(ctx_at(&ctx, &old_epoch, after), BatchOutput::Dropped);
    ctx.producers.clear();
    assert_eq!(ctx_at(&ctx, &stamped, after), BatchOutput::Dropped);
}

fn rewritten_output(o: &BatchOutput) -> &[u8] {
    match o {
        BatchOutput::Rewritten(b) => b,
        other => panic!("expected a rewritten batch, got {other:?}"),
    }
}

#[test]
fn rebuilt_batch_keeps_producer_fields_and_log_append_time() {
    let mut b = BatchBuilder::new(0, Compression::Zstd)
        .producer_id(5)
        .producer_epoch(1)
        .base_sequence(0)
        .transactional(true)
        .log_append_time(true);
    b.push(10, Some(b"a"), Some(b"1"), &[]);
    b.push(11, Some(b"a"), Some(b"2"), &[]);
    let mut bytes = b.build().unwrap();
    skiff_records::stamp_log_append_time(&mut bytes, 999);
    let ctx = Ctx::new(map_of(&[(b"a", 1)], 1));
    let h = validate_batch(rewritten(&ctx.run(&bytes))).unwrap();
    assert_eq!(h.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(h.max_timestamp, 999);
    assert!(h.is_transactional());
    assert_eq!(
        (h.producer_id, h.producer_epoch, h.base_sequence),
        (5, 1, 0)
    );
    assert_eq!(h.compression().unwrap(), Compression::Zstd);
}

#[test]
fn control_batches_kept_even_if_key_matches() {
    let mut b = BatchBuilder::new(4, Compression::None)
        .producer_id(1)
        .producer_epoch(0)
        .base_sequence(-1)
        .transactional(true)
        .control(true);
    b.push(1, Some(b"\0\0\0\0"), Some(b"\0\0\0\0\0\0"), &[]);
    let bytes = b.build().unwrap();
    let ctx = Ctx::new(map_of(&[(b"\0\0\0\0", 50)], 50));
    assert_eq!(ctx.run(&bytes).output, BatchOutput::Copy);
}

#[test]
fn collision_keeps_record() {
    fn h(_: &[u8]) -> u128 {
        1
    }
    let mut m = OffsetMap::with_hasher(1 << 16, 0.9, h);
    m.clear(-1);
    m.put(b"a", 0);
    m.put(b"b", 5);
    let b = batch(0, Compression::None, &[(0, 1, Some(b"a"), Some(b"1"))]);
    let ctx = Ctx::new(m);
    assert_eq!(ctx.run(&b).output, BatchOutput::Copy);
}

fn txn_batch(base: i64, pid: i64, recs: &[Rec<'_>]) -> Vec<u8> {
    let mut b = BatchBuilder::new(base, Compression::None)
        .producer_id(pid)
        .producer_epoch(0)
        .base_sequence(0)
        .transactional(true);
    for (delta, ts, k, v) in recs {
        b.push_at(*delta, *ts, *k, *v, &[]);
    }
    b.build().unwrap()
}

#[test]
fn aborted_transactional_data_goes_whatever_its_keys_and_markers_stay() {
    let mut ctx = Ctx::new(map_of(&[(b"a", 10), (b"b", 11)], 20));
    ctx.aborted.insert(7, vec![(10, 12)]);
    // Aborted (pid 7, offsets 10..11 before the marker at 12), latest for its keys: dropped.
    let aborted = txn_batch(
        10,
        7,
        &[
            (0, 5, Some(b"a"), Some(b"1")),
            (1, 5, Some(b"b"), Some(b"2")),
        ],
    );
    let r = ctx.run(&aborted);
    assert_eq!(r.output, BatchOutput::Dropped);
    // The same producer's batch after its marker is committed data: kept.
    let later = txn_batch(13, 7, &[(0, 5, Some(b"c"), Some(b"3"))]);
    assert_eq!(ctx.run(&later).output, BatchOutput::Copy);
    // Another producer at the same offsets is not aborted.
    let other = txn_batch(
        10,
        8,
        &[
            (0, 5, Some(b"a"), Some(b"1")),
            (1, 5, Some(b"b"), Some(b"2")),
        ],
    );
    assert_eq!(ctx.run(&other).output, BatchOutput::Copy);
    // The producer's last batch keeps its header (§2.9).
    ctx.producers.insert(7, data_at(11, 0));
    let r = ctx.run(&aborted);
    let out = rewritten(&r);
    let h = validate_batch(out).unwrap();
    assert_eq!(
        (h.base_offset, h.last_offset(), h.record_count),
        (10, 11, 0)
    );
    // A marker is kept.
    let marker = skiff_log::control_batch(7, 0, 0, skiff_log::ControlType::Abort, 5).unwrap();
    let mut marker = marker;
    skiff_records::stamp_base_offset(&mut marker, 12);
    assert_eq!(ctx.run(&marker).output, BatchOutput::Copy);
}

#[test]
fn a_group_behind_holds_an_expired_tombstone_until_the_bound() {
    let b = batch(5, Compression::None, &[(0, 1, Some(b"k"), None)]);
    let mut ctx = Ctx::new(map_of(&[(b"k", 5)], 5));
    let stamped = rewritten(&ctx.run(&b)).to_vec();
    let horizon = ctx.now + 500;
    ctx.now = horizon;
    ctx.hold = Some(crate::consumers::ConsumerHold {
        max_wait_ms: 1_000,
        committed: Some(vec![("fast".into(), 6), ("slow".into(), 5)]),
    });
    let r = ctx.run(&stamped);
    assert_eq!(r.output, BatchOutput::Copy, "slow has not read offset 5");
    assert_eq!(r.tombstones_kept, 1);
    assert_eq!(r.held.tombstones, 1);
    assert_eq!(r.held.top(), vec![("slow".to_string(), 1)]);
    assert_eq!(r.held_until_ms, Some(horizon + 1_000));

    // slow commits past it: it goes.
    ctx.hold = Some(crate::consumers::ConsumerHold {
        max_wait_ms: 1_000,
        committed: Some(vec![("fast".into(), 6), ("slow".into(), 6)]),
    });
    let r = ctx.run(&stamped);
    assert_eq!(r.tombstones_removed, 1);
    assert_eq!(r.held.tombstones, 0);

    // slow never moves: the bound removes it.
    ctx.hold = Some(crate::consumers::ConsumerHold {
        max_wait_ms: 1_000,
        committed: Some(vec![("slow".into(), 0)]),
    });
    ctx.now = horizon + 1_000;
    let r = ctx.run(&stamped);
    assert_eq!(r.tombstones_removed, 1);
}

#[test]
fn removed_records_are_collected_with_their_reason_and_fields() {
    // k@10 superseded by k@12; t@11 a tombstone past its horizon; x@13 live.
    let b = batch(
        10,
        Compression::Lz4,
        &[
            (0, 5, Some(b"k"), Some(b"a")),
            (1, 6, Some(b"t"), None),
            (2, 7, Some(b"k"), Some(b"c")),
            (3, 8, Some(b"x"), Some(b"d")),
        ],
    );
    let mut ctx = Ctx::new(map_of(&[(b"k", 12), (b"t", 11), (b"x", 13)], 13));
    ctx.collect = true;
    use crate::archive::ArchiveReason::{Superseded, Tombstone};
    let fields = |r: &BatchResult| -> Vec<_> {
        r.removed
            .iter()
            .map(|x| {
                (
                    x.offset,
                    x.timestamp,
                    x.key.as_deref().map(<[u8]>::to_vec),
                    x.value.clone(),
                    x.reason,
                )
            })
            .collect()
    };
    let r = ctx.run(&b);
    let a = Some(bytes::Bytes::from_static(b"a"));
    assert_eq!(
        fields(&r),
        vec![(10, 5, Some(b"k".to_vec()), a, Superseded)]
    );
    assert_eq!(r.removed[0].headers.len(), 1, "original headers kept");
    let stamped = rewritten(&r).to_vec();
    ctx.now += 1_000;
    let r = ctx.run(&stamped);
    assert_eq!(
        fields(&r),
        vec![(11, 6, Some(b"t".to_vec()), None, Tombstone)]
    );
    // Without collection nothing is copied.
    ctx.collect = false;
    assert!(ctx.run(&stamped).removed.is_empty());
}

#[test]
fn records_archived_by_an_interrupted_attempt_go_and_are_not_collected_again() {
    let b = batch(
        0,
        Compression::None,
        &[
            (0, 5, Some(b"k"), Some(b"a")),
            (1, 6, Some(b"x"), Some(b"b")),
            (2, 7, Some(b"k"), Some(b"c")),
        ],
    );
    let mut ctx = Ctx::new(map_of(&[(b"k", 2), (b"x", 1)], 2));
    ctx.collect = true;
    // Offset 1 is the latest of x now, but an earlier attempt archived it: it goes anyway.
    ctx.archived = Some(crate::archive::ArchivedOffsets::from_unsorted(vec![1, 0]));
    let r = ctx.run(&b);
    assert!(r.removed.is_empty());
    assert_eq!(r.records_kept, 1);
    assert_eq!(decode(rewritten(&r)).1.len(), 1);
}

#[test]
fn keyless_records_are_collected_too() {
    let b = batch(0, Compression::None, &[(0, 5, None, Some(b"old"))]);
    let mut ctx = Ctx::new(map_of(&[(b"k", 3)], 3));
    ctx.collect = true;
    let r = ctx.run(&b);
    assert_eq!(r.keyless_removed, 1);
    assert_eq!(r.removed.len(), 1);
    assert_eq!(r.removed[0].key, None);
    assert_eq!(r.removed[0].reason, crate::archive::ArchiveReason::Keyless);
}

/// A map built as a pass builds it (every keyed record put) answers from its superseded
/// bitmap; the filter's decisions are those of a map holding only each key's latest offset,
/// which answers from its table.
#[test]
fn bitmap_answers_decide_as_the_table_does() {
    let recs: [Rec<'_>; 6] = [
        (0, 1, Some(b"a"), Some(b"1")),
        (1, 1, Some(b"b"), Some(b"1")),
        (2, 1, Some(b"a"), Some(b"2")),
        (3, 1, Some(b"c"), None),
        (4, 1, Some(b"b"), None),
        (5, 1, Some(b"c"), Some(b"3")),
    ];
    let b = batch(0, Compression::None, &recs);
    let mut built = OffsetMap::new(1 << 16, 0.9);
    built.clear(-1);
    for (delta, _, key, _) in &recs {
        assert!(built.put(key.unwrap(), i64::from(*delta)));
    }
    assert_eq!(built.superseded(0), Some(true));
    let latest_only = map_of(&[(b"a", 2), (b"b", 4), (b"c", 5)], 5);
    let from_bitmap = Ctx::new(built).run(&b);
    let from_table = Ctx::new(latest_only).run(&b);
    assert_eq!(from_bitmap, from_table);
    let kept: Vec<i64> = decode(rewritten(&from_bitmap))
        .1
        .iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(kept, [2, 4, 5]);
}
