//! Appends: validate, (re)compress, check producer state, stamp offsets, leader epoch and
//! LogAppendTime, roll when a roll rule says so, write and index; and rolls by segment age.
//!
//! Thread-safety: validation and recompression run before the append lock is taken; the
//! producer-state check, stamping, writing and publishing run under it (the functions doing
//! so are methods of [`AppendLocked`]). Producer snapshots queued by a roll are written, and
//! the `flush.messages` flush runs, after the lock is released.

use super::{AppendInfo, AppendLocked, AppendValidation, Log, CLOSED};
use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::producer_state::{CompletedTxn, ProducerCheck, ProducerEntry};
use crate::recompress::recompress_for_topic;
use crate::segment::{BatchMeta, Segment};
use crate::txn_index::{parse_marker, VerificationGuard, Verify};
use crate::validate::{validate_append, Origin};
use skiff_records::{
    stamp_base_offset, stamp_leader_epoch, stamp_log_append_time, BatchHeader, TimestampType,
};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Log {
    /// Validates `batches` (a produce payload of whole batches), stamps offsets, leader epoch
    /// and LogAppendTime, and writes them. Nothing is written when any batch is rejected.
    pub fn append(
        &self,
        batches: &[u8],
        leader_epoch: i32,
        validation: &AppendValidation,
    ) -> Result<AppendInfo> {
        self.append_with_origin(
            batches,
            leader_epoch,
            validation.now_ms,
            Origin::Client,
            Verify::No,
        )
    }

    /// Appends batches written by the broker itself (group/offset records, transaction
    /// markers): framing, CRC and sizes are checked, but not the client-only rules (base
    /// offset 0, no control batches, keys on compacted topics, timestamp bounds). A marker
    /// (control batch) closes its producer's transaction; an older producer epoch is refused.
    pub fn append_internal(
        &self,
        batches: &[u8],
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        self.append_with_origin(batches, leader_epoch, now_ms, Origin::Internal, Verify::No)
    }

    /// A client append whose transactional batches must be verified: like [`Log::append`],
    /// but a transactional data batch of a producer without an open transaction here is
    /// refused with [`LogError::InvalidTxnState`] unless `guard` (from
    /// [`Log::start_txn_verification`], checked with the coordinator) is still current.
    pub fn append_verified(
        &self,
        batches: &[u8],
        leader_epoch: i32,
        validation: &AppendValidation,
        guard: Option<VerificationGuard>,
    ) -> Result<AppendInfo> {
        self.append_with_origin(
            batches,
            leader_epoch,
            validation.now_ms,
            Origin::Client,
            Verify::Required(guard),
        )
    }

    fn append_with_origin(
        &self,
        batches: &[u8],
        leader_epoch: i32,
        now: i64,
        origin: Origin,
        verify: Verify,
    ) -> Result<AppendInfo> {
        let config = self.config_arc();
        let validated = validate_append(batches, &config, now, origin)?;
        let (mut buf, validated) = match origin {
            Origin::Client => match recompress_for_topic(batches, &validated, &config)? {
                // Sizes and CRCs of the rebuilt batches are checked again (Kafka does too).
                Some(rebuilt) => {
                    let checked = validate_append(&rebuilt, &config, now, Origin::Internal)?;
                    (rebuilt, checked)
                }
                None => (batches.to_vec(), validated),
            },
            Origin::Internal => (batches.to_vec(), validated),
        };
        let log_append_time = config.message_timestamp_type == TimestampType::LogAppendTime;

        let mut inner = self.lock();
        if let Some(why) = &inner.offline {
            if why == CLOSED {
                self.appends_after_close.fetch_add(1, Ordering::Relaxed);
            }
            return Err(LogError::Offline(why.clone()));
        }
        let first_offset = inner.leo;
        let producer_updates = match origin {
            Origin::Client => {
                let headers: Vec<_> = validated.iter().map(|(h, _)| *h).collect();
                let stored_ts = |h: &BatchHeader| {
                    if log_append_time {
                        now
                    } else {
                        h.max_timestamp
                    }
                };
                match inner
                    .producers
                    .check_append(&headers, first_offset, stored_ts)?
                {
                    ProducerCheck::Append(updates) => {
                        if let Verify::Required(guard) = verify {
                            inner.check_verified(&headers, guard)?;
                        }
                        updates
                    }
                    ProducerCheck::Duplicate(dup) => {
                        return Ok(AppendInfo {
                            first_offset: dup.first_offset,
                            last_offset: dup.last_offset,
                            log_append_time: None,
                            log_start_offset: inner.log_start,
                            max_timestamp: dup.timestamp,
                            bytes: 0,
                            duplicate: true,
                        });
                    }
                }
            }
            Origin::Internal => Vec::new(),
        };
        let (producer_updates, completed) = match origin {
            Origin::Client => (producer_updates, Vec::new()),
            Origin::Internal => inner.check_markers(&buf, &validated, first_offset)?,
        };
        let mut next = first_offset;
        let mut metas = Vec::with_capacity(validated.len());
        let mut pos = 0usize;
        let mut max_timestamp = -1i64;
        for (h, len) in &validated {
            let Some(batch) = buf.get_mut(pos..pos + len) else {
                return Err(LogError::CorruptMessage("batch bounds changed".to_string()));
            };
            stamp_base_offset(batch, next);
            stamp_leader_epoch(batch, leader_epoch);
            let ts = if log_append_time {
                stamp_log_append_time(batch, now);
                now
            } else {
                h.max_timestamp
            };
            max_timestamp = max_timestamp.max(ts);
            let last = next + i64::from(h.last_offset_delta);
            metas.push(BatchMeta {
                position: pos as u64,
                size: *len as u64,
                last_offset: last,
                max_timestamp: ts,
            });
            pos += len;
            next = last + 1;
        }
        if let Err(e) = inner.write_batches(&buf, &metas, &config) {
            if matches!(e, LogError::Io { .. }) {
                tracing::error!(dir = %self.dir.display(), error = %e,
                    "write failed; log taken offline");
                inner.offline = Some(e.to_string());
            }
            return Err(e);
        }
        inner.leo = next;
        inner.producers.commit(producer_updates, next);
        if !inner.verification.is_empty() {
            // A data batch opened the transaction, a marker closed it: either way the guard
            // has served (Kafka's `updateProducers`).
            for (h, _) in &validated {
                if h.is_transactional() {
                    inner.verification.remove(&h.producer_id);
                }
            }
        }
        inner.record_completed(&completed);
        inner.publish();
        let log_start_offset = inner.log_start;
        drop(inner);
        self.key_index_after_append(&buf, first_offset);
        self.write_pending_snapshots()?;

        if next - self.flushed.load(Ordering::Acquire) >= config.flush_messages {
            self.flush()?;
        }
        Ok(AppendInfo {
            first_offset,
            last_offset: next - 1,
            log_append_time: log_append_time.then_some(now),
            log_start_offset,
            max_timestamp,
            bytes: buf.len(),
            duplicate: false,
        })
    }

    /// Rolls a non-empty active segment whose age exceeds `segment.ms` (minus jitter) by the
    /// wall clock. Returns whether it rolled.
    pub fn roll_if_due(&self) -> Result<bool> {
        let config = self.config_arc();
        let now = self.clock.now_ms();
        let mut inner = self.lock();
        if let Some(why) = &inner.offline {
            return Err(LogError::Offline(why.clone()));
        }
        let active = inner.active()?;
        if !active.roll_due_at(&config, now) {
            return Ok(false);
        }
        let leo = inner.leo;
        inner.roll(leo, &config, now)?;
        inner.publish();
        drop(inner);
        self.write_pending_snapshots()?;
        Ok(true)
    }
}

