//! Which transaction markers a cleaning pass may remove (docs/compaction.md §2.8; Kafka's
//! `CleanedTransactionMetadata`): walking the log in offset order from its start, a COMMIT
//! marker is removable when no data batch of its transaction was met since the producer's
//! previous marker, an ABORT marker when no aborted batch of its transaction was met (those
//! are removed by the pass that meets them, so the ABORT marker goes in a later pass).
//! Removable markers then follow the tombstone timing (`filter.rs`).
//!
//! Plain data owned by one pass; not shared between threads.

use std::collections::HashSet;

use skiff_log::ControlType;
use skiff_records::BatchHeader;

use crate::filter::{is_aborted, AbortedRanges};

#[derive(Default)]
pub struct MarkerTracker {
    /// Producers with committed transactional data met since their last marker.
    committed_seen: HashSet<i64>,
    /// Producers with aborted data met since their last marker.
    aborted_seen: HashSet<i64>,
}

/// What the tracker says about one batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// A data batch, or a marker whose transaction still has data: keep as usual.
    Keep,
    /// A marker whose transaction left no data in the log.
    RemovableMarker(ControlType),
}

impl MarkerTracker {
    /// Call for every batch in offset order; `batch` is the stored batch.
    pub fn observe(&mut self, h: &BatchHeader, batch: &[u8], aborted: &AbortedRanges) -> Seen {
        if h.producer_id < 0 || !h.is_transactional() {
            return Seen::Keep;
        }
        if !h.is_control() {
            if is_aborted(aborted, h) {
                self.aborted_seen.insert(h.producer_id);
            } else {
                self.committed_seen.insert(h.producer_id);
            }
            return Seen::Keep;
        }
        let Some((control, _)) = skiff_log::parse_marker(batch) else {
            // Already emptied (kept as a producer's last entry): the usual rules apply.
            return Seen::Keep;
        };
        let had_data = match control {
            ControlType::Abort => self.aborted_seen.remove(&h.producer_id),
            ControlType::Commit => self.committed_seen.remove(&h.producer_id),
        };
        // A marker also ends any data of the other kind (a commit after aborted data can only
        // be a coordinator retry; the data belongs to this marker's transaction).
        self.aborted_seen.remove(&h.producer_id);
        self.committed_seen.remove(&h.producer_id);
        if had_data {
            Seen::Keep
        } else {
            Seen::RemovableMarker(control)
        }
    }
}
