//! Committed offsets: OffsetCommit (durable before it is applied and answered),
//! OffsetFetch and OffsetDelete.
//!
//! Share groups have no committed offsets: a commit to a share group's id is
//! GROUP_ID_NOT_FOUND; a fetch answers as for an unknown group (no offsets) and OffsetDelete
//! GROUP_ID_NOT_FOUND, as Kafka does.

use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::commit_fence::FIRST_MEMBER_EPOCH_COMMIT_VERSION;
use super::group::{Committed, Group, GroupState, Value};
use super::records::{Key, OffsetValue};
use super::{store, CommitEntry, Coordinator};
use crate::host::Storage;

/// Who an OffsetCommit comes from, as its header names it.
#[derive(Clone, Copy, Debug)]
pub struct OffsetCommit<'a> {
    pub group_id: &'a str,
    pub member_id: &'a str,
    pub instance_id: Option<&'a str>,
    /// The generation (classic groups) or member epoch.
    pub generation: i32,
    /// The request's version: below 9, members of the consumer and streams protocols are
    /// refused (UNSUPPORTED_VERSION).
    pub version: i16,
}

impl<S: Storage> Coordinator<S> {
    /// An offset commit as a client of any group protocol may send it (OffsetCommit v9+).
    pub async fn commit(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        entries: Vec<CommitEntry>,
    ) -> Result<(), ResponseError> {
        let commit = OffsetCommit {
            group_id,
            member_id,
            instance_id,
            generation,
            version: FIRST_MEMBER_EPOCH_COMMIT_VERSION,
        };
        self.commit_offsets(commit, entries).await
    }

    /// Validate, persist (waiting for the fsync, as acks=all) and apply an OffsetCommit.
    /// A member at an older member epoch must have been assigned every partition of the
    /// request by then (KIP-1251); one it was not fails the whole request and nothing is
    /// written, as in Kafka.
    pub async fn commit_offsets(
        &self,
        commit: OffsetCommit<'_>,
        entries: Vec<CommitEntry>,
    ) -> Result<(), ResponseError> {
        let OffsetCommit {
            group_id,
            member_id,
            instance_id,
            generation,
            version,
        } = commit;
        let now = self.now();
        let rx = {
            let mut groups = self.ready()?;
            // Kafka: a share group refuses offset commits as "not a consumer group".
            if self.shared.share().groups.get(group_id).is_some() {
                return Err(ResponseError::GroupIdNotFound);
            }
            let group = match groups.get_mut(group_id) {
                Some(g) => g,
                None if generation < 0 => groups
                    .entry(group_id.to_string())
                    .or_insert_with(|| Group::new(group_id, now)),
                None => return Err(ResponseError::IllegalGeneration),
            };
            let fence = group.validate_commit(member_id, instance_id, generation, Some(version))?;
            fence.check_all(entries.iter().map(|e| (e.topic.as_str(), e.partition)))?;
            if entries.is_empty() {
                return Ok(());
            }
            for e in &entries {
                group.outbox.push((
                    Key::Offset {
                        group: group_id.to_string(),
                        topic: e.topic.clone(),
                        partition: e.partition,
                    },
                    Some(Value::Offset(OffsetValue {
                        offset: e.offset,
                        leader_epoch: e.leader_epoch,
                        metadata: e.metadata.clone(),
                        commit_timestamp: now,
                        expire_timestamp: e.expire_timestamp.unwrap_or(-1),
                    })),
                ));
            }
            let (tx, rx) = oneshot::channel();
            self.shared.drain(group, Some(tx));
            rx
        };
        self.wait_written(rx).await?;
        let mut groups = self.shared.lock();
        if let Some(group) = groups.get_mut(group_id) {
            for e in entries {
                group.commit(
                    &e.topic,
                    e.partition,
                    Committed {
                        offset: e.offset,
                        leader_epoch: e.leader_epoch,
                        metadata: e.metadata,
                        commit_timestamp: now,
                        expire_timestamp: e.expire_timestamp,
                    },
                );
            }
        }
        Ok(())
    }

    pub(super) async fn wait_written(
        &self,
        rx: oneshot::Receiver<store::WriteResult<S::Partition>>,
    ) -> Result<(), ResponseError> {
        let written = rx
            .await
            .map_err(|_| ResponseError::CoordinatorNotAvailable)?;
        let (partition, end) = written.map_err(|_| ResponseError::KafkaStorageError)?;
        self.shared
            .storage
            .wait_durable(partition, end)
            .await
            .map_err(|_| ResponseError::KafkaStorageError)
    }

