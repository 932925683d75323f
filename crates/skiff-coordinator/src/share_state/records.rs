//! The key/value record formats of `__share_group_state`, byte-compatible with the records
//! Kafka 4.4's share coordinator writes, so the topic can move between the two and tools that
//! dump it read what Skiff wrote.
//!
//! On-disk format (big-endian):
//! - key: `int16` record type (0 ShareSnapshot, 1 ShareUpdate), then the key schema at
//!   version 0, not flexible: GroupId `string` (int16 length), TopicId `uuid` (16 bytes),
//!   Partition `int32`. A tombstone is a ShareSnapshot key with a null value.
//! - value: `int16` version (0, the only one), then the flexible encoding:
//!   - ShareSnapshotValue: SnapshotEpoch `int32`, StateEpoch `int32`, LeaderEpoch `int32`,
//!     StartOffset `int64`, CreateTimestamp `int64`, WriteTimestamp `int64`, StateBatches;
//!   - ShareUpdateValue: SnapshotEpoch `int32`, LeaderEpoch `int32`, StartOffset `int64`
//!     (-1: unchanged), StateBatches;
//!   - StateBatches: compact array (uvarint length + 1) of FirstOffset `int64`, LastOffset
//!     `int64`, DeliveryState `int8`, DeliveryCount `int16`, each with an (empty) tag section;
//!   - then the value's tag section: tag 0 is DeliveryCompleteCount `int32` (KIP-1226), written
//!     only when it is not its default -1, as Kafka's generated code does.
//!
//! Pure functions, no state: safe from any thread. Decoding is bounds-checked and never
//! panics; it refuses what cannot be a share state (unknown delivery state, negative delivery
//! count, a batch ending before it starts) instead of guessing.

use uuid::Uuid;

use super::wire::{put_i16, put_i32, put_i64, put_str, put_uvarint, CodecError, Reader};
use crate::share::{DeliveryState, StateBatch};

/// Record type of a ShareSnapshot key (its `apiKey`).
pub const SNAPSHOT_TYPE: i16 = 0;
/// Record type of a ShareUpdate key.
pub const UPDATE_TYPE: i16 = 1;
/// The only value version Kafka defines for both values.
pub const VALUE_VERSION: i16 = 0;
/// Kafka's default for the tagged DeliveryCompleteCount: "not known" (not written).
pub const UNKNOWN_DELIVERY_COMPLETE_COUNT: i32 = -1;
/// Tag of DeliveryCompleteCount in both values.
const DELIVERY_COMPLETE_COUNT_TAG: u32 = 0;

/// The share partition a record is about (the key fields of both record types).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SharePartitionKey {
    pub group: String,
    pub topic_id: Uuid,
    pub partition: i32,
}

/// A decoded key: which kind of record, about which share partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    Snapshot(SharePartitionKey),
    Update(SharePartitionKey),
    /// A record type Kafka may add later: kept on disk, skipped on replay (as Kafka's loader
    /// skips an unknown record type).
    Other(i16),
}

/// ShareSnapshotValue: the whole state of a share partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotValue {
    pub snapshot_epoch: i32,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    /// -1 when not known ([`UNKNOWN_DELIVERY_COMPLETE_COUNT`]).
    pub delivery_complete_count: i32,
    pub create_timestamp: i64,
    pub write_timestamp: i64,
    pub state_batches: Vec<StateBatch>,
}

/// ShareUpdateValue: batches to combine into the state since the last snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateValue {
    pub snapshot_epoch: i32,
    pub leader_epoch: i32,
    /// -1 when the start offset did not change.
    pub start_offset: i64,
    pub delivery_complete_count: i32,
    pub state_batches: Vec<StateBatch>,
}

// ---------------------------------------------------------------- encoding

pub fn encode_key(key: &Key) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    let (kind, k) = match key {
        Key::Snapshot(k) => (SNAPSHOT_TYPE, k),
        Key::Update(k) => (UPDATE_TYPE, k),
        Key::Other(kind) => {
            put_i16(&mut out, *kind);
            return out;
        }
    };
    put_i16(&mut out, kind);
    put_str(&mut out, &k.group);
    out.extend_from_slice(k.topic_id.as_bytes());
    put_i32(&mut out, k.partition);
    out
}

pub fn encode_snapshot_value(v: &SnapshotValue) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + 19 * v.state_batches.len());
    put_i16(&mut out, VALUE_VERSION);
    put_i32(&mut out, v.snapshot_epoch);
    put_i32(&mut out, v.state_epoch);
    put_i32(&mut out, v.leader_epoch);
    put_i64(&mut out, v.start_offset);
    put_i64(&mut out, v.create_timestamp);
    put_i64(&mut out, v.write_timestamp);
    put_batches(&mut out, &v.state_batches);
    put_value_tags(&mut out, v.delivery_complete_count);
    out
}

pub fn encode_update_value(v: &UpdateValue) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + 19 * v.state_batches.len());
    put_i16(&mut out, VALUE_VERSION);
    put_i32(&mut out, v.snapshot_epoch);
    put_i32(&mut out, v.leader_epoch);
    put_i64(&mut out, v.start_offset);
    put_batches(&mut out, &v.state_batches);
    put_value_tags(&mut out, v.delivery_complete_count);
    out
}

