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
//! This file: the marker and index formats and the index files. The `Log` side (recording
//! aborted transactions, reconciling the files, LSO queries, verification guards) is
//! `log/txn.rs`.
//!
//! Thread-safety: in-memory state changes under the append lock; readers use the snapshot.
//! `txn_files` serialises file reconciliation.
//!
//! [`Log::append_internal`]: crate::Log::append_internal
//! [`Log::write_txn_marker`]: crate::Log::write_txn_marker
//! [`Log::start_txn_verification`]: crate::Log::start_txn_verification
//! [`Log::append_verified`]: crate::Log::append_verified

use crate::error::{LogError, Result};
use crate::fsutil::write_atomically;
use crate::producer_state::ControlType;
use crate::recovery::{dir_files, parse_segment_name};
use crate::segment::segment_path;
use skiff_records::{records, BatchBuilder, Compression};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

pub(crate) const TXN_INDEX_SUFFIX: &str = "txnindex";
/// Size of one index entry on disk.
pub const TXN_INDEX_ENTRY_LEN: usize = 34;
const ENTRY_VERSION: i16 = 0;
const CONTROL_VERSION: i16 = 0;

/// A KIP-890 verification in progress for one producer of one partition: an opaque value
/// that matches only until the next transactional append of that producer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerificationGuard(pub(crate) u64);

/// Whether a client append must prove its transactional batches were verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verify {
    No,
    Required(Option<VerificationGuard>),
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
pub(crate) fn owner(bases: &[i64], offset: i64) -> Option<i64> {
    let i = bases.partition_point(|b| *b <= offset);
    i.checked_sub(1).and_then(|i| bases.get(i)).copied()
}

/// Reads every `.txnindex` file in `dir` (including orphans a crashed swap left).
pub(crate) fn read_index_files(dir: &Path) -> Result<Vec<(std::path::PathBuf, Vec<AbortedTxn>)>> {
    let mut out = Vec::new();
    for (path, name) in dir_files(dir)? {
        if parse_segment_name(&name).is_some_and(|(_, s)| s == TXN_INDEX_SUFFIX) {
            let bytes = std::fs::read(&path).map_err(|e| LogError::io("read", &path, e))?;
            out.push((path, decode_txn_index(&bytes)));
        }
    }
    Ok(out)
}

/// Makes the `.txnindex` files of `dir` hold exactly `list` grouped by segment (skipping the
/// segment `skip`); files of missing segments and empty ones are removed.
pub(crate) fn write_files(
    dir: &Path,
    bases: &[i64],
    list: &[AbortedTxn],
    skip: Option<i64>,
) -> Result<()> {
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
