//! One hash table of a key index: 128-bit key hash → packed (offset, tombstone), with its
//! memory charged to the broker-wide [`KeyIndexBudget`] *before* it grows.
//!
//! Layout: `std::collections::HashMap` (hashbrown's SwissTable: open addressing with SIMD
//! control bytes, load factor 7/8) keyed by the `u128` hash itself. The key is already a
//! uniform XXH3 hash, so the table's hasher only folds it to 64 bits ([`Fold`]) instead of
//! hashing it again. A bucket is 24 bytes (hash 16 + packed value 8) plus 1 control byte:
//! 25 bytes, so between ~29 bytes per key (table 7/8 full) and ~57 (just doubled).
//!
//! Thread-safety: none of its own; owned by one `KeyIndex` state behind its mutex.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Tombstone flag in a packed value: offsets are never negative, so bit 63 is free.
const TOMBSTONE: u64 = 1 << 63;
/// Bytes per bucket: `(u128, u64)` (24) + one control byte.
const BUCKET_BYTES: u64 = 25;
/// hashbrown's trailing control group (one SIMD group width).
const GROUP_BYTES: u64 = 16;

/// The broker-wide memory bound shared by every partition's key index
/// (`skiff.key.index.memory.bytes`). Tables reserve before they grow and release on drop.
#[derive(Debug)]
pub struct KeyIndexBudget {
    limit: u64,
    used: AtomicU64,
}

impl KeyIndexBudget {
    pub fn new(limit_bytes: u64) -> KeyIndexBudget {
        KeyIndexBudget {
            limit: limit_bytes,
            used: AtomicU64::new(0),
        }
    }

    /// The configured bound.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes currently charged by all indexes.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// Charges `bytes` if the total stays within the limit.
    fn try_reserve(&self, bytes: u64) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|total| *total <= self.limit)
            })
            .is_ok()
    }

    fn release(&self, bytes: u64) {
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                Some(used.saturating_sub(bytes))
            });
    }
}

/// Folds a `u128` (already a good hash) to the table's 64-bit hash without rehashing it.
#[derive(Default)]
pub(crate) struct Fold(u64);

impl Hasher for Fold {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only reached for types other than u128; fold them byte-wise (never used here).
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u128(&mut self, i: u128) {
        self.0 = (i as u64) ^ ((i >> 64) as u64);
    }
}

/// The table is full at the budget: the caller must prune or give the index up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OverBudget;

/// A latest-offset entry as stored: offset and whether that record is a tombstone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub offset: i64,
    pub tombstone: bool,
}

impl Entry {
    fn pack(self) -> u64 {
        let off = u64::try_from(self.offset).unwrap_or(0);
        if self.tombstone {
            off | TOMBSTONE
        } else {
            off
        }
    }

    fn unpack(v: u64) -> Entry {
        Entry {
            offset: i64::try_from(v & !TOMBSTONE).unwrap_or(i64::MAX),
            tombstone: v & TOMBSTONE != 0,
        }
    }
}

/// Hash → latest entry, charged to a budget.
pub(crate) struct Table {
    map: HashMap<u128, u64, BuildHasherDefault<Fold>>,
    budget: Arc<KeyIndexBudget>,
    /// Bytes this table has charged to `budget`.
    charged: u64,
}