fn put_batches(out: &mut Vec<u8>, batches: &[StateBatch]) {
    put_uvarint(out, u32::try_from(batches.len() + 1).unwrap_or(u32::MAX));
    for b in batches {
        put_i64(out, b.first_offset);
        put_i64(out, b.last_offset);
        out.push(b.delivery_state.id() as u8);
        // Kafka's field is an int16; counts are bounded by the delivery limit (at most 10).
        put_i16(out, i16::try_from(b.delivery_count).unwrap_or(i16::MAX));
        put_uvarint(out, 0);
    }
}

fn put_value_tags(out: &mut Vec<u8>, delivery_complete_count: i32) {
    if delivery_complete_count == UNKNOWN_DELIVERY_COMPLETE_COUNT {
        put_uvarint(out, 0);
        return;
    }
    put_uvarint(out, 1);
    put_uvarint(out, DELIVERY_COMPLETE_COUNT_TAG);
    put_uvarint(out, 4);
    put_i32(out, delivery_complete_count);
}

// ---------------------------------------------------------------- decoding

pub fn decode_key(buf: &[u8]) -> Result<Key, CodecError> {
    let mut r = Reader::new(buf);
    let kind = r.i16("key type")?;
    if kind != SNAPSHOT_TYPE && kind != UPDATE_TYPE {
        return Ok(Key::Other(kind));
    }
    let group = r.str("group id")?;
    let topic_id = Uuid::from_bytes(r.array::<16>("topic id")?);
    let partition = r.i32("partition")?;
    r.finish("key")?;
    let k = SharePartitionKey {
        group,
        topic_id,
        partition,
    };
    Ok(if kind == SNAPSHOT_TYPE {
        Key::Snapshot(k)
    } else {
        Key::Update(k)
    })
}

pub fn decode_snapshot_value(buf: &[u8]) -> Result<SnapshotValue, CodecError> {
    let mut r = Reader::new(buf);
    check_version(&mut r)?;
    let snapshot_epoch = r.i32("snapshot epoch")?;
    let state_epoch = r.i32("state epoch")?;
    let leader_epoch = r.i32("leader epoch")?;
    let start_offset = r.i64("start offset")?;
    let create_timestamp = r.i64("create timestamp")?;
    let write_timestamp = r.i64("write timestamp")?;
    let state_batches = read_batches(&mut r)?;
    let delivery_complete_count = read_value_tags(&mut r)?;
    r.finish("ShareSnapshotValue")?;
    Ok(SnapshotValue {
        snapshot_epoch,
        state_epoch,
        leader_epoch,
        start_offset,
        delivery_complete_count,
        create_timestamp,
        write_timestamp,
        state_batches,
    })
}

pub fn decode_update_value(buf: &[u8]) -> Result<UpdateValue, CodecError> {
    let mut r = Reader::new(buf);
    check_version(&mut r)?;
    let snapshot_epoch = r.i32("snapshot epoch")?;
    let leader_epoch = r.i32("leader epoch")?;
    let start_offset = r.i64("start offset")?;
    let state_batches = read_batches(&mut r)?;
    let delivery_complete_count = read_value_tags(&mut r)?;
    r.finish("ShareUpdateValue")?;
    Ok(UpdateValue {
        snapshot_epoch,
        leader_epoch,
        start_offset,
        delivery_complete_count,
        state_batches,
    })
}

fn check_version(r: &mut Reader<'_>) -> Result<(), CodecError> {
    match r.i16("value version")? {
        VALUE_VERSION => Ok(()),
        other => Err(CodecError::UnknownVersion(other)),
    }
}

/// Smallest encoded state batch: two offsets, state, count, empty tag section.
const MIN_BATCH_BYTES: usize = 8 + 8 + 1 + 2 + 1;

fn read_batches(r: &mut Reader<'_>) -> Result<Vec<StateBatch>, CodecError> {
    let count = r
        .uvarint("state batches")?
        .checked_sub(1)
        .ok_or(CodecError::Invalid("state batches (null array)"))? as usize;
    // A hostile count cannot make us allocate more than the bytes present could hold.
    let mut batches = Vec::with_capacity(count.min(r.remaining() / MIN_BATCH_BYTES));
    for _ in 0..count {
        let first_offset = r.i64("first offset")?;
        let last_offset = r.i64("last offset")?;
        let state_id = r.i8("delivery state")?;
        let count = r.i16("delivery count")?;
        r.skip_tags()?;
        if last_offset < first_offset {
            return Err(CodecError::Invalid(
                "state batch (last offset before first)",
            ));
        }
        let delivery_state =
            DeliveryState::from_id(state_id).ok_or(CodecError::Invalid("delivery state"))?;
        let delivery_count =
            u16::try_from(count).map_err(|_| CodecError::Invalid("delivery count"))?;
        batches.push(StateBatch {
            first_offset,
            last_offset,
            delivery_state,
            delivery_count,
        });
    }
    Ok(batches)
}

/// Reads the value's tag section: DeliveryCompleteCount if present, other tags skipped (a
/// later Kafka may add some; they are optional by definition).
fn read_value_tags(r: &mut Reader<'_>) -> Result<i32, CodecError> {
    let mut delivery_complete_count = UNKNOWN_DELIVERY_COMPLETE_COUNT;
    r.tags(|tag, body| {
        if tag == DELIVERY_COMPLETE_COUNT_TAG {
            let bytes: [u8; 4] = body
                .try_into()
                .map_err(|_| CodecError::Invalid("delivery complete count"))?;
            delivery_complete_count = i32::from_be_bytes(bytes);
        }
        Ok(())
    })?;
    Ok(delivery_complete_count)
}
