//! Committed offsets of a [`Group`]: Kafka's commit validation rules, expiry after
//! `offsets.retention.minutes`, deletion with tombstones, and the subscribed topics that
//! OffsetDelete must not touch. Sans-IO: tombstones go to the group's outbox.

use kafka_protocol::ResponseError;

use super::*;
use crate::groups::commit_fence::CommitFence;

impl Group {
    // ------------------------------------------------------------ offsets

    /// Check an offset commit's member and generation (or member epoch), by Kafka's rules
    /// for the group's protocol; the answer says which partitions the commit may name (at an
    /// older member epoch, only those assigned by then: KIP-1251). A classic group allows
    /// generation -1 only while it has no members. `offset_commit_version` is None for
    /// TxnOffsetCommit.
    pub fn validate_commit(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        offset_commit_version: Option<i16>,
    ) -> Result<CommitFence, ResponseError> {
        if self.state == GroupState::Dead {
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        if let Some(c) = &self.consumer {
            return c.validate_commit(member_id, generation, offset_commit_version);
        }
        if let Some(s) = &self.streams {
            return s.validate_commit(member_id, generation, offset_commit_version);
        }
        if generation < 0 && self.state == GroupState::Empty {
            return Ok(CommitFence::Open);
        }
        self.validate_member(member_id, instance_id)?;
        if generation != self.generation {
            return Err(ResponseError::IllegalGeneration);
        }
        if self.state == GroupState::CompletingRebalance {
            return Err(ResponseError::RebalanceInProgress);
        }
        Ok(CommitFence::Open)
    }

    pub fn commit(&mut self, topic: &str, partition: i32, c: Committed) {
        self.offsets.insert((topic.to_string(), partition), c);
    }

    /// Offsets past `offsets.retention.minutes`, by Kafka's rules: in an empty group every
    /// offset once the group has been empty that long (by commit time for groups that never
    /// had a protocol, i.e. commit-only "simple" groups); in a stable consumer group only
    /// offsets of topics no member subscribes to, by commit time. An explicit expiry
    /// (OffsetCommit v2-4 `retention_time_ms`) replaces the computed one. Removed here;
    /// tombstones go to the outbox.
    pub fn expire_offsets(&mut self, retention_ms: i64, now: i64) -> usize {
        let consumer_members = self.consumer.as_ref().is_some_and(|c| !c.is_empty())
            || self.streams.as_ref().is_some_and(|s| !s.members.is_empty());
        let (base_is_state_time, skip): (bool, Vec<String>) = match self.state {
            _ if consumer_members => (false, self.subscribed_topics().unwrap_or_default()),
            GroupState::Empty => (self.protocol_type.is_some(), Vec::new()),
            GroupState::Stable => match self.subscribed_topics() {
                Some(topics) => (false, topics),
                None => return 0,
            },
            _ => return 0,
        };
        let since = self.state_since;
        let expired: Vec<(String, i32)> = self
            .offsets
            .iter()
            .filter(|((topic, _), c)| {
                if skip.contains(topic) {
                    return false;
                }
                match c.expire_timestamp {
                    Some(at) => at <= now,
                    None => {
                        let base = if base_is_state_time {
                            since
                        } else {
                            c.commit_timestamp
                        };
                        base.saturating_add(retention_ms) <= now
                    }
                }
            })
            .map(|(k, _)| k.clone())
            .collect();
        for (topic, partition) in &expired {
            self.offsets.remove(&(topic.clone(), *partition));
            self.outbox.push((
                Key::Offset {
                    group: self.id.clone(),
                    topic: topic.clone(),
                    partition: *partition,
                },
                None,
            ));
        }
        expired.len()
    }

    /// Delete the group: tombstones for every offset and for the metadata; state Dead.
    pub fn delete(&mut self, now: i64) {
        let keys: Vec<(String, i32)> = self.offsets.keys().cloned().collect();
        for (topic, partition) in keys {
            self.outbox.push((
                Key::Offset {
                    group: self.id.clone(),
                    topic,
                    partition,
                },
                None,
            ));
        }
        self.offsets.clear();
        for key in std::mem::take(&mut self.consumer_persisted).into_keys() {
            self.outbox.push((Key::Consumer(key), None));
        }
        self.consumer = None;
        for key in std::mem::take(&mut self.streams_persisted).into_keys() {
            self.outbox.push((Key::Streams(key), None));
        }
        self.streams = None;
        self.outbox.push((
            Key::Group {
                group: self.id.clone(),
            },
            None,
        ));
        self.transition(GroupState::Dead, now);
    }

    /// Topics the members subscribe to, from the consumer protocol's subscription bytes (for
    /// a streams group with members: the topics its topology reads); `None` when the group
    /// does not use the consumer protocol.
    pub fn subscribed_topics(&self) -> Option<Vec<String>> {
        if let Some(c) = self.consumer.as_ref().filter(|c| !c.is_empty()) {
            return Some(c.subscribed_topics().into_iter().collect());
        }
        if let Some(s) = self.streams.as_ref().filter(|s| !s.members.is_empty()) {
            return Some(s.input_topics());
        }
        if self.protocol_type.as_deref() != Some("consumer") || self.members.is_empty() {
            return None;
        }
        let protocol = self.protocol.as_deref()?;
        let mut topics = Vec::new();
        for m in self.members.values() {
            topics.extend(parse_subscription_topics(&m.metadata_for(protocol))?);
        }
        Some(topics)
    }
}

/// The topic list of a ConsumerProtocolSubscription (all versions start with `int16`
/// version and a `string` array of topics). `None` if malformed.
pub fn parse_subscription_topics(b: &[u8]) -> Option<Vec<String>> {
    let count = i32::from_be_bytes(b.get(2..6)?.try_into().ok()?);
    let mut pos = 6usize;
    let mut topics = Vec::new();
    for _ in 0..count.max(0) {
        let len =
            usize::try_from(i16::from_be_bytes(b.get(pos..pos + 2)?.try_into().ok()?)).ok()?;
        pos += 2;
        topics.push(String::from_utf8(b.get(pos..pos + len)?.to_vec()).ok()?);
        pos += len;
    }
    Some(topics)
}
