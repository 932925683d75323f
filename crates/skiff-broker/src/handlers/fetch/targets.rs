//! Which partitions a fetch reads and what it does to its session (KIP-227): the request's
//! partitions for a full or sessionless fetch, the session's (after the request's changes)
//! for an incremental one, as [`Target`]s grouped into the response's topic entries.

use std::sync::{Arc, MutexGuard};

use kafka_protocol::messages::fetch_request::{FetchTopic, ForgottenTopic};
use kafka_protocol::messages::FetchRequest;
use uuid::Uuid;

use crate::broker::Broker;
use crate::errors::BrokerError;
use crate::fetch_sessions::{
    Begun, FetchSessions, Incremental, PartitionKey, SessionError, SessionPartition, Ticket,
    TopicRef, Upsert, Wants, FINAL_EPOCH, INITIAL_EPOCH,
};

/// One partition to fetch, from the request or from a session.
pub(super) struct Target {
    /// The topic entry of the response it goes under: consecutive targets of one group
    /// share an entry.
    pub(super) group: usize,
    /// The topic's id (nil before v13).
    pub(super) topic_id: Uuid,
    /// The topic's name when known: always before v13; from v13 on, only in a session,
    /// where the topic is then found by this name and its id checked.
    pub(super) name: Option<Arc<str>>,
    pub(super) partition: i32,
    pub(super) wants: Wants,
}

impl Target {
    /// The partition as a session holds it.
    pub(super) fn key(&self, uses_topic_ids: bool) -> Option<PartitionKey> {
        let topic = if uses_topic_ids {
            TopicRef::Id(self.topic_id)
        } else {
            TopicRef::Name(self.name.clone()?)
        };
        Some(PartitionKey {
            topic,
            partition: self.partition,
        })
    }
}

/// How a fetch uses a session.
pub(super) enum Mode {
    /// Every partition is answered; the response's session id is 0.
    Sessionless,
    /// Epoch 0: every partition is answered, then a session is opened with them.
    Full,
    /// An incremental fetch: only the session's partitions with news are answered.
    Incremental(Ticket),
}

pub(super) fn sessions(broker: &Broker) -> MutexGuard<'_, FetchSessions> {
    broker
        .fetch_sessions
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// What the request does to its session (v7+), and the partitions to read: the request's,
/// or for an incremental fetch the session's. Err: the whole request is refused.
pub(super) fn settle_session(
    broker: &Broker,
    version: i16,
    request: &mut FetchRequest,
) -> Result<(Mode, Vec<Target>), BrokerError> {
    let topics = std::mem::take(&mut request.topics);
    if version < 7 {
        return Ok((Mode::Sessionless, request_targets(version, topics)));
    }
    let (id, epoch) = (request.session_id, request.session_epoch);
    if epoch == INITIAL_EPOCH || epoch == FINAL_EPOCH {
        // A full fetch closes the session it names.
        if id != 0 && sessions(broker).remove(id) {
            tracing::debug!(session_id = id, epoch, "fetch session closed");
        }
        let mode = if epoch == INITIAL_EPOCH {
            Mode::Full
        } else {
            Mode::Sessionless
        };
        return Ok((mode, request_targets(version, topics)));
    }
    let uses_topic_ids = version >= 13;
    let targets = request_targets(version, topics);
    let upserts = targets
        .iter()
        .filter_map(|t| {
            Some(Upsert {
                key: t.key(uses_topic_ids)?,
                wants: t.wants,
            })
        })
        .collect();
    let forgotten = forgotten_keys(&request.forgotten_topics_data, uses_topic_ids);
    let incremental = Incremental {
        id,
        epoch,
        uses_topic_ids,
        upserts,
        forgotten,
    };
    let now = broker.clock.now_ms();
    let begun = sessions(broker).begin(incremental, now, |topic_id| {
        broker
            .topics
            .get_by_id(topic_id)
            .map(|t| Arc::from(t.name.as_str()))
    });
    let error = match begun {
        Ok(Begun::Incremental(ticket, partitions)) => {
            tracing::trace!(
                session_id = id,
                epoch,
                partitions = partitions.len(),
                "incremental fetch"
            );
            return Ok((Mode::Incremental(ticket), session_targets(partitions)));
        }
        Ok(Begun::Closed) => {
            tracing::debug!(
                session_id = id,
                epoch,
                "fetch session closed: no partitions left"
            );
            return Ok((Mode::Sessionless, targets));
        }
        Err(SessionError::NotFound) => BrokerError::UnknownFetchSession(id),
        Err(SessionError::InvalidEpoch) => BrokerError::InvalidFetchSessionEpoch(epoch),
        Err(SessionError::TopicIdMismatch) => BrokerError::FetchSessionTopicIdMismatch(id),
    };
    tracing::debug!(session_id = id, epoch, %error, "incremental fetch refused");
    Err(error)
}

/// The request's partitions, a response topic entry per request topic.
fn request_targets(version: i16, topics: Vec<FetchTopic>) -> Vec<Target> {
    let mut targets = Vec::new();
    for (group, t) in topics.into_iter().enumerate() {
        let (topic_id, name) = if version >= 13 {
            (t.topic_id, None)
        } else {
            (Uuid::nil(), Some(Arc::<str>::from(&*t.topic.0)))
        };
        for p in t.partitions {
            targets.push(Target {
                group,
                topic_id,
                name: name.clone(),
                partition: p.partition,
                wants: Wants {
                    fetch_offset: p.fetch_offset,
                    max_bytes: p.partition_max_bytes,
                    leader_epoch: p.current_leader_epoch,
                },
            });
        }
    }
    targets
}

/// A session's partitions, in its order; a response topic entry per run of one topic.
fn session_targets(partitions: Vec<SessionPartition>) -> Vec<Target> {
    let mut group = 0;
    let mut last: Option<TopicRef> = None;
    partitions
        .into_iter()
        .map(|p| {
            if last.as_ref().is_some_and(|l| *l != p.key.topic) {
                group += 1;
            }
            let name = p.name().cloned();
            let topic_id = match &p.key.topic {
                TopicRef::Id(id) => *id,
                TopicRef::Name(_) => Uuid::nil(),
            };
            last = Some(p.key.topic);
            Target {
                group,
                topic_id,
                name,
                partition: p.key.partition,
                wants: p.wants,
            }
        })
        .collect()
}

fn forgotten_keys(forgotten: &[ForgottenTopic], uses_topic_ids: bool) -> Vec<PartitionKey> {
    forgotten
        .iter()
        .flat_map(|t| {
            let topic = if uses_topic_ids {
                TopicRef::Id(t.topic_id)
            } else {
                TopicRef::Name(Arc::from(&*t.topic.0))
            };
            t.partitions.iter().map(move |&partition| PartitionKey {
                topic: topic.clone(),
                partition,
            })
        })
        .collect()
}
