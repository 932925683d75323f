//! Per-segment key summaries: what lets a pass leave a clean segment unread
//! (docs/compaction.md §5.3).
//!
//! A summary describes one sealed segment's *content* as a pass last saw it (read or written):
//! a Bloom filter of the XXH3-128 hashes of its keys (the hashes the offset map files keys
//! under), and the earliest delete horizon among its batches that hold a tombstone. A segment
//! gets a summary only when nothing in it depends on more than its keys and that horizon: no
//! transactional or control batch, no batch left empty, no keyless record. A pass may then skip
//! a segment that lies wholly below its first dirty offset when no key of the map may be in the
//! filter and the horizon has not passed: the filter would copy every batch as it is (see
//! `pass::skippable` for the whole rule). A false positive of the filter only costs a read.
//!
//! Identity: a summary is filed under the log and the segment's base offset, and holds the
//! segment's [`SegmentInfo::id`] (unique in the process: a swapped-in, re-rolled or reopened
//! segment has another) and size; a lookup that does not match both finds nothing.
//!
//! Memory: every summary lives in one [`SummaryStore`] per pool, bounded by its byte limit (a
//! share of `log.cleaner.dedupe.buffer.size`, see `pool.rs`). A filter is sized before the
//! segment is read from its offset span (at least its record count), reserved against the
//! limit, then folded down to 16..32 bits per distinct key once the keys are known (the filter
//! has a power-of-two size, so halves can be OR-ed together); a segment whose filter would not
//! fit gets none and is read every pass. Summaries of segments that are gone are dropped at the
//! start of each pass of their log and when the log leaves the pool.
//!
//! Thread-safety: the store is a `Mutex` (never held across I/O); builders are owned by one
//! pass.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use skiff_log::{CleanerView, SegmentInfo};

use crate::offset_map::OffsetMap;

/// Bit positions per key. With 16..32 bits per key this gives a false positive rate per probe
/// between about 5e-4 and 2e-6.
const PROBES: u64 = 10;
/// A filter is folded while it keeps at least this many bits per (estimated) key.
const MIN_BITS_PER_KEY: f64 = 16.0;
/// Below this a filter is not kept: its false positives would make most checks read anyway.
const KEEP_BITS_PER_KEY: f64 = 12.0;
/// Bits reserved per offset of a segment's span before reading it (then folded).
const BITS_PER_OFFSET: u64 = 32;
/// Smallest filter (64 bytes).
const MIN_BITS: u64 = 512;
/// Bytes a summary costs besides its filter (struct, `Arc`, map entry).
pub const SUMMARY_OVERHEAD_BYTES: u64 = 96;
/// A check against the map probes every map key; beyond this many map keys per key of the
/// segment, reading the segment is cheaper than probing, so it is read.
const MAX_PROBES_PER_SEGMENT_KEY: u64 = 8;

/// What a pass knows about one segment's content without reading it.
#[derive(Debug)]
pub struct SegmentSummary {
    id: u64,
    size: u64,
    /// Bloom filter words; the length is a power of two.
    bits: Vec<u64>,
    /// Distinct keys, estimated from the filter's fill.
    keys: u64,
    /// Earliest delete horizon of a batch holding a tombstone (`None`: no tombstone).
    pub tombstone_horizon_ms: Option<i64>,
}

impl SegmentSummary {
    /// Whether a key with this hash may be in the segment (`false` is certain).
    pub fn may_contain(&self, hash: u128) -> bool {
        may_contain(&self.bits, hash)
    }

    /// Whether a key of `map` may be in the segment; `true` also when checking would cost
    /// more than reading (or the map's hashes are not XXH3's).
    pub fn may_hold_a_key_of(&self, map: &OffsetMap) -> bool {
        if !map.has_default_hasher() {
            return true;
        }
        let limit = self.keys.saturating_add(8) * MAX_PROBES_PER_SEGMENT_KEY;
        if map.len() as u64 > limit {
            return true;
        }
        map.hashes().any(|h| self.may_contain(h))
    }

    /// Memory held, as charged to the store.
    pub fn bytes(&self) -> u64 {
        self.bits.len() as u64 * 8 + SUMMARY_OVERHEAD_BYTES
    }