impl AppendLocked<'_> {
    /// Producer-state effects of the markers among broker-written batches that would start at
    /// `first_offset`: the updated entries and the transactions they close.
    pub(super) fn check_markers(
        &self,
        buf: &[u8],
        validated: &[(BatchHeader, usize)],
        first_offset: i64,
    ) -> Result<(Vec<ProducerEntry>, Vec<CompletedTxn>)> {
        if !validated.iter().any(|(h, _)| h.is_control()) {
            return Ok((Vec::new(), Vec::new()));
        }
        let mut state = self.producers.clone();
        let mut entries = Vec::new();
        let mut completed = Vec::new();
        let (mut pos, mut next) = (0usize, first_offset);
        for (h, len) in validated {
            let offset = next;
            next += i64::from(h.last_offset_delta) + 1;
            let batch = buf.get(pos..pos + len).unwrap_or(&[]);
            pos += len;
            if !h.is_control() || h.producer_id < 0 {
                continue;
            }
            let Some((control, coordinator_epoch)) = parse_marker(batch) else {
                continue;
            };
            let (entry, closed) = state.check_marker(h, control, coordinator_epoch, offset)?;
            state.commit(vec![entry.clone()], next);
            entries.push(entry);
            completed.extend(closed);
        }
        Ok((entries, completed))
    }

    /// Writes stamped batches to the active segment, rolling before any batch that would
    /// break a roll rule. Consecutive batches going to one segment are written at once.
    pub(super) fn write_batches(
        &mut self,
        buf: &[u8],
        metas: &[BatchMeta],
        config: &LogConfig,
    ) -> Result<()> {
        let now = self.log().clock.now_ms();
        let segment_bytes = u64::try_from(config.segment_bytes).unwrap_or(0);
        let mut group_start = 0usize; // first batch not yet written
        let mut active = self.active()?;
        let mut base_pos = active.size();
        for (i, m) in metas.iter().enumerate() {
            let must_roll = if group_start == i {
                active.should_roll(m.size, m.max_timestamp, m.last_offset, config, now)
            } else {
                // Later batches of the same append: only the size and offset-range rules can
                // force a split (Kafka checks once per append; we never exceed its limits).
                let pending: u64 = metas[group_start..i].iter().map(|p| p.size).sum();
                let split = base_pos + pending + m.size > segment_bytes
                    || m.last_offset - active.base_offset > i64::from(i32::MAX);
                if split {
                    self.write_group(&active, buf, &metas[group_start..i], base_pos, now)?;
                    group_start = i;
                }
                split
            };
            if must_roll {
                let new_base = batch_base(buf, m);
                self.roll(new_base, config, now)?;
                active = self.active()?;
                base_pos = active.size();
            }
        }
        self.write_group(&active, buf, &metas[group_start..], base_pos, now)
    }

    fn write_group(
        &self,
        active: &Segment,
        buf: &[u8],
        group: &[BatchMeta],
        base_pos: u64,
        now: i64,
    ) -> Result<()> {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            return Ok(());
        };
        let start = usize::try_from(first.position).unwrap_or(usize::MAX);
        let end = usize::try_from(last.position + last.size).unwrap_or(usize::MAX);
        let Some(bytes) = buf.get(start..end) else {
            return Ok(());
        };
        let metas: Vec<BatchMeta> = group
            .iter()
            .map(|m| BatchMeta {
                position: base_pos + (m.position - first.position),
                ..*m
            })
            .collect();
        active.append(self, bytes, &metas, now)
    }

    /// Seals the active segment and starts a new one at `new_base`, queueing a producer-state
    /// snapshot (as Kafka takes one at every roll; written once the lock is released). The
    /// caller publishes afterwards.
    pub(super) fn roll(&mut self, new_base: i64, config: &LogConfig, now: i64) -> Result<()> {
        let log = self.log();
        let active = self.active()?;
        active.seal()?;
        self.queue_producer_snapshot();
        let seg = Arc::new(Segment::create(&log.dir, new_base, config, now)?);
        let mut list: Vec<Arc<Segment>> = self.segments.as_ref().clone();
        list.push(seg);
        self.segments = Arc::new(list);
        log.dir_dirty.store(true, Ordering::Release);
        tracing::debug!(dir = %log.dir.display(), base_offset = new_base, "rolled segment");
        Ok(())
    }
}

/// Base offset of the (already stamped) batch `m` describes in `buf`.
fn batch_base(buf: &[u8], m: &BatchMeta) -> i64 {
    let at = usize::try_from(m.position).unwrap_or(usize::MAX);
    buf.get(at..at + 8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(i64::from_be_bytes)
        .unwrap_or(m.last_offset)
}