    /// OffsetFetch v9+ from a member of a consumer or streams group: the member must exist
    /// and give its current epoch, else UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH
    /// (ILLEGAL_GENERATION for a classic member), as Kafka's `ConsumerGroup.validateOffsetFetch`.
    /// A request without a member id and with a negative epoch (admin clients, the classic
    /// consumer) is not checked, and neither are classic groups or unknown ones (those answer
    /// no offsets, as before).
    pub fn check_offset_fetch(
        &self,
        group_id: &str,
        member_id: Option<&str>,
        member_epoch: i32,
    ) -> Result<(), ResponseError> {
        if member_id.is_none() && member_epoch < 0 {
            return Ok(());
        }
        let groups = self.ready()?;
        let Some(group) = groups.get(group_id) else {
            return Ok(());
        };
        let member = member_id.unwrap_or("");
        match (&group.consumer, &group.streams) {
            (Some(c), _) => c.validate_fetch(member, member_epoch),
            (None, Some(s)) => s.validate_fetch(member, member_epoch),
            (None, None) => Ok(()),
        }
    }

    /// Committed offsets of a group: the requested partitions (`None` offset when nothing is
    /// committed) or, when `wanted` is `None`, every committed partition.
    #[allow(clippy::type_complexity)]
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        wanted: Option<Vec<(String, i32)>>,
    ) -> Result<Vec<(String, i32, Option<Committed>)>, ResponseError> {
        let groups = self.ready()?;
        let group = groups.get(group_id);
        let lookup =
            |t: &str, p: i32| group.and_then(|g| g.offsets.get(&(t.to_string(), p)).cloned());
        Ok(match wanted {
            Some(list) => list
                .into_iter()
                .map(|(t, p)| {
                    let c = lookup(&t, p);
                    (t, p, c)
                })
                .collect(),
            None => {
                let mut all: Vec<(String, i32, Option<Committed>)> = group
                    .map(|g| {
                        g.offsets
                            .iter()
                            .map(|((t, p), c)| (t.clone(), *p, Some(c.clone())))
                            .collect()
                    })
                    .unwrap_or_default();
                all.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
                all
            }
        })
    }

    /// Every group's committed offset on one partition, by group id (for the cleaner's
    /// consumer-aware tombstones); `None` while the coordinator is not ready (still loading),
    /// when it cannot tell.
    pub fn committed_by_groups(&self, topic: &str, partition: i32) -> Option<Vec<(String, i64)>> {
        let groups = self.ready().ok()?;
        let key = (topic.to_string(), partition);
        let mut out: Vec<(String, i64)> = groups
            .iter()
            .filter(|(_, g)| g.state != GroupState::Dead)
            .filter_map(|(id, g)| g.offsets.get(&key).map(|c| (id.clone(), c.offset)))
            .collect();
        out.sort();
        Some(out)
    }

    /// OffsetDelete: remove committed offsets of partitions the group does not consume.
    /// Returns one error per partition.
    pub async fn delete_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> Result<Vec<Result<(), ResponseError>>, ResponseError> {
        let (mut results, rx) = {
            let mut groups = self.ready()?;
            let group = match groups.get_mut(group_id) {
                Some(g) if g.state != GroupState::Dead => g,
                _ => return Err(ResponseError::GroupIdNotFound),
            };
            // Kafka lets consumer and streams groups with members delete offsets of topics
            // they do not read; other groups must be empty.
            let reads_topics =
                group.protocol_type.as_deref() == Some("consumer") || group.is_streams_group();
            if !group.is_empty() && !reads_topics {
                return Err(ResponseError::NonEmptyGroup);
            }
            let subscribed = group.subscribed_topics().unwrap_or_default();
            let mut results = Vec::new();
            for (topic, partition) in partitions {
                if subscribed.contains(topic) {
                    results.push(Err(ResponseError::GroupSubscribedToTopic));
                    continue;
                }
                if group.offsets.remove(&(topic.clone(), *partition)).is_some() {
                    group.outbox.push((
                        Key::Offset {
                            group: group_id.to_string(),
                            topic: topic.clone(),
                            partition: *partition,
                        },
                        None,
                    ));
                }
                results.push(Ok(()));
            }
            let (tx, rx) = oneshot::channel();
            if group.outbox.is_empty() {
                (results, None)
            } else {
                self.shared.drain(group, Some(tx));
                (results, Some(rx))
            }
        };
        if let Some(rx) = rx {
            if let Err(e) = self.wait_written(rx).await {
                for r in results.iter_mut().filter(|r| r.is_ok()) {
                    *r = Err(e);
                }
            }
        }
        Ok(results)
    }
}
