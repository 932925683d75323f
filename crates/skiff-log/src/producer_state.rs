//! Per-partition state of idempotent (and, later, transactional) producers, following Kafka's
//! `ProducerStateManager` / `ProducerAppendInfo`: for each producer id its epoch, the last five
//! appended batches (sequence range, offset range, timestamp) and the last timestamp. It is
//! what lets a retried batch be answered with its original offsets instead of being appended
//! twice, and what rejects stale epochs and sequence gaps.
//!
//! The rules (Kafka 4.x, client appends): a batch whose epoch and sequence range equal one of
//! the producer's last five batches is a duplicate (nothing is written, the original offsets
//! are returned). Otherwise an epoch older than the current one is INVALID_PRODUCER_EPOCH; a
//! new epoch must start at sequence 0 unless the producer is unknown; within an epoch the
//! first sequence must follow the last one (wrapping from `i32::MAX` to 0), else
//! OUT_OF_ORDER_SEQUENCE_NUMBER. An unknown producer is accepted at any sequence (its state may
//! have expired or been removed with old segments), so the broker never answers
//! UNKNOWN_PRODUCER_ID for a produce, as in Kafka since KIP-360.
//!
//! Transactions: a transactional data batch opens the producer's transaction at its base offset
//! (`current_txn_first_offset`) unless one is open; a COMMIT/ABORT marker (a control batch the
//! broker writes) closes it, records the coordinator epoch, and for an ABORT yields the
//! `(producer id, first offset)` that goes into the transaction index. The oldest open
//! transaction bounds the last stable offset.
//!
//! Thread-safety: plain data, owned by the log's `Inner` and changed only under the append
//! lock. The on-disk snapshot format is in `producer_snapshot.rs`.

use crate::error::{LogError, Result};
use skiff_records::BatchHeader;
use std::collections::{BTreeSet, HashMap, VecDeque};

/// Kafka's `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`: the producer keeps at most five
/// batches in flight per partition, so five are enough to recognise any retry.
pub const BATCHES_TO_RETAIN: usize = 5;
/// Kafka's `RecordBatch.NO_PRODUCER_EPOCH`.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// Kafka's `RecordBatch.NO_SEQUENCE`.
pub const NO_SEQUENCE: i32 = -1;

/// One appended batch of a producer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchMetadata {
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    /// The batch's max timestamp as stored (the append time on LogAppendTime topics).
    pub timestamp: i64,
}

/// What the log remembers about one producer id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerEntry {
    pub producer_id: i64,
    pub epoch: i16,
    /// Oldest first, at most [`BATCHES_TO_RETAIN`], all of `epoch`.
    pub batches: VecDeque<BatchMetadata>,
    /// Timestamp of the last batch or marker: expiry is measured from it.
    pub last_timestamp: i64,
    /// Coordinator epoch of the last transaction marker (-1 before any).
    pub coordinator_epoch: i32,
    /// First offset of the producer's open transaction, if any.
    pub current_txn_first_offset: Option<i64>,
}

impl ProducerEntry {
    fn empty(producer_id: i64) -> ProducerEntry {
        ProducerEntry {
            producer_id,
            epoch: NO_PRODUCER_EPOCH,
            batches: VecDeque::new(),
            last_timestamp: -1,
            coordinator_epoch: -1,
            current_txn_first_offset: None,
        }
    }

    /// Last sequence of the newest batch, or [`NO_SEQUENCE`].
    pub fn last_seq(&self) -> i32 {
        self.batches.back().map_or(NO_SEQUENCE, |b| b.last_seq)
    }

    /// A new epoch forgets the batches of the old one (their sequences restart at 0).
    fn set_epoch(&mut self, epoch: i16) {
        if epoch != self.epoch {
            self.epoch = epoch;
            self.batches.clear();
        }
    }

    fn add_batch(&mut self, epoch: i16, batch: BatchMetadata) {
        self.set_epoch(epoch);
        self.batches.push_back(batch);
        while self.batches.len() > BATCHES_TO_RETAIN {
            self.batches.pop_front();
        }
        self.last_timestamp = batch.timestamp;
    }

