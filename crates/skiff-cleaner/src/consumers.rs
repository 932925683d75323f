//! Tombstones that wait for consumers (`skiff.tombstone.wait.for.consumers`, Skiff's own
//! topic config; docs/compaction.md §5.10): a tombstone past its delete horizon is kept while
//! some consumer group with a committed offset on the partition has not committed past it, until
//! the horizon plus `skiff.tombstone.wait.max.ms` (so a dead group cannot hold tombstones back
//! forever).
//!
//! The committed offsets come from the broker through [`GroupOffsetsSource`], read once per
//! pass (before the rewrite). [`ConsumerHold`] is plain data, used by the filter; thread-safe.

use std::collections::BTreeMap;

/// The group coordinator's committed offsets, as the cleaner needs them.
pub trait GroupOffsetsSource: Send + Sync {
    /// `(group id, committed offset)` of every group with an offset committed on the
    /// partition; `None` when they are not known yet (the coordinator is still loading), in
    /// which case every held tombstone is kept.
    fn committed(&self, topic: &str, partition: i32) -> Option<Vec<(String, i64)>>;
}

/// Group id reported as the holder while the committed offsets are unknown.
pub const UNKNOWN_GROUPS: &str = "<committed offsets not loaded>";

/// How many holding groups a status or `/metrics` names: the ones holding most tombstones.
/// Bounded so that a partition read by thousands of groups cannot blow up label cardinality.
pub const TOP_HOLDERS: usize = 5;

/// The consumer rule of one pass.
#[derive(Clone, Debug, PartialEq)]
pub struct ConsumerHold {
    /// `skiff.tombstone.wait.max.ms`.
    pub max_wait_ms: i64,
    /// The committed offsets; `None`: unknown (everything held).
    pub committed: Option<Vec<(String, i64)>>,
}

impl ConsumerHold {
    /// The groups holding back a tombstone at `offset` whose delete horizon is `horizon_ms`,
    /// at `now_ms`: empty when it may go. A group holds it while its committed offset (the next
    /// offset it will read) is at or below `offset`.
    pub fn holders(&self, offset: i64, horizon_ms: i64, now_ms: i64) -> Vec<&str> {
        if now_ms >= horizon_ms.saturating_add(self.max_wait_ms.max(0)) {
            return Vec::new();
        }
        match &self.committed {
            None => vec![UNKNOWN_GROUPS],
            Some(list) => list
                .iter()
                .filter(|(_, committed)| *committed <= offset)
                .map(|(g, _)| g.as_str())
                .collect(),
        }
    }
}

/// Tombstones held back per group, summed over a pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeldBack {
    /// Tombstones past their delete horizon kept only because of consumers.
    pub tombstones: u64,
    /// Per group: how many of those it holds back.
    pub by_group: BTreeMap<String, u64>,
}

impl HeldBack {
    pub fn add(&mut self, holders: &[&str]) {
        self.tombstones += 1;
        for g in holders {
            *self.by_group.entry((*g).to_string()).or_default() += 1;
        }
    }

    pub fn merge(&mut self, other: &HeldBack) {
        self.tombstones += other.tombstones;
        for (g, n) in &other.by_group {
            *self.by_group.entry(g.clone()).or_default() += n;
        }
    }

    /// At most [`TOP_HOLDERS`] groups, most tombstones first (ties by group id).
    pub fn top(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> =
            self.by_group.iter().map(|(g, n)| (g.clone(), *n)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v.truncate(TOP_HOLDERS);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(list: &[(&str, i64)]) -> ConsumerHold {
        ConsumerHold {
            max_wait_ms: 100,
            committed: Some(list.iter().map(|(g, o)| (g.to_string(), *o)).collect()),
        }
    }

    #[test]
    fn a_group_at_or_below_the_offset_holds_it() {
        let h = hold(&[("fast", 11), ("slow", 10)]);
        assert_eq!(h.holders(10, 0, 50), vec!["slow"]);
        assert!(h.holders(9, 0, 50).is_empty());
        assert_eq!(h.holders(11, 0, 50), vec!["fast", "slow"]);
    }

    #[test]
    fn the_bound_frees_everything() {
        let h = hold(&[("slow", 0)]);
        assert_eq!(h.holders(10, 1_000, 1_099), vec!["slow"]);
        assert!(h.holders(10, 1_000, 1_100).is_empty());
    }

    #[test]
    fn unknown_offsets_hold_until_the_bound() {
        let h = ConsumerHold {
            max_wait_ms: 10,
            committed: None,
        };
        assert_eq!(h.holders(5, 0, 9), vec![UNKNOWN_GROUPS]);
        assert!(h.holders(5, 0, 10).is_empty());
    }

    #[test]
    fn top_is_bounded_and_sorted() {
        let mut held = HeldBack::default();
        for i in 0..10u64 {
            for _ in 0..i {
                held.add(&[&format!("g{i}")]);
            }
        }
        let top = held.top();
        assert_eq!(top.len(), TOP_HOLDERS);
        assert_eq!(top[0], ("g9".to_string(), 9));
    }
}
