//! The bounded key → latest offset map one cleaning pass builds over the dirty range
//! (Kafka's `SkimpyOffsetMap`, with exact keys where the budget allows).
//!
//! Layout: an open-addressing table with linear probing. Each slot holds the key's 128-bit
//! XXH3 hash, the latest offset seen for it, and a reference into a key arena. Keys are copied
//! into the arena while it has room, so a hash collision between two different keys is
//! *detected* and the slot is marked ambiguous: lookups for it answer [`Lookup::Unknown`] and the
//! filter keeps the record ("when in doubt, keep"). Once the arena is full, later keys are
//! identified by their 128-bit hash alone (a collision then needs ~2^64 keys to become likely).
//!
//! Beside the table, a bitmap over the covered offsets marks every record that was put and every
//! one a later record of the same key superseded, as [`OffsetMap::put`] learns it: the filter
//! then answers "is this record the latest of its key?" from two bits
//! ([`OffsetMap::superseded`]) instead of a second probe of the table per record, a cache miss
//! each on a table larger than the caches. Only the first offsets (as many as the bitmap's share
//! of the memory holds) are tracked; records above them, records never put and records of the
//! clean range below are looked up in the table.
//!
//! Memory: bounded by the thread's share of `log.cleaner.dedupe.buffer.size` (slots + arena +
//! bitmap, see [`OffsetMap::new`]), but the table starts small and doubles as keys arrive, and
//! [`OffsetMap::clear`] shrinks it again: an idle broker or a log with few keys pays for what
//! it holds, not for the whole budget. A map full at its bound ends the build early and the
//! pass becomes partial (docs/compaction.md §2.4). Owned by one cleaner thread; not shared.

use xxhash_rust::xxh3::xxh3_128;

/// Bytes per slot: hash (16) + offset (8) + arena position (4) + key length (4).
pub const SLOT_BYTES: u64 = 32;
/// Arena bytes reserved per slot: keys up to this size on average are all kept exactly.
const ARENA_BYTES_PER_SLOT: u64 = 16;
/// Kafka caps a thread's map at 2^31 - 1 bytes.
const MAX_MAP_BYTES: u64 = i32::MAX as u64;
/// `key_len` value of a slot whose key is not stored (arena was full).
const NO_KEY: u32 = u32::MAX;
/// `key_len` value of a slot two distinct keys were put into (its key is no longer needed).
const AMBIGUOUS: u32 = u32::MAX - 1;
/// `offset` value of an empty slot (real offsets are never negative).
const EMPTY: i64 = -1;
/// Table size a map starts with (32 KiB) before it grows toward its bound.
const INITIAL_SLOTS: usize = 1024;
/// Share of the arena's bytes given to the superseded bitmap instead (one in four): at the
/// default budget it tracks tens of millions of offsets per pass.
const BITMAP_SHARE_OF_ARENA: usize = 4;

/// The answer of [`OffsetMap::get`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The key was not seen in the covered range (Kafka's -1): keep the record.
    Absent,
    /// The latest offset of this key in the covered range.
    Latest(i64),
    /// Two distinct keys share this hash: the map cannot say, so the record must be kept.
    Unknown,
}

/// 32 bytes: the hash is two u64 so the slot needs no 16-byte alignment padding.
#[derive(Clone, Copy)]
struct Slot {
    hash: [u64; 2],
    offset: i64,
    key_at: u32,
    /// Length of the stored key, or [`NO_KEY`] / [`AMBIGUOUS`].
    key_len: u32,
}

const EMPTY_SLOT: Slot = Slot {
    hash: [0, 0],
    offset: EMPTY,
    key_at: 0,
    key_len: NO_KEY,
};

fn split(hash: u128) -> [u64; 2] {
    [(hash >> 64) as u64, hash as u64]
}

/// A fixed-memory key → offset map. See the module docs.
pub struct OffsetMap {
    slots: Vec<Slot>,
    /// The bound: the table never grows beyond this many slots.
    max_slots: usize,
    load_factor: f64,
    arena: Vec<u8>,
    arena_limit: usize,
    /// Two bits per offset `o` from `superseded_base`: bit `2(o - base)` is set when the record
    /// at `o` was put, the next one when a later record of the same key follows it.
    superseded: Vec<u64>,
    superseded_base: i64,
    /// The bitmap never grows beyond this many words (its share of the memory).
    superseded_max_words: usize,
    entries: usize,
    max_entries: usize,
    latest_offset: i64,
    collisions: u64,
    hasher: fn(&[u8]) -> u128,
    /// Built by [`OffsetMap::new`] (XXH3-128): its hashes can be checked against segment
    /// summaries, which are built with the same function (`summary.rs`).
    default_hasher: bool,
}

