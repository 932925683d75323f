//! What the KIP-848 consumer group records (types 3-8, `consumer_records.rs`) and the share
//! group records (types 10-15, `share_group/records.rs`) of `__consumer_offsets` encode the
//! same way in Kafka's schemas: the value framing (`int16` version 0, then the flexible
//! encoding) and the topic-partition lists of the target-member and current-assignment
//! values (`[]` of topicId `uuid`, partitions `[]int32`, tagged fields).
//!
//! The rest stays with each codec: their keys cut long strings differently, and their
//! member, metadata and current-assignment values have different fields.

use uuid::Uuid;

use crate::wire::{put_compact_len, put_i16, put_i32, put_uuid, put_uvarint, CodecError, Reader};

/// Version 0, then the flexible body.
pub(crate) fn start_value() -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    put_i16(&mut out, 0);
    out
}

/// A reader past the value's version, which must be 0, switched to the flexible encoding.
pub(crate) fn value_reader(buf: &[u8]) -> Result<Reader<'_>, CodecError> {
    let mut r = Reader::new(buf);
    let version = r.i16("value version")?;
    if version != 0 {
        return Err(CodecError::UnknownVersion(version));
    }
    r.flexible = true;
    Ok(r)
}

/// A compact array of (topic id, compact array of partitions, empty tag section), in the
/// order given.
pub(crate) fn put_topic_partitions<'a, P>(
    out: &mut Vec<u8>,
    tps: impl ExactSizeIterator<Item = (&'a Uuid, P)>,
) where
    P: IntoIterator<Item = &'a i32>,
    P::IntoIter: ExactSizeIterator,
{
    put_compact_len(out, tps.len());
    for (id, parts) in tps {
        put_uuid(out, id);
        let parts = parts.into_iter();
        put_compact_len(out, parts.len());
        for p in parts {
            put_i32(out, *p);
        }
        out.push(0);
    }
}

/// What [`put_topic_partitions`] writes, in the order read; each entry's tags are skipped.
pub(crate) fn read_topic_partitions(
    r: &mut Reader<'_>,
) -> Result<Vec<(Uuid, Vec<i32>)>, CodecError> {
    read_topic_partition_entries(r, |r, _, _| r.skip_tags())
}

/// A topic-partition list; `tags` reads each entry's tag section, given its topic id and
/// partitions.
pub(crate) fn read_topic_partition_entries(
    r: &mut Reader<'_>,
    mut tags: impl FnMut(&mut Reader<'_>, Uuid, &[i32]) -> Result<(), CodecError>,
) -> Result<Vec<(Uuid, Vec<i32>)>, CodecError> {
    let n = r.array_len(18, "topic partitions")?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let id = r.uuid("topic id")?;
        let count = r.array_len(4, "partitions")?;
        let mut parts = Vec::with_capacity(count);
        for _ in 0..count {
            parts.push(r.i32("partition")?);
        }
        tags(r, id, &parts)?;
        out.push((id, parts));
    }
    Ok(out)
}

/// The tag of `AssignmentEpochs` in an entry of a current-assignment list (KIP-1251): the
/// member epoch each of the entry's partitions was assigned at, in the same order.
const ASSIGNMENT_EPOCHS_TAG: u32 = 0;

/// An entry's tag section: its assignment epochs when given, else no tags.
pub(crate) fn put_epochs_tag(out: &mut Vec<u8>, epochs: Option<&[i32]>) {
    let Some(epochs) = epochs else {
        out.push(0);
        return;
    };
    let mut body = Vec::with_capacity(1 + 4 * epochs.len());
    put_compact_len(&mut body, epochs.len());
    for e in epochs {
        put_i32(&mut body, *e);
    }
    out.push(1);
    put_uvarint(out, ASSIGNMENT_EPOCHS_TAG);
    put_uvarint(out, u32::try_from(body.len()).unwrap_or(u32::MAX));
    out.extend_from_slice(&body);
}

/// An entry's tag section, with the assignment epochs of its `partitions` partitions. As
/// Kafka does, a missing or null list, or one of another length, reads as `None`: every
/// partition then counts as assigned at the record's member epoch.
pub(crate) fn read_epochs_tag(
    r: &mut Reader<'_>,
    partitions: usize,
) -> Result<Option<Vec<i32>>, CodecError> {
    let mut epochs = None;
    r.tags(|tag, body| {
        if tag == ASSIGNMENT_EPOCHS_TAG {
            let mut t = Reader::new(body);
            t.flexible = true;
            let n = t.array_len(4, "assignment epochs")?;
            let mut list = Vec::with_capacity(n);
            for _ in 0..n {
                list.push(t.i32("assignment epoch")?);
            }
            epochs = Some(list);
        }
        Ok(())
    })?;
    Ok(epochs.filter(|e| e.len() == partitions))
}
