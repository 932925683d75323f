//! Proptest model: random appends, timer rolls, flushes and clean/crash reopens, then a read
//! from 0 must return exactly the appended batches with consecutive offsets.

use super::*;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Append {
        batches: usize,
        records: usize,
        value_len: usize,
    },
    Roll,
    Reopen {
        clean: bool,
    },
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1usize..4, 1usize..5, 0usize..200)
            .prop_map(|(batches, records, value_len)| Op::Append { batches, records, value_len }),
        1 => Just(Op::Roll),
        1 => any::<bool>().prop_map(|clean| Op::Reopen { clean }),
        1 => Just(Op::Flush),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn reads_return_every_appended_batch(ops in prop::collection::vec(op(), 1..25)) {
        let dir = tempfile::tempdir().unwrap();
        let c = clock();
        let cfg = LogConfig {
            segment_bytes: 3000,
            segment_ms: 50,
            index_interval_bytes: 64,
            ..LogConfig::default()
        };
        let mut log = open(dir.path(), cfg.clone(), &c, Recovery::Clean);
        // Model: (record count, payload) of each batch in order.
        let mut model: Vec<(usize, Vec<u8>)> = Vec::new();
        let mut ts = T0;
        for op in ops {
            match op {
                Op::Append { batches, records, value_len } => {
                    let mut payload = Vec::new();
                    let mut these = Vec::new();
                    for _ in 0..batches {
                        ts += 1;
                        let b = batch_with(&vec![ts; records], value_len);
                        payload.extend(&b);
                        these.push((records, b));
                    }
                    let info = log.append(&payload, 0, &v(&c)).unwrap();
                    let expected_first: usize = model.iter().map(|m| m.0).sum();
                    prop_assert_eq!(info.first_offset, expected_first as i64);
                    model.extend(these);
                }
                Op::Roll => {
                    c.advance(100);
                    ts = c.now_ms();
                    log.roll_if_due().unwrap();
                }
                Op::Reopen { clean } => {
                    let rp = log.flushed_offset();
                    if clean { log.close().unwrap(); }
                    drop(log);
                    let r = if clean { Recovery::Clean } else { Recovery::FromOffset(rp) };
                    log = open(dir.path(), cfg.clone(), &c, r);
                }
                Op::Flush => { log.flush().unwrap(); }
            }
        }
        let r = log.read(0, usize::MAX, false).unwrap();
        let hs = headers(&r.records);
        prop_assert_eq!(hs.len(), model.len());
        let mut next = 0i64;
        let mut pos = 0usize;
        for (h, (n, original)) in hs.iter().zip(&model) {
            prop_assert_eq!(h.base_offset, next);
            prop_assert_eq!(h.record_count as usize, *n);
            let stored = &r.records[pos..pos + h.total_size()];
            // Identical to what was appended apart from the stamped base offset.
            prop_assert_eq!(&stored[8..12], &original[8..12]);
            prop_assert_eq!(&stored[16..], &original[16..]);
            next += *n as i64;
            pos += h.total_size();
        }
        prop_assert_eq!(log.log_end_offset(), next);
    }
}
