//! Reads that leave batches in their segment files (`read_in_place`, for sendfile) return
//! exactly the batches the copying read returns, for every start, budget and isolation.

use super::*;
use std::os::unix::fs::FileExt;

/// A batch of `n` records of `value_len` bytes each, transactional for `pid` when given.
fn big_batch(n: usize, value_len: usize, txn_pid: Option<i64>) -> Vec<u8> {
    let mut b = BatchBuilder::new(0, Compression::None);
    if let Some(pid) = txn_pid {
        b = b
            .producer_id(pid)
            .producer_epoch(0)
            .base_sequence(0)
            .transactional(true);
    }
    let value = vec![b'x'; value_len];
    for i in 0..n {
        let key = format!("k{i}");
        b.push(T0, Some(key.as_bytes()), Some(&value), &[]);
    }
    b.build().unwrap()
}

fn concat(files: &crate::FileRecords) -> Vec<u8> {
    let mut out = Vec::new();
    for r in &files.ranges {
        let mut buf = vec![0u8; r.len];
        r.file.read_exact_at(&mut buf, r.pos).unwrap();
        out.extend_from_slice(&buf);
    }
    assert_eq!(out.len(), files.len);
    out
}

#[test]
fn in_place_reads_hold_the_same_batches_as_copying_reads() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let cfg = LogConfig {
        segment_bytes: 60_000,
        ..config()
    };
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    // Large batches (in place), small ones (copied), across several segments, then an open
    // transaction (the last stable offset) with more data after it.
    let sizes = [
        (3, 3000),
        (1, 9000),
        (20, 10),
        (2, 5000),
        (5, 1500),
        (1, 20_000),
    ];
    for round in 0..4 {
        for (n, len) in sizes {
            log.append(&big_batch(n, len + round, None), 0, &v(&c))
                .unwrap();
        }
    }
    let open_txn = log
        .append(&big_batch(2, 6000, Some(9)), 0, &v(&c))
        .unwrap()
        .first_offset;
    log.append(&big_batch(2, 7000, None), 0, &v(&c)).unwrap();
    assert!(log.segment_count() > 3, "the reads must cross segments");
    assert!(log.last_stable_offset() == open_txn);

    let (mut in_place, mut copied, mut multi_range) = (0, 0, 0);
    for offset in (0..log.log_end_offset()).step_by(3) {
        for max_bytes in [0, 1, 4096, 12_000, 40_000, 150_000, usize::MAX] {
            for min_one in [false, true] {
                for committed in [false, true] {
                    let want = log
                        .read_isolated(offset, max_bytes, min_one, committed)
                        .unwrap();
                    let (info, files) = log
                        .read_in_place(offset, max_bytes, min_one, committed)
                        .unwrap();
                    let what = format!("offset {offset} max {max_bytes} {min_one} {committed}");
                    assert_eq!(info.last_stable_offset, want.last_stable_offset, "{what}");
                    assert_eq!(info.high_watermark, want.high_watermark, "{what}");
                    match files {
                        Some(files) => {
                            assert!(info.records.is_empty(), "{what}");
                            assert_eq!(concat(&files), want.records, "{what}");
                            let count: i64 = headers(&want.records)
                                .iter()
                                .map(|h| h.record_count as i64)
                                .sum();
                            assert_eq!(files.record_count as i64, count, "{what}");
                            in_place += 1;
                            if files.ranges.len() > 1 {
                                multi_range += 1;
                            }
                        }
                        None => {
                            assert_eq!(info.records, want.records, "{what}");
                            copied += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(
        in_place > 100 && copied > 100 && multi_range > 10,
        "{in_place} {copied} {multi_range}"
    );
}

#[test]
fn in_place_ranges_stay_readable_after_their_segment_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let cfg = LogConfig {
        segment_bytes: 30_000,
        retention_bytes: 1,
        ..config()
    };
    let log = open(dir.path(), cfg, &c, Recovery::Clean);
    for _ in 0..6 {
        log.append(&big_batch(2, 8000, None), 0, &v(&c)).unwrap();
    }
    let want = log.read(0, 20_000, true).unwrap().records;
    let (_, files) = log.read_in_place(0, 20_000, true, false).unwrap();
    let files = files.expect("large batches are read in place");
    let removed = log.apply_retention().unwrap();
    assert!(log.log_start_offset() > 0, "{removed:?}");
    assert_eq!(concat(&files), want);
}