    /// The retained batch with exactly this epoch and sequence range.
    fn find_duplicate(&self, epoch: i16, first_seq: i32, last_seq: i32) -> Option<BatchMetadata> {
        if epoch != self.epoch {
            return None;
        }
        self.batches
            .iter()
            .find(|b| b.first_seq == first_seq && b.last_seq == last_seq)
            .copied()
    }
}

/// Last sequence of a batch of `last_offset_delta + 1` records starting at `base`; sequences
/// wrap from `i32::MAX` to 0 (Kafka's `DefaultRecordBatch.incrementSequence`).
pub fn increment_sequence(base: i32, delta: i32) -> i32 {
    if base > i32::MAX - delta {
        delta - (i32::MAX - base) - 1
    } else {
        base + delta
    }
}

/// `next` directly follows `last`, wrapping at `i32::MAX`.
fn in_sequence(last: i32, next: i32) -> bool {
    i64::from(next) == i64::from(last) + 1 || (next == 0 && last == i32::MAX)
}

/// Outcome of checking an append against the producer state.
#[derive(Debug)]
pub(crate) enum ProducerCheck {
    /// Write the batches, then commit these updated entries.
    Append(Vec<ProducerEntry>),
    /// A retry of an already appended batch: write nothing, answer with its offsets.
    Duplicate(BatchMetadata),
}

/// The producers of one partition, and the offset their state is complete up to.
#[derive(Clone, Debug, Default)]
pub(crate) struct ProducerStateManager {
    producers: HashMap<i64, ProducerEntry>,
    /// Every batch below this offset has been applied.
    map_end_offset: i64,
    /// `(first offset, producer id)` of every open transaction: the first is the oldest.
    ongoing: BTreeSet<(i64, i64)>,
}

/// The kind of a transaction marker (Kafka's `ControlRecordType`, key field `type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlType {
    Abort,
    Commit,
}

/// A transaction closed by a marker: what the transaction index needs about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompletedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// Offset of the marker.
    pub last_offset: i64,
    pub aborted: bool,
}

impl ProducerStateManager {
    pub fn new(map_end_offset: i64) -> ProducerStateManager {
        ProducerStateManager {
            producers: HashMap::new(),
            map_end_offset,
            ongoing: BTreeSet::new(),
        }
    }

    pub fn from_entries(entries: Vec<ProducerEntry>, map_end_offset: i64) -> Self {
        let ongoing = entries
            .iter()
            .filter_map(|e| e.current_txn_first_offset.map(|f| (f, e.producer_id)))
            .collect();
        ProducerStateManager {
            producers: entries.into_iter().map(|e| (e.producer_id, e)).collect(),
            map_end_offset,
            ongoing,
        }
    }

