//! The offsets a restored snapshot left out: between the start offset and the last restored
//! batch, offsets with no state batch were never delivered (Kafka's "gap window") and must be
//! acquired when fetched. Any other untracked offset below the end offset is a hole the log no
//! longer holds (compaction) and counts as done.
//!
//! Kept as disjoint inclusive ranges so that a large hole costs one entry.

use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gaps {
    /// first offset -> last offset (inclusive); ranges are disjoint and not adjacent.
    ranges: BTreeMap<i64, i64>,
}

impl Gaps {
    /// Adds `[first, last]` (callers add disjoint ranges in order).
    pub fn add(&mut self, first: i64, last: i64) {
        if first <= last {
            self.ranges.insert(first, last);
        }
    }

    /// The gap range holding `offset`, if any.
    pub fn containing(&self, offset: i64) -> Option<(i64, i64)> {
        let (first, last) = self.ranges.range(..=offset).next_back()?;
        (*last >= offset).then_some((*first, *last))
    }

    /// The first gap offset at or after `offset`.
    pub fn first_at_or_after(&self, offset: i64) -> Option<i64> {
        if self.containing(offset).is_some() {
            return Some(offset);
        }
        self.ranges.range(offset..).next().map(|(first, _)| *first)
    }

    /// Forgets `[first, last]`: those offsets were acquired, compacted away or fell below
    /// the start offset.
    pub fn remove(&mut self, first: i64, last: i64) {
        if first > last {
            return;
        }
        let touched: Vec<(i64, i64)> = self
            .ranges
            .range(..=last)
            .filter(|(_, l)| **l >= first)
            .map(|(f, l)| (*f, *l))
            .collect();
        for (f, l) in touched {
            self.ranges.remove(&f);
            if f < first {
                self.ranges.insert(f, first - 1);
            }
            if l > last {
                self.ranges.insert(last + 1, l);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remove_splits_and_trims_ranges() {
        let mut g = Gaps::default();
        g.add(10, 20);
        g.add(30, 40);
        g.remove(15, 32);
        assert_eq!(g.containing(14), Some((10, 14)));
        assert_eq!(g.containing(15), None);
        assert_eq!(g.containing(32), None);
        assert_eq!(g.containing(33), Some((33, 40)));
        assert_eq!(g.first_at_or_after(15), Some(33));
        assert_eq!(g.first_at_or_after(41), None);
        g.remove(0, 100);
        assert_eq!(g.first_at_or_after(0), None);
    }
}