impl OffsetMap {
    /// A map using at most `memory_bytes` (capped at 2^31 - 1, as Kafka does) of which a third
    /// holds key bytes; full at `load_factor` × slots distinct keys (at least one key always fits,
    /// so every pass makes progress).
    pub fn new(memory_bytes: u64, load_factor: f64) -> OffsetMap {
        OffsetMap {
            default_hasher: true,
            ..OffsetMap::with_hasher(memory_bytes, load_factor, xxh3_128)
        }
    }

    /// As [`OffsetMap::new`] with another hash function (tests force collisions with it).
    pub fn with_hasher(memory_bytes: u64, load_factor: f64, hasher: fn(&[u8]) -> u128) -> Self {
        let memory = memory_bytes.min(MAX_MAP_BYTES);
        let slots = (memory / (SLOT_BYTES + ARENA_BYTES_PER_SLOT)).max(2);
        let slots = usize::try_from(slots).unwrap_or(usize::MAX / 64);
        let rest = usize::try_from(memory.saturating_sub(slots as u64 * SLOT_BYTES)).unwrap_or(0);
        let bitmap_bytes = rest / BITMAP_SHARE_OF_ARENA;
        let arena_limit = rest - bitmap_bytes;
        let lf = if load_factor.is_finite() {
            load_factor.clamp(0.0, 1.0)
        } else {
            0.9
        };
        let max_entries = entries_for(slots, lf);
        OffsetMap {
            slots: vec![EMPTY_SLOT; slots.min(INITIAL_SLOTS)],
            max_slots: slots,
            load_factor: lf,
            arena: Vec::new(),
            arena_limit,
            superseded: Vec::new(),
            superseded_base: 0,
            superseded_max_words: bitmap_bytes / 8,
            entries: 0,
            max_entries,
            latest_offset: -1,
            collisions: 0,
            hasher,
            default_hasher: false,
        }
    }

    /// Empties the map for a new pass and sets the offset below which it covers everything.
    pub fn clear(&mut self, latest_offset: i64) {
        self.slots = vec![EMPTY_SLOT; self.max_slots.min(INITIAL_SLOTS)];
        self.arena = Vec::new();
        self.superseded = Vec::new();
        self.superseded_base = latest_offset.saturating_add(1);
        self.entries = 0;
        self.latest_offset = latest_offset;
        self.collisions = 0;
    }

    /// Number of slots the map may grow to (capacity before the load factor).
    pub fn slots(&self) -> usize {
        self.max_slots
    }