    /// First offset of the oldest open transaction: the last stable offset can not pass it.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.ongoing.first().map(|(offset, _)| *offset)
    }

    /// Whether `producer_id` has an open transaction in this partition.
    pub fn has_ongoing_txn(&self, producer_id: i64) -> bool {
        self.producers
            .get(&producer_id)
            .is_some_and(|e| e.current_txn_first_offset.is_some())
    }

    /// `(producer id, first offset)` of every open transaction, oldest first.
    pub fn ongoing(&self) -> Vec<(i64, i64)> {
        self.ongoing.iter().map(|(o, p)| (*p, *o)).collect()
    }

    /// Installs `entry`, keeping the set of open transactions in step.
    fn put(&mut self, entry: ProducerEntry) {
        if let Some(old) = self.producers.get(&entry.producer_id) {
            if let Some(f) = old.current_txn_first_offset {
                self.ongoing.remove(&(f, entry.producer_id));
            }
        }
        if let Some(f) = entry.current_txn_first_offset {
            self.ongoing.insert((f, entry.producer_id));
        }
        self.producers.insert(entry.producer_id, entry);
    }

    /// Checks a transaction marker of producer `h.producer_id` that would be written at
    /// `offset` (Kafka's `ProducerAppendInfo.appendEndTxnMarker`): an older producer epoch is
    /// fenced (INVALID_PRODUCER_EPOCH), an older coordinator epoch is refused. Returns the
    /// updated entry and the transaction it closes, if one was open.
    pub fn check_marker(
        &self,
        h: &BatchHeader,
        control: ControlType,
        coordinator_epoch: i32,
        offset: i64,
    ) -> Result<(ProducerEntry, Option<CompletedTxn>)> {
        let mut entry = self
            .producers
            .get(&h.producer_id)
            .cloned()
            .unwrap_or_else(|| ProducerEntry::empty(h.producer_id));
        if h.producer_epoch < entry.epoch {
            return Err(LogError::InvalidProducerEpoch {
                producer_id: h.producer_id,
                epoch: h.producer_epoch,
                current: entry.epoch,
            });
        }
        if coordinator_epoch < entry.coordinator_epoch {
            return Err(LogError::InvalidRecord {
                message: format!(
                    "transaction marker for producer {} has coordinator epoch {coordinator_epoch}, \
                     older than {}",
                    h.producer_id, entry.coordinator_epoch
                ),
                record_errors: Vec::new(),
            });
        }
        let completed = apply_marker(&mut entry, h, control, coordinator_epoch, offset);
        Ok((entry, completed))
    }

    pub fn map_end_offset(&self) -> i64 {
        self.map_end_offset
    }

    /// Entries sorted by producer id (stable snapshots and test output).
    pub fn entries(&self) -> Vec<ProducerEntry> {
        let mut v: Vec<ProducerEntry> = self.producers.values().cloned().collect();
        v.sort_by_key(|e| e.producer_id);
        v
    }

    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// Checks a client append of `batches` that would start at offset `first_offset`.
    /// `timestamp_of` gives the timestamp each batch will be stored with. Nothing changes
    /// until [`ProducerStateManager::commit`].
    pub fn check_append(
        &self,
        batches: &[BatchHeader],
        first_offset: i64,
        timestamp_of: impl Fn(&BatchHeader) -> i64,
    ) -> Result<ProducerCheck> {
        let mut updated: HashMap<i64, ProducerEntry> = HashMap::new();
        let mut next = first_offset;
        for h in batches {
            let base = next;
            let last = base + i64::from(h.last_offset_delta);
            next = last + 1;
            if h.producer_id < 0 {
                continue;
            }
            if h.base_sequence < 0 {
                return Err(LogError::InvalidRecord {
                    message: format!(
                        "invalid sequence number {} in record batch with producer id {}",
                        h.base_sequence, h.producer_id
                    ),
                    record_errors: Vec::new(),
                });
            }
            let last_seq = increment_sequence(h.base_sequence, h.last_offset_delta);
            let current = self.producers.get(&h.producer_id);
            if let Some(dup) =
                current.and_then(|c| c.find_duplicate(h.producer_epoch, h.base_sequence, last_seq))
            {
                return Ok(ProducerCheck::Duplicate(dup));
            }
            let entry = updated.entry(h.producer_id).or_insert_with(|| {
                current
                    .cloned()
                    .unwrap_or_else(|| ProducerEntry::empty(h.producer_id))
            });
            check_epoch_and_sequence(entry, h, base)?;
            if h.is_transactional() && entry.current_txn_first_offset.is_none() {
                entry.current_txn_first_offset = Some(base);
            }
            entry.add_batch(
                h.producer_epoch,
                BatchMetadata {
                    first_seq: h.base_sequence,
                    last_seq,
                    first_offset: base,
                    last_offset: last,
                    timestamp: timestamp_of(h),
                },
            );
        }
        Ok(ProducerCheck::Append(updated.into_values().collect()))
    }

    /// Installs the entries of a checked append that reached the log; `end_offset` is the
    /// log end offset after it.
    pub fn commit(&mut self, entries: Vec<ProducerEntry>, end_offset: i64) {
        for e in entries {
            self.put(e);
        }
        self.map_end_offset = self.map_end_offset.max(end_offset);
    }

    /// Rebuilds state from a stored batch header (recovery): no validation, as Kafka does for
    /// replayed data. A control batch (with its marker, when readable) closes the producer's
    /// transaction; the closed transaction is returned.
    pub fn replay(
        &mut self,
        h: &BatchHeader,
        marker: Option<(ControlType, i32)>,
    ) -> Option<CompletedTxn> {
        self.map_end_offset = self.map_end_offset.max(h.last_offset() + 1);
        if h.producer_id < 0 {
            return None;
        }
        let mut entry = self
            .producers
            .get(&h.producer_id)
            .cloned()
            .unwrap_or_else(|| ProducerEntry::empty(h.producer_id));
        if h.is_control() {
            let (control, coordinator_epoch) =
                marker.unwrap_or((ControlType::Commit, entry.coordinator_epoch));
            let completed = apply_marker(&mut entry, h, control, coordinator_epoch, h.base_offset);
            self.put(entry);
            return completed;
        }
        if h.is_transactional() && entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(h.base_offset);
        }
        entry.add_batch(
            h.producer_epoch,
            BatchMetadata {
                first_seq: h.base_sequence,
                last_seq: increment_sequence(h.base_sequence, h.last_offset_delta),
                first_offset: h.base_offset,
                last_offset: h.last_offset(),
                timestamp: h.max_timestamp,
            },
        );
        self.put(entry);
        None
    }

    /// `producer.id.expiration.ms`: forgets producers idle for at least `expiration_ms` (by
    /// their last batch timestamp) that have no open transaction. Returns how many went.
    pub fn remove_expired(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers.retain(|_, e| {
            e.current_txn_first_offset.is_some()
                || now_ms.saturating_sub(e.last_timestamp) < expiration_ms
        });
        before - self.producers.len()
    }
}

