//! Transactions in the log: transaction markers (control batches), the transaction index of
//! aborted transactions, and the last stable offset (LSO).
//!
//! Markers: a control batch holds one record whose key is `version i16 (0), type i16`
//! (0 = ABORT, 1 = COMMIT) and whose value is `version i16 (0), coordinator epoch i32`
//! (Kafka's `ControlRecordType` / `EndTransactionMarker`). The broker writes them with
//! [`Log::append_internal`] (or [`Log::write_txn_marker`]); the append closes the producer's open
//! transaction and, for an ABORT, adds an entry to the transaction index.
//!
//! On-disk format (Kafka's `TransactionIndex`): `<base>.txnindex` beside the segment holding the
//! ABORT marker, a sequence of 34-byte big-endian entries
//! `version i16 (0), producer id i64, first offset i64, last offset (the marker) i64,
//! last stable offset i64`. Entries are appended (no fsync under the append lock; the file is
//! fsynced by the next flush). The in-memory list (`Inner::aborted`, published to readers) is
//! the truth; files are reconciled with it at open (entries below the producer-snapshot offset
//! come from the files, the rest from replaying the log), after retention and after a cleaner
//! swap: sealed segments' files are rewritten atomically, orphans removed.
//!
//! LSO = min(high watermark, first offset of the oldest open transaction).
//!
//! KIP-890 part 1 verification guards (Kafka's `VerificationGuard`): before asking the
//! transaction coordinator whether a partition is in a producer's transaction, the broker
//! takes a guard from the log ([`Log::start_txn_verification`]); [`Log::append_verified`]
//! then writes a transactional batch only while the producer already has an open
//! transaction here or the guard is still the current one. Every transactional append (data
//! or marker) drops the producer's guard, so a marker written between the coordinator's
//! answer and the append makes that append fail (INVALID_TXN_STATE) instead of opening a
//! transaction nobody will close. Guards live in memory only (a restart drops them; the next
//! produce asks again).
//!
//! Thread-safety: in-memory state changes under the append lock; readers use the snapshot.
//! `txn_files` serialises file reconciliation.

use crate::error::{LogError, Result};
use crate::fsutil::write_atomically;
use crate::log::{Inner, Log};
use crate::producer_state::{CompletedTxn, ControlType};
use crate::recovery::{dir_files, parse_segment_name};
use crate::segment::segment_path;
use skiff_records::{records, BatchBuilder, Compression};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::PoisonError;

pub(crate) const TXN_INDEX_SUFFIX: &str = "txnindex";
/// Size of one index entry on disk.
pub const TXN_INDEX_ENTRY_LEN: usize = 34;
const ENTRY_VERSION: i16 = 0;
const CONTROL_VERSION: i16 = 0;

/// A KIP-890 verification in progress for one producer of one partition: an opaque value
/// that matches only until the next transactional append of that producer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerificationGuard(u64);

/// Whether a client append must prove its transactional batches were verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verify {
    No,
    Required(Option<VerificationGuard>),
}

/// Caller holds the append lock; `headers` passed the producer-state check. A transactional
/// data batch is refused unless its producer has an open transaction here or `guard` is the
/// producer's current guard.
pub(crate) fn check_verified(
    inner: &Inner,
    headers: &[skiff_records::BatchHeader],
    guard: Option<VerificationGuard>,
) -> Result<()> {
    for h in headers {
        if !h.is_transactional() || h.is_control() || inner.producers.has_ongoing_txn(h.producer_id)
        {
            continue;
        }
        let current = inner
            .verification
            .get(&h.producer_id)
            .map(|(g, _)| VerificationGuard(*g));
        if guard.is_none() || current != guard {
            return Err(LogError::InvalidTxnState {
                producer_id: h.producer_id,
            });
        }
    }
    Ok(())
}