    /// Distinct keys (hashes) stored.
    pub fn len(&self) -> usize {
        self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Whether one more new key would exceed the load factor.
    pub fn is_full(&self) -> bool {
        self.entries >= self.max_entries
    }

    /// Fraction of the bound's slots in use (Kafka's `max-buffer-utilization-percent` / 100).
    pub fn utilization(&self) -> f64 {
        self.entries as f64 / self.max_slots as f64
    }

    /// Distinct keys that shared a hash with another key in this pass.
    pub fn collisions(&self) -> u64 {
        self.collisions
    }

    /// The highest offset the map covers: records above it are kept as they are.
    pub fn latest_offset(&self) -> i64 {
        self.latest_offset
    }

    /// Raises the covered offset (after a batch, or to the end of a segment).
    pub fn update_latest_offset(&mut self, offset: i64) {
        self.latest_offset = self.latest_offset.max(offset);
    }

    /// Records `offset` as the latest for `key`. Returns `false`, changing nothing, when the key
    /// is new and the map is full: the build must stop there.
    pub fn put(&mut self, key: &[u8], offset: i64) -> bool {
        let hash = (self.hasher)(key);
        let idx = self.probe(hash);
        let slot = self.slots[idx];
        if slot.offset != EMPTY {
            if self.stored_key(&slot).is_some_and(|k| k != key) {
                self.slots[idx].key_len = AMBIGUOUS;
                self.collisions += 1;
            } else if slot.key_len != AMBIGUOUS && slot.offset != offset {
                // The same key again: the earlier of the two records is not the latest.
                self.mark(slot.offset.min(offset), true);
            }
            self.mark(offset, false);
            let s = &mut self.slots[idx];
            s.offset = s.offset.max(offset);
            self.latest_offset = self.latest_offset.max(offset);
            return true;
        }
        if self.is_full() {
            return false;
        }
        let idx = if self.entries >= entries_for(self.slots.len(), self.load_factor) {
            self.grow();
            self.probe(hash)
        } else {
            idx
        };
        self.mark(offset, false);
        let (key_at, key_len) = self.store_key(key);
        self.slots[idx] = Slot {
            hash: split(hash),
            offset,
            key_at,
            key_len,
        };
        self.entries += 1;
        self.latest_offset = self.latest_offset.max(offset);
        true
    }

    /// Whether a later record of its key follows the keyed record at `offset`; `None` when the
    /// bitmap cannot say (`offset` was not put, or lies beyond what the bitmap tracks): ask
    /// [`OffsetMap::get`] then. A record whose slot two keys share is not marked after the
    /// collision, so it is kept, as `get` would keep it.
    pub fn superseded(&self, offset: i64) -> Option<bool> {
        let bit = self.offset_bits(offset)?;
        let word = *self.superseded.get(bit / 64)?;
        let put = word & (1 << (bit % 64)) != 0;
        put.then_some(word & (1 << (bit % 64 + 1)) != 0)
    }

    /// Position of `offset`'s two bits (put, superseded) in the bitmap, if it may track it.
    fn offset_bits(&self, offset: i64) -> Option<usize> {
        let index = usize::try_from(offset.checked_sub(self.superseded_base)?).ok()?;
        let bit = index.checked_mul(2)?;
        (bit / 64 < self.superseded_max_words).then_some(bit)
    }

    /// Sets bit 0 (`put`) or bit 1 (`superseded`) of `offset`'s pair, if the bitmap tracks it.
    fn mark(&mut self, offset: i64, superseded: bool) {
        let Some(bit) = self.offset_bits(offset) else {
            return;
        };
        let word = bit / 64;
        if word >= self.superseded.len() {
            // Doubling keeps growth amortized; never past the bound.
            let len = (word + 1)
                .max(self.superseded.len() * 2)
                .min(self.superseded_max_words);
            self.superseded.resize(len, 0);
        }
        self.superseded[word] |= 1 << (bit % 64 + usize::from(superseded));
    }

    /// The latest offset of `key`, or why there is none.
    pub fn get(&self, key: &[u8]) -> Lookup {
        self.get_hashed(key, (self.hasher)(key))
    }

    /// The hash this map files `key` under.
    pub fn hash_of(&self, key: &[u8]) -> u128 {
        (self.hasher)(key)
    }

    /// Whether the hashes are XXH3-128 ([`OffsetMap::new`]), the function segment summaries
    /// use.
    pub fn has_default_hasher(&self) -> bool {
        self.default_hasher
    }

    /// The hash of every key stored (in no particular order).
    pub fn hashes(&self) -> impl Iterator<Item = u128> + '_ {
        self.slots
            .iter()
            .filter(|s| s.offset != EMPTY)
            .map(|s| (u128::from(s.hash[0]) << 64) | u128::from(s.hash[1]))
    }

    /// [`OffsetMap::get`] with `hash` = [`OffsetMap::hash_of`]`(key)` already computed.
    pub fn get_hashed(&self, key: &[u8], hash: u128) -> Lookup {
        let slot = self.slots[self.probe(hash)];
        if slot.offset == EMPTY {
            return Lookup::Absent;
        }
        if slot.key_len == AMBIGUOUS {
            return Lookup::Unknown;
        }
        match self.stored_key(&slot) {
            // Same hash, different key, and that key was put while ours never was.
            Some(k) if k != key => Lookup::Absent,
            _ => Lookup::Latest(slot.offset),
        }
    }

    /// Doubles the table (up to the bound) and re-places every entry.
    fn grow(&mut self) {
        let size = (self.slots.len() * 2).min(self.max_slots);
        let old = std::mem::replace(&mut self.slots, vec![EMPTY_SLOT; size]);
        for slot in old.into_iter().filter(|s| s.offset != EMPTY) {
            let hash = (u128::from(slot.hash[0]) << 64) | u128::from(slot.hash[1]);
            let idx = self.probe(hash);
            self.slots[idx] = slot;
        }
    }

    /// Index of the slot holding `hash`, or of the empty slot where it would go.
    fn probe(&self, hash: u128) -> usize {
        let n = self.slots.len();
        let hash = split(hash);
        // The high half scaled to [0, n) by a multiply (Lemire's reduction): the table size
        // is not a power of two, and this spares every probe a 128-bit division.
        let mut idx = ((u128::from(hash[0]) * n as u128) >> 64) as usize;
        loop {
            let s = &self.slots[idx];
            if s.offset == EMPTY || s.hash == hash {
                return idx;
            }
            idx += 1;
            if idx == n {
                idx = 0;
            }
        }
    }