/// Closes `entry`'s transaction with a marker at `offset`; returns it if one was open.
fn apply_marker(
    entry: &mut ProducerEntry,
    h: &BatchHeader,
    control: ControlType,
    coordinator_epoch: i32,
    offset: i64,
) -> Option<CompletedTxn> {
    entry.set_epoch(h.producer_epoch);
    entry.last_timestamp = h.max_timestamp;
    entry.coordinator_epoch = coordinator_epoch;
    let first = entry.current_txn_first_offset.take()?;
    Some(CompletedTxn {
        producer_id: h.producer_id,
        first_offset: first,
        last_offset: offset,
        aborted: control == ControlType::Abort,
    })
}

/// Kafka's `checkProducerEpoch` + `checkSequence` for a client data batch at `offset`.
fn check_epoch_and_sequence(entry: &ProducerEntry, h: &BatchHeader, offset: i64) -> Result<()> {
    let pid = h.producer_id;
    if h.producer_epoch < entry.epoch {
        return Err(LogError::InvalidProducerEpoch {
            producer_id: pid,
            epoch: h.producer_epoch,
            current: entry.epoch,
        });
    }
    if h.producer_epoch != entry.epoch {
        if h.base_sequence != 0 && entry.epoch != NO_PRODUCER_EPOCH {
            return Err(LogError::OutOfOrderSequence {
                producer_id: pid,
                offset,
                message: format!(
                    "sequence {} for new epoch {} (current epoch {}) must be 0",
                    h.base_sequence, h.producer_epoch, entry.epoch
                ),
            });
        }
        return Ok(());
    }
    let last = entry.last_seq();
    if !in_sequence(last, h.base_sequence) {
        return Err(LogError::OutOfOrderSequence {
            producer_id: pid,
            offset,
            message: format!(
                "sequence {} does not follow the last appended sequence {last} (epoch {})",
                h.base_sequence, entry.epoch
            ),
        });
    }
    Ok(())
}
