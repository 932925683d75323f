//! ShareAcknowledge (API 79) v1 (KIP-932): a share consumer reports what became of records
//! it acquired, without fetching more.
//!
//! In Kafka's order: GROUP READ on the group (GROUP_AUTHORIZATION_FAILED), a member id of 1
//! to 36 characters (INVALID_REQUEST), the share session (epoch 0 is
//! INVALID_SHARE_SESSION_EPOCH, an unknown session SHARE_SESSION_NOT_FOUND, a wrong epoch
//! INVALID_SHARE_SESSION_EPOCH; the session's partitions do not change). Then each partition's
//! batches are applied (`share::acks`) and answered once durable; epoch -1 then closes the
//! session and releases what the member still holds in it.

use kafka_protocol::messages::share_acknowledge_response::{
    PartitionData, ShareAcknowledgeTopicResponse,
};
use kafka_protocol::messages::{ResponseKind, ShareAcknowledgeRequest, ShareAcknowledgeResponse};

use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::BrokerError;
use crate::share::acks::{acknowledge_all, batches, AckItem};
use crate::share::SessionKey;

pub async fn handle(ctx: &RequestContext, request: ShareAcknowledgeRequest) -> Reply {
    let refuse = |err: BrokerError| {
        Reply::Respond(ResponseKind::ShareAcknowledge(
            ShareAcknowledgeResponse::default().with_error_code(ctx.code(&err)),
        ))
    };
    let authz = ctx.authz();
    let (group, member) = match crate::share::share_requester(
        &authz,
        request.group_id.as_ref(),
        request.member_id.as_ref(),
    ) {
        Ok(ids) => ids,
        Err(e) => return refuse(e),
    };
    let broker = ctx.broker.clone();
    let key = SessionKey {
        group: group.clone(),
        member: member.clone(),
    };
    let closing = match broker
        .share
        .sessions()
        .acknowledge(&key, request.share_session_epoch)
    {
        Ok(closing) => closing,
        Err(e) => return refuse(BrokerError::ShareSession(e)),
    };
    let items: Vec<AckItem> = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| AckItem {
                topic_id: t.topic_id,
                partition: p.partition_index,
                batches: batches(
                    p.acknowledgement_batches
                        .iter()
                        .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone())),
                ),
            })
        })
        .collect();
    let version = ctx.version();
    let code = move |e: &BrokerError| {
        crate::errors::kafka_error(
            kafka_protocol::messages::ApiKey::ShareAcknowledge,
            version,
            e,
        )
        .code()
    };
    Reply::Later(Box::pin(async move {
        let outcomes = acknowledge_all(&broker, &authz, &group, &member, items).await;
        if closing {
            let (b, g, m) = (broker.clone(), group.clone(), member.clone());
            if let Ok(pending) = blocking(move || b.share.close_session(&g, &m)).await {
                let _ = broker.share.wait_durable(pending).await;
            }
        }
        let mut topics: Vec<ShareAcknowledgeTopicResponse> = Vec::new();
        for o in outcomes {
            let data = PartitionData::default()
                .with_partition_index(o.partition)
                .with_error_code(o.result.as_ref().err().map_or(0, code))
                .with_error_message(super::share_fetch::ack_error_message(&o.result));
            match topics.iter_mut().find(|t| t.topic_id == o.topic_id) {
                Some(t) => t.partitions.push(data),
                None => topics.push(
                    ShareAcknowledgeTopicResponse::default()
                        .with_topic_id(o.topic_id)
                        .with_partitions(vec![data]),
                ),
            }
        }
        ResponseKind::ShareAcknowledge(ShareAcknowledgeResponse::default().with_responses(topics))
    }))
}