    fn store_key(&mut self, key: &[u8]) -> (u32, u32) {
        let fits = self.arena.len().saturating_add(key.len()) <= self.arena_limit;
        match (u32::try_from(self.arena.len()), u32::try_from(key.len())) {
            (Ok(at), Ok(len)) if fits && len < AMBIGUOUS => {
                self.arena.extend_from_slice(key);
                (at, len)
            }
            _ => (0, NO_KEY),
        }
    }

    fn stored_key(&self, slot: &Slot) -> Option<&[u8]> {
        if slot.key_len >= AMBIGUOUS {
            return None;
        }
        let at = slot.key_at as usize;
        self.arena.get(at..at + slot.key_len as usize)
    }
}

/// Distinct keys a table of `slots` may hold at `load_factor`, leaving at least one slot
/// free so probing always terminates.
fn entries_for(slots: usize, load_factor: f64) -> usize {
    ((slots as f64 * load_factor) as usize).clamp(1, slots.saturating_sub(1).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same_hash(_: &[u8]) -> u128 {
        42
    }

    #[test]
    fn grows_from_small_to_its_bound_and_shrinks_on_clear() {
        let mut m = OffsetMap::new(48 * 100_000, 0.9);
        m.clear(-1);
        assert_eq!(m.slots.len(), INITIAL_SLOTS);
        for i in 0..50_000i64 {
            assert!(m.put(format!("key-{i}").as_bytes(), i));
        }
        assert!(m.slots.len() > INITIAL_SLOTS && m.slots.len() <= m.slots());
        for i in 0..50_000i64 {
            assert_eq!(m.get(format!("key-{i}").as_bytes()), Lookup::Latest(i));
        }
        assert_eq!(m.get(b"never"), Lookup::Absent);
        while m.put(format!("more-{}", m.len()).as_bytes(), 1) {}
        assert_eq!(m.slots.len(), m.slots(), "a full map has reached its bound");
        assert_eq!(m.len(), entries_for(m.slots(), 0.9));
        m.clear(-1);
        assert_eq!(m.slots.len(), INITIAL_SLOTS);
        assert!(m.is_empty());
    }

    #[test]
    fn slot_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Slot>() as u64, SLOT_BYTES);
    }

    #[test]
    fn latest_offset_per_key() {
        let mut m = OffsetMap::new(1 << 16, 0.9);
        m.clear(-1);
        assert!(m.put(b"a", 1));
        assert!(m.put(b"b", 2));
        assert!(m.put(b"a", 3));
        assert_eq!(m.get(b"a"), Lookup::Latest(3));
        assert_eq!(m.get(b"b"), Lookup::Latest(2));
        assert_eq!(m.get(b"c"), Lookup::Absent);
        assert_eq!(m.len(), 2);
        assert_eq!(m.latest_offset(), 3);
    }

    #[test]
    fn keys_are_byte_exact() {
        let mut m = OffsetMap::new(1 << 16, 0.9);
        m.clear(-1);
        for (i, k) in [&b"a"[..], b"a ", b"", b"\0"].iter().enumerate() {
            assert!(m.put(k, i as i64));
        }
        assert_eq!(m.get(b""), Lookup::Latest(2));
        assert_eq!(m.get(b"\0"), Lookup::Latest(3));
        assert_eq!(m.len(), 4);
    }

    #[test]
    fn capacity_follows_memory_and_load_factor() {
        let m = OffsetMap::new(48 * 100, 0.9);
        assert_eq!(m.slots(), 100);
        let mut m = m;
        m.clear(-1);
        for i in 0..90 {
            assert!(m.put(format!("k{i}").as_bytes(), i), "key {i}");
        }
        assert!(m.is_full());
        assert!(!m.put(b"new", 1000), "a new key must not fit");
        assert_eq!(m.get(b"new"), Lookup::Absent);
        assert_eq!(
            m.latest_offset(),
            89,
            "a refused put does not move coverage"
        );
        // Re-putting a known key needs no new slot.
        assert!(m.put(b"k3", 2000));
        assert_eq!(m.get(b"k3"), Lookup::Latest(2000));
        assert!((m.utilization() - 0.9).abs() < 1e-9);
    }

    #[test]
    fn tiny_memory_still_holds_one_key() {
        let mut m = OffsetMap::new(0, 0.9);
        m.clear(-1);
        assert!(m.put(b"x", 5));
        assert!(!m.put(b"y", 6));
        assert_eq!(m.get(b"x"), Lookup::Latest(5));
    }

    #[test]
    fn clear_resets_everything() {
        let mut m = OffsetMap::new(4800, 0.9);
        m.clear(-1);
        m.put(b"a", 1);
        m.clear(9);
        assert!(m.is_empty());
        assert_eq!(m.get(b"a"), Lookup::Absent);
        assert_eq!(m.latest_offset(), 9);
    }

    #[test]
    fn collision_never_drops_a_live_key() {
        let mut m = OffsetMap::with_hasher(1 << 16, 0.9, same_hash);
        m.clear(-1);
        assert!(m.put(b"a", 1));
        // b is not in the map yet: the stored key tells them apart.
        assert_eq!(m.get(b"b"), Lookup::Absent);
        assert!(m.put(b"b", 5));
        assert_eq!(m.collisions(), 1);
        // Neither can be answered any more; the filter keeps both records.
        assert_eq!(m.get(b"a"), Lookup::Unknown);
        assert_eq!(m.get(b"b"), Lookup::Unknown);
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn full_arena_falls_back_to_hash_identity() {
        // 2 slots, arena of 3/4 of 2*48-64 = 24 bytes: the 40-byte key is not stored.
        let mut m = OffsetMap::new(96, 1.0);
        m.clear(-1);
        let big = [7u8; 40];
        assert!(m.put(&big, 3));
        assert_eq!(m.get(&big), Lookup::Latest(3));
    }

    #[test]
    fn many_keys_with_probing() {
        let mut m = OffsetMap::new(48 * 1000, 0.9);
        m.clear(-1);
        for i in 0..900i64 {
            assert!(m.put(&i.to_be_bytes(), i));
        }
        for i in 0..900i64 {
            assert_eq!(m.get(&i.to_be_bytes()), Lookup::Latest(i));
        }
        assert_eq!(m.get(&5000i64.to_be_bytes()), Lookup::Absent);
    }

    #[test]
    fn superseded_bitmap_marks_every_earlier_record_of_a_key() {
        let mut m = OffsetMap::new(1 << 16, 0.9);
        m.clear(9);
        for (k, o) in [(&b"a"[..], 10), (b"b", 11), (b"a", 12), (b"a", 14)] {
            assert!(m.put(k, o));
        }
        assert_eq!(m.superseded(10), Some(true));
        assert_eq!(m.superseded(11), Some(false));
        assert_eq!(m.superseded(12), Some(true));
        assert_eq!(m.superseded(14), Some(false));
        // Offset 13 was never put (a keyless record, say), 9 lies below the covered range.
        assert_eq!(m.superseded(13), None);
        assert_eq!(m.superseded(9), None);
        m.clear(99);
        assert_eq!(m.superseded(10), None, "clear forgets the bitmap");
    }

    #[test]
    fn superseded_bitmap_agrees_with_the_table() {
        let mut m = OffsetMap::new(1 << 20, 0.9);
        m.clear(-1);
        let mut x: u64 = 7;
        let mut puts = Vec::new();
        for offset in 0..20_000i64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let key = format!("k{}", (x >> 33) % 3_000);
            assert!(m.put(key.as_bytes(), offset));
            puts.push((key, offset));
        }
        for (key, offset) in puts {
            let latest = m.get(key.as_bytes()) == Lookup::Latest(offset);
            assert_eq!(m.superseded(offset), Some(!latest), "{key} at {offset}");
        }
    }

    #[test]
    fn a_collision_stops_marking_its_slot() {
        let mut m = OffsetMap::with_hasher(1 << 16, 0.9, same_hash);
        m.clear(-1);
        assert!(m.put(b"a", 1));
        assert!(m.put(b"a", 2));
        assert_eq!(
            m.superseded(1),
            Some(true),
            "same key bytes: a later a follows"
        );
        assert!(m.put(b"b", 5));
        assert!(m.put(b"a", 7));
        // Which key came later is no longer known: kept, as get's Unknown keeps them.
        assert_eq!(m.superseded(2), Some(false));
        assert_eq!(m.superseded(5), Some(false));
        assert_eq!(m.superseded(7), Some(false));
    }

    #[test]
    fn superseded_bitmap_is_bounded_by_its_share_of_memory() {
        // 100 slots: 4800 - 3200 = 1600 bytes left, a quarter (400 bytes, 50 words) for the
        // bitmap: 1600 offsets at two bits each.
        let mut m = OffsetMap::new(48 * 100, 0.9);
        m.clear(-1);
        assert!(m.put(b"a", 1_599));
        assert!(m.put(b"a", 1_600));
        assert!(m.put(b"a", 5_000));
        assert_eq!(m.superseded(1_599), Some(true));
        assert_eq!(m.superseded(1_600), None, "past the bound: ask the table");
        assert_eq!(m.get(b"a"), Lookup::Latest(5_000));
        assert!(m.superseded.len() <= 50);
    }
}
