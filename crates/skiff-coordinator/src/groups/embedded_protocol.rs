//! The consumer "embedded protocol" that classic members put inside JoinGroup metadata and
//! SyncGroup assignments (Kafka's `ConsumerProtocolSubscription` v0-3 and
//! `ConsumerProtocolAssignment` v0-3, non-flexible, big-endian). A classic member inside a
//! consumer group (online migration, `migration.rs`) is understood through it: its
//! subscription and owned partitions are read from its JoinGroup metadata, and the partitions
//! the server-side assignor gives it are written back as a SyncGroup assignment.
//!
//! Pure functions, safe from any thread; decoding is bounds-checked and never allocates more
//! than the input could hold.

use bytes::Bytes;

use super::consumer::Assignment;
use crate::wire::{put_i16, put_i32, put_str, CodecError, Reader};

/// What a classic consumer subscribes to and says it owns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subscription {
    pub version: i16,
    pub topics: Vec<String>,
    /// v1+ `OwnedPartitions`; empty for v0 (an eager member gives everything up first).
    pub owned: Assignment,
    /// v3+ `RackId`.
    pub rack_id: Option<String>,
}

/// Reads a subscription; newer versions than 3 are read as 3 (Kafka's rule: fields are only
/// ever added at the end of this schema).
pub fn parse_subscription(b: &[u8]) -> Result<Subscription, CodecError> {
    let mut r = Reader::new(b);
    let version = r.i16("subscription version")?;
    if version < 0 {
        return Err(CodecError::UnknownVersion(version));
    }
    let n = r.len(true, "subscribed topics")?.unwrap_or(0);
    if n.saturating_mul(2) > r.remaining() {
        return Err(CodecError::Truncated("subscribed topics"));
    }
    let mut topics = Vec::with_capacity(n);
    for _ in 0..n {
        topics.push(r.str("subscribed topic")?);
    }
    let _user_data = r.len(true, "user data")?.map(|n| r.take(n, "user data"));
    let mut sub = Subscription {
        version,
        topics,
        ..Subscription::default()
    };
    if version >= 1 {
        sub.owned = read_topic_partitions(&mut r, "owned partitions")?;
    }
    if version >= 2 {
        let _generation = r.i32("generation id")?;
    }
    if version >= 3 {
        sub.rack_id = r.nullable_str("rack id")?;
    }
    Ok(sub)
}

/// Reads an assignment's partitions (user data ignored). Empty bytes are no assignment: a
/// classic member that joined but has not been given one yet.
pub fn parse_assignment(b: &[u8]) -> Result<Assignment, CodecError> {
    if b.is_empty() {
        return Ok(Assignment::new());
    }
    let mut r = Reader::new(b);
    let version = r.i16("assignment version")?;
    if version < 0 {
        return Err(CodecError::UnknownVersion(version));
    }
    read_topic_partitions(&mut r, "assigned partitions")
}

/// An assignment in the version of the member's subscription (capped at 3, the newest Kafka
/// defines), with null user data, as Kafka hands it to a classic member of a consumer group.
pub fn encode_assignment(version: i16, a: &Assignment) -> Bytes {
    let mut out = Vec::with_capacity(16 + a.len() * 32);
    put_i16(&mut out, version.clamp(0, 3));
    let topics: Vec<_> = a.iter().filter(|(_, ps)| !ps.is_empty()).collect();
    put_i32(&mut out, i32::try_from(topics.len()).unwrap_or(i32::MAX));
    for (topic, ps) in topics {
        put_str(&mut out, topic);
        put_i32(&mut out, i32::try_from(ps.len()).unwrap_or(i32::MAX));
        for p in ps {
            put_i32(&mut out, *p);
        }
    }
    put_i32(&mut out, -1);
    Bytes::from(out)
}

/// The version a member's subscription metadata was written in (0 when unreadable).
pub fn version_of(metadata: &[u8]) -> i16 {
    metadata
        .get(..2)
        .map(|v| i16::from_be_bytes([v[0], v[1]]))
        .unwrap_or(0)
        .max(0)
}

fn read_topic_partitions(r: &mut Reader<'_>, what: &'static str) -> Result<Assignment, CodecError> {
    let n = r.len(true, what)?.unwrap_or(0);
    if n.saturating_mul(6) > r.remaining() {
        return Err(CodecError::Truncated(what));
    }
    let mut out = Assignment::new();
    for _ in 0..n {
        let topic = r.str("topic")?;
        let count = r.len(true, "partitions")?.unwrap_or(0);
        if count.saturating_mul(4) > r.remaining() {
            return Err(CodecError::Truncated("partitions"));
        }
        let entry = out.entry(topic).or_default();
        for _ in 0..count {
            entry.insert(r.i32("partition")?);
        }
    }
    out.retain(|_, ps| !ps.is_empty());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// A v1 subscription as the Java client writes it: topics, null user data, owned.
    pub(crate) fn subscription_v1(topics: &[&str], owned: &[(&str, &[i32])]) -> Bytes {
        let mut out = Vec::new();
        put_i16(&mut out, 1);
        put_i32(&mut out, topics.len() as i32);
        for t in topics {
            put_str(&mut out, t);
        }
        put_i32(&mut out, -1);
        put_i32(&mut out, owned.len() as i32);
        for (t, ps) in owned {
            put_str(&mut out, t);
            put_i32(&mut out, ps.len() as i32);
            for p in *ps {
                put_i32(&mut out, *p);
            }
        }
        Bytes::from(out)
    }

    #[test]
    fn subscription_and_assignment_round_trip() {
        let b = subscription_v1(&["a", "b"], &[("a", &[0, 2])]);
        let s = parse_subscription(&b).unwrap();
        assert_eq!(s.version, 1);
        assert_eq!(s.topics, vec!["a".to_string(), "b".to_string()]);
        assert_eq!(s.owned["a"], BTreeSet::from([0, 2]));
        let a = Assignment::from([("t".to_string(), BTreeSet::from([1, 3]))]);
        let enc = encode_assignment(s.version, &a);
        assert_eq!(version_of(&enc), 1);
        assert_eq!(parse_assignment(&enc).unwrap(), a);
        assert!(parse_assignment(&[]).unwrap().is_empty());
    }

    #[test]
    fn hostile_counts_are_refused_not_allocated() {
        let mut b = Vec::new();
        put_i16(&mut b, 0);
        put_i32(&mut b, i32::MAX);
        assert!(parse_subscription(&b).is_err());
        assert!(parse_subscription(&[0]).is_err());
        let mut a = Vec::new();
        put_i16(&mut a, 0);
        put_i32(&mut a, 1);
        put_str(&mut a, "t");
        put_i32(&mut a, i32::MAX);
        assert!(parse_assignment(&a).is_err());
    }
}