impl Table {
    pub(crate) fn new(budget: Arc<KeyIndexBudget>) -> Table {
        Table {
            map: HashMap::default(),
            budget,
            charged: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Bytes charged to the budget for this table.
    pub(crate) fn bytes(&self) -> u64 {
        self.charged
    }

    pub(crate) fn get(&self, hash: u128) -> Option<Entry> {
        self.map.get(&hash).map(|v| Entry::unpack(*v))
    }

    /// Records `entry` unless the table already holds a newer (or the same) offset for the
    /// hash: "latest" is by offset, so replays and late transaction commits are idempotent.
    pub(crate) fn insert_max(&mut self, hash: u128, entry: Entry) -> Result<(), OverBudget> {
        if let Some(v) = self.map.get_mut(&hash) {
            if Entry::unpack(*v).offset < entry.offset {
                *v = entry.pack();
            }
            return Ok(());
        }
        if self.map.len() >= self.map.capacity() {
            self.grow()?;
        }
        self.map.insert(hash, entry.pack());
        Ok(())
    }

    /// Doubles the table after charging the budget for the larger allocation (the old one is
    /// freed right after, so the peak is brief and also charged).
    fn grow(&mut self) -> Result<(), OverBudget> {
        // Twice the capacity is exactly the capacity of twice the buckets (7/8 of them); one
        // more would round the bucket count up to four times.
        let want = (self.map.capacity() * 2).max(3);
        let new_bytes = bytes_for_capacity(want);
        if !self.budget.try_reserve(new_bytes) {
            return Err(OverBudget);
        }
        self.map.reserve(want - self.map.len());
        // Normally equal to `new_bytes` (same bucket rule); if not, charge what was allocated.
        let actual = bytes_for_capacity(self.map.capacity());
        self.budget.release(self.charged);
        if actual > new_bytes {
            let extra = actual - new_bytes;
            // Already allocated: charge it even past the limit, the next growth is refused.
            self.budget.used.fetch_add(extra, Ordering::AcqRel);
        } else {
            self.budget.release(new_bytes - actual);
        }
        self.charged = actual;
        Ok(())
    }

    /// Keeps the entries for which `keep` holds (capacity unchanged: room for new keys).
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(Entry) -> bool) {
        self.map.retain(|_, v| keep(Entry::unpack(*v)));
    }

    /// Shrinks the allocation to what the entries need and gives the difference back.
    pub(crate) fn shrink(&mut self) {
        self.map.shrink_to_fit();
        let now = bytes_for_capacity(self.map.capacity());
        if now < self.charged {
            self.budget.release(self.charged - now);
            self.charged = now;
        }
    }

    /// Every (hash, entry), in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u128, Entry)> + '_ {
        self.map.iter().map(|(h, v)| (*h, Entry::unpack(*v)))
    }

    /// Lowest offset held, if any (a full scan: called once per transaction commit/abort at
    /// most, on the small per-producer tables).
    pub(crate) fn min_offset(&self) -> Option<i64> {
        self.iter().map(|(_, e)| e.offset).min()
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        self.budget.release(self.charged);
    }
}

/// Heap bytes hashbrown allocates for a table of `capacity` (its bucket rule: 4 or 8
/// buckets for small tables, else capacity × 8/7 rounded up to a power of two).
fn bytes_for_capacity(capacity: usize) -> u64 {
    let buckets: u64 = match capacity {
        0 => return 0,
        1..=3 => 4,
        4..=7 => 8,
        c => (u64::try_from(c).unwrap_or(u64::MAX / 16).saturating_mul(8) / 7).next_power_of_two(),
    };
    buckets * BUCKET_BYTES + GROUP_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_offset_wins_and_tombstones_are_kept() {
        let budget = Arc::new(KeyIndexBudget::new(1 << 20));
        let mut t = Table::new(budget.clone());
        let e = |offset, tombstone| Entry { offset, tombstone };
        t.insert_max(1, e(5, false)).unwrap();
        t.insert_max(1, e(3, true)).unwrap();
        assert_eq!(t.get(1), Some(e(5, false)));
        t.insert_max(1, e(9, true)).unwrap();
        assert_eq!(t.get(1), Some(e(9, true)));
        assert!(budget.used() > 0);
        assert_eq!(budget.used(), t.bytes());
        drop(t);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn growth_is_refused_beyond_the_budget_and_the_charge_matches_capacity() {
        let budget = Arc::new(KeyIndexBudget::new(64 << 10));
        let mut t = Table::new(budget.clone());
        let mut inserted = 0u128;
        let err = loop {
            match t.insert_max(
                inserted,
                Entry {
                    offset: 1,
                    tombstone: false,
                },
            ) {
                Ok(()) => inserted += 1,
                Err(e) => break e,
            }
            assert!(inserted < 1_000_000, "budget never enforced");
        };
        assert_eq!(err, OverBudget);
        assert!(budget.used() <= budget.limit());
        assert_eq!(budget.used(), bytes_for_capacity(t.map.capacity()));
        // 64 KiB at 25 B/bucket: the table stopped at 1024 or 2048 buckets' worth of keys.
        assert!((800..=2048).contains(&inserted), "{inserted}");
    }
}
