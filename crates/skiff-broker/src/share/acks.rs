//! Applying one request's acknowledgements (ShareFetch's piggybacked ones and
//! ShareAcknowledge's), partition by partition, as Kafka's `handleAcknowledgements` does:
//! an unknown topic id is UNKNOWN_TOPIC_ID, malformed batches INVALID_REQUEST, a topic the
//! client may not READ TOPIC_AUTHORIZATION_FAILED, an unknown partition
//! UNKNOWN_TOPIC_OR_PARTITION, an empty batch list succeeds; the rest are applied on the
//! blocking pool and answered only once their state is durable.
//!
//! Thread safety: no state of its own; see [`super::ShareManager`].

use std::sync::Arc;

use skiff_coordinator::share::{validate_acknowledgements, AckBatch, AckContext};
use skiff_coordinator::share_state::SharePartitionKey;
use uuid::Uuid;

use crate::authz::{AclOperation, Authz, ResourceType};
use crate::broker::Broker;
use crate::dispatch::blocking;
use crate::errors::BrokerError;

/// One partition's acknowledgement batches as a request carries them.
pub struct AckItem {
    pub topic_id: Uuid,
    pub partition: i32,
    pub batches: Vec<AckBatch>,
}

/// One partition's result.
pub struct AckOutcome {
    pub topic_id: Uuid,
    pub partition: i32,
    pub result: Result<(), BrokerError>,
}

/// The request's `AcknowledgementBatches` as the state machine takes them.
pub fn batches(from: impl IntoIterator<Item = (i64, i64, Vec<i8>)>) -> Vec<AckBatch> {
    from.into_iter()
        .map(|(first_offset, last_offset, types)| AckBatch {
            first_offset,
            last_offset,
            types,
        })
        .collect()
}

/// Applies `items` for `member` of `group`; one outcome per item, in order.
pub async fn acknowledge_all(
    broker: &Arc<Broker>,
    authz: &Authz,
    group: &str,
    member: &str,
    items: Vec<AckItem>,
) -> Vec<AckOutcome> {
    let settings = broker.share.settings(group);
    // RENEW needs v2 (not served), so the flags are off: RENEW is INVALID_REQUEST.
    let ctx = AckContext {
        now_ms: 0,
        lock_duration_ms: settings.lock_duration_ms,
        renew_supported: false,
        is_renew_ack: false,
        renew_enabled: settings.renew_enabled,
    };
    let mut outcomes = Vec::with_capacity(items.len());
    let mut work = Vec::new();
    for item in items {
        let checked = check(broker, authz, &item, &ctx);
        let result = match checked {
            Ok(Some(partition)) => {
                work.push((
                    outcomes.len(),
                    item.topic_id,
                    item.partition,
                    partition,
                    item.batches,
                ));
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        outcomes.push(AckOutcome {
            topic_id: item.topic_id,
            partition: item.partition,
            result,
        });
    }
    if work.is_empty() {
        return outcomes;
    }
    let b = broker.clone();
    let (group, member) = (group.to_string(), member.to_string());
    let applied = blocking(move || {
        let mut pending = super::Pending::default();
        let results: Vec<(usize, Result<(), BrokerError>)> = work
            .into_iter()
            .map(|(i, topic_id, index, partition, batches)| {
                let key = SharePartitionKey {
                    group: group.clone(),
                    topic_id,
                    partition: index,
                };
                let r = b
                    .share
                    .acknowledge(&key, &partition, &member, &batches, &mut pending)
                    .map(|_| ());
                (i, r)
            })
            .collect();
        (results, pending)
    })
    .await;
    match applied {
        Ok((results, pending)) => {
            let durable = broker.share.wait_durable(pending).await;
            for (i, r) in results {
                if let Some(o) = outcomes.get_mut(i) {
                    o.result = match (&durable, r) {
                        (Err(e), Ok(())) => Err(BrokerError::StorageFailure(e.to_string())),
                        (_, r) => r,
                    };
                }
            }
        }
        Err(e) => {
            let text = e.to_string();
            for o in outcomes.iter_mut().filter(|o| o.result.is_ok()) {
                o.result = Err(BrokerError::Internal(text.clone()));
            }
        }
    }
    outcomes
}

/// The partition to apply `item` to, `None` when there is nothing to apply, or the error it
/// answers (in Kafka's order).
fn check(
    broker: &Broker,
    authz: &Authz,
    item: &AckItem,
    ctx: &AckContext,
) -> Result<Option<Arc<crate::partition::Partition>>, BrokerError> {
    let topic = broker
        .topics
        .get_by_id(item.topic_id)
        .ok_or(BrokerError::UnknownTopicId(item.topic_id))?;
    validate_acknowledgements(&item.batches, ctx)?;
    if !authz.allows(AclOperation::Read, ResourceType::Topic, &topic.name) {
        return Err(BrokerError::Unauthorized(ResourceType::Topic));
    }
    let partition =
        topic
            .partition(item.partition)
            .ok_or_else(|| BrokerError::UnknownPartition {
                topic: topic.name.clone(),
                partition: item.partition,
            })?;
    if item.batches.is_empty() {
        return Ok(None);
    }
    Ok(Some(partition))
}