    /// Distinct keys (estimated).
    pub fn keys(&self) -> u64 {
        self.keys
    }
}

fn positions(hash: u128, mask: u64) -> impl Iterator<Item = u64> {
    let h1 = hash as u64;
    let h2 = ((hash >> 64) as u64) | 1;
    (0..PROBES).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) & mask)
}

fn may_contain(bits: &[u64], hash: u128) -> bool {
    let mask = bits.len() as u64 * 64 - 1;
    positions(hash, mask).all(|p| {
        bits.get((p / 64) as usize)
            .is_some_and(|w| w & (1 << (p % 64)) != 0)
    })
}

/// Collects one segment's summary while a pass reads or writes it. Dropping it unfinished
/// gives its reservation back.
pub struct SummaryBuilder<'s> {
    store: &'s SummaryStore,
    bits: Vec<u64>,
    /// Bytes reserved in the store for `bits`.
    reserved: u64,
    blocked: bool,
    horizon: Option<i64>,
}

impl SummaryBuilder<'_> {
    /// A key of a record that stays in the segment (its hash as the offset map computes it).
    pub fn add_key(&mut self, hash: u128) {
        if self.blocked {
            return;
        }
        let mask = self.bits.len() as u64 * 64 - 1;
        for p in positions(hash, mask) {
            if let Some(w) = self.bits.get_mut((p / 64) as usize) {
                *w |= 1 << (p % 64);
            }
        }
    }

    /// Something in the segment needs more than its keys to be judged: no summary.
    pub fn block(&mut self) {
        self.blocked = true;
    }

    /// A batch that stays holds a tombstone with this delete horizon.
    pub fn tombstones_until(&mut self, horizon_ms: i64) {
        self.horizon = Some(self.horizon.map_or(horizon_ms, |h| h.min(horizon_ms)));
    }

    /// The summary of the segment `seg_id` of `size` bytes, folded to its keys; `None` when
    /// blocked or too full to be useful. The reservation shrinks to what is kept.
    fn finish(mut self, seg_id: u64, size: u64) -> Option<SegmentSummary> {
        if self.blocked {
            return None;
        }
        let mut keys = estimate_keys(&self.bits);
        while self.bits.len() as u64 * 64 / 2 >= MIN_BITS
            && (self.bits.len() as f64 * 64.0 / 2.0) / keys.max(1.0) >= MIN_BITS_PER_KEY
        {
            fold(&mut self.bits);
            keys = estimate_keys(&self.bits);
        }
        if !keys.is_finite() || (self.bits.len() as f64 * 64.0) / keys.max(1.0) < KEEP_BITS_PER_KEY
        {
            return None;
        }
        let bits = std::mem::take(&mut self.bits);
        let summary = SegmentSummary {
            id: seg_id,
            size,
            bits,
            keys: keys.ceil() as u64,
            tombstone_horizon_ms: self.horizon,
        };
        // The filter's share of the reservation moves to the stored summary.
        let keep = summary.bytes();
        let mut inner = self.store.lock();
        inner.used = inner
            .used
            .saturating_sub(self.reserved)
            .saturating_add(keep);
        self.reserved = 0;
        Some(summary)
    }
}

impl Drop for SummaryBuilder<'_> {
    fn drop(&mut self) {
        if self.reserved > 0 {
            let mut inner = self.store.lock();
            inner.used = inner.used.saturating_sub(self.reserved);
        }
    }
}

/// ORs the upper half of the filter into the lower half: the filter of half the size.
fn fold(bits: &mut Vec<u64>) {
    let half = bits.len() / 2;
    let (low, high) = bits.split_at_mut(half);
    for (l, h) in low.iter_mut().zip(high.iter()) {
        *l |= *h;
    }
    bits.truncate(half);
    bits.shrink_to_fit();
}

/// Distinct keys in a filter, from its fill (Swamidass and Baldi's estimate); infinite when
/// every bit is set.
fn estimate_keys(bits: &[u64]) -> f64 {
    let m = bits.len() as f64 * 64.0;
    let set: u64 = bits.iter().map(|w| u64::from(w.count_ones())).sum();
    let x = set as f64;
    if x >= m {
        return f64::INFINITY;
    }
    -(m / PROBES as f64) * (1.0 - x / m).ln()
}