/// One aborted transaction, as stored in the transaction index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// Offset of the ABORT marker.
    pub last_offset: i64,
    /// The LSO once this transaction was aborted.
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    pub fn encode(&self) -> [u8; TXN_INDEX_ENTRY_LEN] {
        let mut out = [0u8; TXN_INDEX_ENTRY_LEN];
        out[0..2].copy_from_slice(&ENTRY_VERSION.to_be_bytes());
        out[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        out[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        out[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        out[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        out
    }

    /// Decodes one entry; None for a wrong length or an unknown version.
    pub fn decode(bytes: &[u8]) -> Option<AbortedTxn> {
        let i64_at = |at: usize| {
            bytes
                .get(at..at + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(i64::from_be_bytes)
        };
        let version = bytes
            .get(0..2)
            .and_then(|b| <[u8; 2]>::try_from(b).ok())
            .map(i16::from_be_bytes)?;
        if bytes.len() != TXN_INDEX_ENTRY_LEN || version != ENTRY_VERSION {
            return None;
        }
        Some(AbortedTxn {
            producer_id: i64_at(2)?,
            first_offset: i64_at(10)?,
            last_offset: i64_at(18)?,
            last_stable_offset: i64_at(26)?,
        })
    }
}

/// Decodes a whole index file; a torn last entry or a bad version ends it.
pub fn decode_txn_index(bytes: &[u8]) -> Vec<AbortedTxn> {
    bytes
        .chunks_exact(TXN_INDEX_ENTRY_LEN)
        .map_while(AbortedTxn::decode)
        .collect()
}

/// A transaction marker batch for producer `producer_id` at `epoch`.
pub fn control_batch(
    producer_id: i64,
    epoch: i16,
    coordinator_epoch: i32,
    control: ControlType,
    timestamp: i64,
) -> Result<Vec<u8>> {
    let kind: i16 = match control {
        ControlType::Abort => 0,
        ControlType::Commit => 1,
    };
    let mut key = Vec::with_capacity(4);
    key.extend_from_slice(&CONTROL_VERSION.to_be_bytes());
    key.extend_from_slice(&kind.to_be_bytes());
    let mut value = Vec::with_capacity(6);
    value.extend_from_slice(&CONTROL_VERSION.to_be_bytes());
    value.extend_from_slice(&coordinator_epoch.to_be_bytes());
    let mut b = BatchBuilder::new(0, Compression::None)
        .producer_id(producer_id)
        .producer_epoch(epoch)
        .transactional(true)
        .control(true);
    b.push(timestamp, Some(&key), Some(&value), &[]);
    b.build()
        .map_err(|e| LogError::CorruptMessage(format!("building a transaction marker: {e}")))
}

/// The marker type and coordinator epoch of a control batch; None when it is not readable as
/// one (Kafka ignores unknown control types).
pub fn parse_marker(batch: &[u8]) -> Option<(ControlType, i32)> {
    let recs = records(batch, 1 << 20).ok()?;
    let r = recs.first()?;
    let key = r.key.as_ref()?;
    let kind = i16::from_be_bytes(<[u8; 2]>::try_from(key.get(2..4)?).ok()?);
    let control = match kind {
        0 => ControlType::Abort,
        1 => ControlType::Commit,
        _ => return None,
    };
    let coordinator_epoch = r
        .value
        .as_ref()
        .and_then(|v| v.get(2..6))
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(i32::from_be_bytes)
        .unwrap_or(-1);
    Some((control, coordinator_epoch))
}

/// Base offset of the segment holding `offset` among `bases` (ascending).
fn owner(bases: &[i64], offset: i64) -> Option<i64> {
    let i = bases.partition_point(|b| *b <= offset);
    i.checked_sub(1).and_then(|i| bases.get(i)).copied()
}

/// Reads every `.txnindex` file in `dir` (including orphans a crashed swap left).
fn read_index_files(dir: &Path) -> Result<Vec<(std::path::PathBuf, Vec<AbortedTxn>)>> {
    let mut out = Vec::new();
    for (path, name) in dir_files(dir)? {
        if parse_segment_name(&name).is_some_and(|(_, s)| s == TXN_INDEX_SUFFIX) {
            let bytes = std::fs::read(&path).map_err(|e| LogError::io("read", &path, e))?;
            out.push((path, decode_txn_index(&bytes)));
        }
    }
    Ok(out)
}

impl Log {
    /// Last stable offset: no offset at or above it belongs to an undecided transaction.
    pub fn last_stable_offset(&self) -> i64 {
        let snap = self.snapshot();
        snap.first_unstable.map_or(snap.leo, |f| f.min(snap.leo))
    }

    /// `(producer id, first offset)` of the aborted transactions that may have data in
    /// `[from, to)`: those whose marker is at or after `from` and that started before `to`.
    pub fn aborted_transactions(&self, from: i64, to: i64) -> Vec<(i64, i64)> {
        let snap = self.snapshot();
        let start = snap.aborted.partition_point(|a| a.last_offset < from);
        snap.aborted
            .get(start..)
            .unwrap_or(&[])
            .iter()
            .filter(|a| a.first_offset < to)
            .map(|a| (a.producer_id, a.first_offset))
            .collect()
    }

    /// Every aborted transaction still indexed (tests and tools).
    pub fn aborted_txn_index(&self) -> Vec<AbortedTxn> {
        self.snapshot().aborted.as_ref().clone()
    }

    /// `(producer id, first offset)` of the open transactions, oldest first.
    pub fn ongoing_transactions(&self) -> Vec<(i64, i64)> {
        self.lock().producers.ongoing()
    }

    /// Starts a KIP-890 verification for `producer_id`: `None` when the producer already has
    /// an open transaction in this partition (nothing to verify), else its guard (the existing
    /// one if a verification is already under way, as Kafka does).
    pub fn start_txn_verification(&self, producer_id: i64) -> Option<VerificationGuard> {
        let mut inner = self.lock();
        if inner.producers.has_ongoing_txn(producer_id) {
            return None;
        }
        let now = self.clock.now_ms();
        let fresh = inner.next_guard;
        let (guard, _) = *inner
            .verification
            .entry(producer_id)
            .or_insert((fresh, now));
        if guard == fresh {
            inner.next_guard += 1;
        }
        Some(VerificationGuard(guard))
    }

    /// A client append whose transactional batches must be verified: like [`Log::append`],
    /// but a transactional data batch of a producer without an open transaction here is
    /// refused with [`LogError::InvalidTxnState`] unless `guard` (from
    /// [`Log::start_txn_verification`], checked with the coordinator) is still current.
    pub fn append_verified(
        &self,
        batches: &[u8],
        leader_epoch: i32,
        validation: &crate::AppendValidation,
        guard: Option<VerificationGuard>,
    ) -> Result<crate::AppendInfo> {
        self.append_with_origin(
            batches,
            leader_epoch,
            validation.now_ms,
            crate::validate::Origin::Client,
            Verify::Required(guard),
        )
    }

    /// Drops verification guards older than `max_age_ms` (verifications that never led to
    /// an append), alongside producer expiry.
    pub(crate) fn remove_stale_guards(&self, now_ms: i64, max_age_ms: i64) {
        self.lock()
            .verification
            .retain(|_, (_, created)| now_ms.saturating_sub(*created) < max_age_ms);
    }

    /// Writes a COMMIT or ABORT marker for `producer_id` at `epoch` (the transaction
    /// coordinator's WriteTxnMarkers). Fails with INVALID_PRODUCER_EPOCH when the partition has
    /// seen a newer epoch of the producer.
    pub fn write_txn_marker(
        &self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
        control: ControlType,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<crate::AppendInfo> {
        let batch = control_batch(producer_id, epoch, coordinator_epoch, control, now_ms)?;
        self.append_internal(&batch, leader_epoch, now_ms)
    }

    /// Records closed transactions of an append (caller holds the append lock, the batches are
    /// written): aborted ones go to the in-memory index and to the marker segment's file.
    pub(crate) fn record_completed(&self, inner: &mut Inner, completed: &[CompletedTxn]) {
        let aborted: Vec<&CompletedTxn> = completed.iter().filter(|c| c.aborted).collect();
        if aborted.is_empty() {
            return;
        }
        let bases: Vec<i64> = inner.segments.iter().map(|s| s.base_offset).collect();
        let mut list = inner.aborted.as_ref().clone();
        for c in aborted {
            let lso = inner
                .producers
                .first_unstable_offset()
                .unwrap_or(inner.leo)
                .min(inner.leo);
            let entry = AbortedTxn {
                producer_id: c.producer_id,
                first_offset: c.first_offset,
                last_offset: c.last_offset,
                last_stable_offset: lso,
            };
            list.push(entry);
            let Some(base) = owner(&bases, c.last_offset) else {
                continue;
            };
            let path = segment_path(&self.dir, base, TXN_INDEX_SUFFIX);
            let written = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(&entry.encode()));
            match written {
                Ok(()) => {
                    self.txn_dirty
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(base);
                }
                // The in-memory index stays right; the next reconciliation rewrites the file.
                Err(e) => tracing::warn!(path = %path.display(), error = %e,
                    "could not append to the transaction index"),
            }
        }
        list.sort_by_key(|a| a.last_offset);
        inner.aborted = std::sync::Arc::new(list);
    }

    /// fsyncs index files appended to since the last call (flush, before snapshots).
    pub(crate) fn sync_txn_index(&self) -> Result<()> {
        let dirty = std::mem::take(
            &mut *self
                .txn_dirty
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for base in dirty {
            let path = segment_path(&self.dir, base, TXN_INDEX_SUFFIX);
            match OpenOptions::new().read(true).open(&path) {
                Ok(f) => f
                    .sync_data()
                    .map_err(|e| LogError::io("fsync transaction index", &path, e))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io("open transaction index", &path, e)),
            }
        }
        Ok(())
    }

    /// At open (single-threaded): entries below `replayed_from` come from the files, the
    /// rest from the replay of the log tail; files are then rewritten to match.
    pub(crate) fn load_txn_index(
        &self,
        inner: &mut Inner,
        replayed_from: i64,
        replayed: Vec<AbortedTxn>,
    ) -> Result<()> {
        let first_base = inner.segments.first().map_or(0, |s| s.base_offset);
        let limit = replayed_from.min(inner.leo);
        let mut set: BTreeSet<(i64, i64, i64, i64)> = BTreeSet::new();
        for (_, entries) in read_index_files(&self.dir)? {
            for a in entries {
                if a.last_offset < limit && a.last_offset >= first_base {
                    set.insert((
                        a.last_offset,
                        a.producer_id,
                        a.first_offset,
                        a.last_stable_offset,
                    ));
                }
            }
        }
        for a in replayed {
            set.insert((
                a.last_offset,
                a.producer_id,
                a.first_offset,
                a.last_stable_offset,
            ));
        }
        let list: Vec<AbortedTxn> = set
            .into_iter()
            .map(|(l, p, f, s)| AbortedTxn {
                producer_id: p,
                first_offset: f,
                last_offset: l,
                last_stable_offset: s,
            })
            .collect();
        inner.aborted = std::sync::Arc::new(list);
        let bases: Vec<i64> = inner.segments.iter().map(|s| s.base_offset).collect();
        write_files(&self.dir, &bases, &inner.aborted, None)
    }

    /// The cleaner is about to remove these ABORT markers (their aborted data is already
    /// gone): their index entries go first, in memory and in the sealed segments' files, so
    /// no reader is told about a transaction whose marker it will not find.
    pub fn forget_aborted_txns(&self, marker_offsets: &[i64]) -> Result<()> {
        if marker_offsets.is_empty() {
            return Ok(());
        }
        {
            let mut inner = self.lock();
            let kept: Vec<AbortedTxn> = inner
                .aborted
                .iter()
                .filter(|a| !marker_offsets.contains(&a.last_offset))
                .copied()
                .collect();
            if kept.len() != inner.aborted.len() {
                inner.aborted = std::sync::Arc::new(kept);
                self.publish(&inner);
            }
        }
        self.reconcile_txn_index()
    }

    /// After retention or a cleaner swap: drops entries of removed segments and rewrites the
    /// sealed segments' files (the active one only receives appends).
    pub(crate) fn reconcile_txn_index(&self) -> Result<()> {
        let _files = self
            .txn_files
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (bases, list) = {
            let mut inner = self.lock();
            let first_base = inner.segments.first().map_or(0, |s| s.base_offset);
            if inner
                .aborted
                .first()
                .is_some_and(|a| a.last_offset < first_base)
            {
                let kept: Vec<AbortedTxn> = inner
                    .aborted
                    .iter()
                    .filter(|a| a.last_offset >= first_base)
                    .copied()
                    .collect();
                inner.aborted = std::sync::Arc::new(kept);
                self.publish(&inner);
            }
            let bases: Vec<i64> = inner.segments.iter().map(|s| s.base_offset).collect();
            (bases, inner.aborted.clone())
        };
        let active = bases.last().copied();
        write_files(&self.dir, &bases, &list, active)
    }
}

/// Makes the `.txnindex` files of `dir` hold exactly `list` grouped by segment (skipping the
/// segment `skip`); files of missing segments and empty ones are removed.
fn write_files(dir: &Path, bases: &[i64], list: &[AbortedTxn], skip: Option<i64>) -> Result<()> {
    let mut want: BTreeMap<i64, Vec<u8>> = BTreeMap::new();
    for a in list {
        if let Some(base) = owner(bases, a.last_offset) {
            want.entry(base).or_default().extend_from_slice(&a.encode());
        }
    }
    let mut present: BTreeSet<i64> = BTreeSet::new();
    for (path, name) in dir_files(dir)? {
        let Some((base, suffix)) = parse_segment_name(&name) else {
            continue;
        };
        if suffix != TXN_INDEX_SUFFIX || Some(base) == skip {
            continue;
        }
        present.insert(base);
        let current = std::fs::read(&path).map_err(|e| LogError::io("read", &path, e))?;
        match want.get(&base) {
            Some(bytes) if *bytes == current => {}
            Some(bytes) => write_atomically(&path, bytes)?,
            None => std::fs::remove_file(&path)
                .map_err(|e| LogError::io("remove transaction index", &path, e))?,
        }
    }
    for (base, bytes) in want {
        if !present.contains(&base) && Some(base) != skip {
            write_atomically(&segment_path(dir, base, TXN_INDEX_SUFFIX), &bytes)?;
        }
    }
    Ok(())
}