type LogKey = (String, i32);

#[derive(Default)]
struct StoreInner {
    /// Bytes of stored summaries plus reservations of builders in progress.
    used: u64,
    logs: HashMap<LogKey, HashMap<i64, Arc<SegmentSummary>>>,
}

/// Every summary of a pool, under one memory bound (see the module docs).
pub struct SummaryStore {
    limit: u64,
    inner: Mutex<StoreInner>,
}

impl SummaryStore {
    /// A store holding at most `limit_bytes` of summaries (0: none at all).
    pub fn new(limit_bytes: u64) -> SummaryStore {
        SummaryStore {
            limit: limit_bytes,
            inner: Mutex::new(StoreInner::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, StoreInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn limit_bytes(&self) -> u64 {
        self.limit
    }

    /// Bytes held by summaries and builders now.
    pub fn used_bytes(&self) -> u64 {
        self.lock().used
    }

    /// Summaries stored, over all logs.
    pub fn len(&self) -> usize {
        self.lock().logs.values().map(HashMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A builder for a segment (or group of segments) spanning `span` offsets, with its filter
    /// reserved; `None` when not even the smallest filter fits.
    pub fn builder(&self, span: i64) -> Option<SummaryBuilder<'_>> {
        let span = u64::try_from(span.max(1)).unwrap_or(1);
        let wanted = span
            .saturating_mul(BITS_PER_OFFSET)
            .checked_next_power_of_two()
            .unwrap_or(u64::MAX)
            .max(MIN_BITS);
        let mut inner = self.lock();
        let room_bits = self.limit.saturating_sub(inner.used).saturating_mul(8);
        let mut bits = wanted;
        while bits > room_bits && bits > MIN_BITS {
            bits /= 2;
        }
        if bits > room_bits {
            return None;
        }
        let bytes = bits / 8;
        inner.used += bytes;
        drop(inner);
        Some(SummaryBuilder {
            store: self,
            bits: vec![0; usize::try_from(bits / 64).unwrap_or(0)],
            reserved: bytes,
            blocked: false,
            horizon: None,
        })
    }

    /// Finishes `builder` as the summary of `seg_id` (`size` bytes) at `base` of the log, in
    /// place of any earlier one. Returns whether a summary was kept.
    pub fn finish(
        &self,
        topic: &str,
        partition: i32,
        base: i64,
        builder: SummaryBuilder<'_>,
        seg_id: u64,
        size: u64,
    ) -> bool {
        let summary = builder.finish(seg_id, size);
        let mut inner = self.lock();
        let inner = &mut *inner;
        let log = inner
            .logs
            .entry((topic.to_string(), partition))
            .or_default();
        let old = match summary {
            Some(s) => log.insert(base, Arc::new(s)),
            None => log.remove(&base),
        };
        let kept = log.contains_key(&base);
        if let Some(old) = old {
            inner.used = inner.used.saturating_sub(old.bytes());
        }
        kept
    }

    /// The summary of `seg`, if one was made for this very segment.
    pub fn get(
        &self,
        topic: &str,
        partition: i32,
        seg: &SegmentInfo,
    ) -> Option<Arc<SegmentSummary>> {
        let inner = self.lock();
        let s = inner
            .logs
            .get(&(topic.to_string(), partition))?
            .get(&seg.base_offset)?;
        (s.id == seg.id && s.size == seg.size).then(|| s.clone())
    }

    /// Drops the log's summaries of segments that are no longer in `view`.
    pub fn retain_segments(&self, topic: &str, partition: i32, view: &CleanerView) {
        let mut inner = self.lock();
        let inner = &mut *inner;
        let Some(log) = inner.logs.get_mut(&(topic.to_string(), partition)) else {
            return;
        };
        let mut freed = 0;
        log.retain(|base, s| {
            let live = view
                .segments
                .iter()
                .any(|seg| seg.base_offset == *base && seg.id == s.id && !seg.is_active);
            if !live {
                freed += s.bytes();
            }
            live
        });
        inner.used = inner.used.saturating_sub(freed);
    }

    /// Drops the summaries of every log `keep` refuses (deleted or no longer compacted).
    pub fn retain_logs(&self, keep: impl Fn(&str, i32) -> bool) {
        let mut inner = self.lock();
        let inner = &mut *inner;
        let mut freed = 0;
        inner.logs.retain(|(t, p), log| {
            let k = keep(t, *p);
            if !k {
                freed += log.values().map(|s| s.bytes()).sum::<u64>();
            }
            k
        });
        inner.used = inner.used.saturating_sub(freed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xxhash_rust::xxh3::xxh3_128;

    #[test]
    fn keys_added_are_always_found_and_others_rarely() {
        let store = SummaryStore::new(1 << 20);
        let mut b = store.builder(10_000).unwrap();
        for i in 0..1000u32 {
            b.add_key(xxh3_128(format!("k{i}").as_bytes()));
        }
        let info_id = 7;
        assert!(store.finish("t", 0, 0, b, info_id, 123));
        let seg = SegmentInfo {
            base_offset: 0,
            id: info_id,
            next_offset: 10_000,
            size: 123,
            largest_timestamp: 0,
            first_batch_max_timestamp: None,
            index_entries: 0,
            time_index_entries: 0,
            is_active: false,
        };
        let s = store.get("t", 0, &seg).unwrap();
        for i in 0..1000u32 {
            assert!(s.may_contain(xxh3_128(format!("k{i}").as_bytes())));
        }
        let false_hits = (0..100_000u32)
            .filter(|i| s.may_contain(xxh3_128(format!("other{i}").as_bytes())))
            .count();
        assert!(false_hits < 100, "{false_hits} false positives of 100000");
        // Folded from 320000 bits to 16..32 bits per key.
        assert!((16_000..=32_000).contains(&(s.bits.len() * 64)));
        assert!((900..=1100).contains(&s.keys()));
        assert_eq!(store.used_bytes(), s.bytes());
        // Another segment at the same base (swapped, reopened) or size finds nothing.
        assert!(store
            .get(
                "t",
                0,
                &SegmentInfo {
                    id: 8,
                    ..seg.clone()
                }
            )
            .is_none());
        assert!(store
            .get(
                "t",
                0,
                &SegmentInfo {
                    size: 5,
                    ..seg.clone()
                }
            )
            .is_none());
        assert!(store.get("t", 1, &seg).is_none());
    }

    #[test]
    fn memory_is_bounded_and_given_back() {
        let store = SummaryStore::new(4096);
        // A huge span is reserved at most up to the limit.
        let b = store.builder(1 << 40).unwrap();
        assert_eq!(store.used_bytes(), 4096);
        assert!(store.builder(1).is_none(), "no room left");
        drop(b);
        assert_eq!(store.used_bytes(), 0);
        // A blocked builder keeps nothing; nor does one with too many keys for its bits.
        let mut b = store.builder(10).unwrap();
        b.add_key(1);
        b.block();
        assert!(!store.finish("t", 0, 0, b, 1, 1));
        assert_eq!(store.used_bytes(), 0);
        let mut b = store.builder(1 << 40).unwrap();
        for i in 0..100_000u32 {
            b.add_key(xxh3_128(&i.to_be_bytes()));
        }
        assert!(!store.finish("t", 0, 0, b, 1, 1));
        assert_eq!(store.used_bytes(), 0);
        // A replaced summary gives its bytes back; so does dropping the log.
        for id in [1, 2] {
            let mut b = store.builder(100).unwrap();
            b.add_key(5);
            assert!(store.finish("t", 0, 0, b, id, 1));
        }
        assert_eq!(store.len(), 1);
        assert!(store.used_bytes() > 0 && store.used_bytes() < 1024);
        store.retain_logs(|_, _| false);
        assert_eq!((store.len(), store.used_bytes()), (0, 0));
    }

    #[test]
    fn no_budget_no_summaries() {
        assert!(SummaryStore::new(0).builder(1).is_none());
        assert!(SummaryStore::new(63).builder(1).is_none());
    }
}
