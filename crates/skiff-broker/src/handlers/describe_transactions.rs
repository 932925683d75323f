//! DescribeTransactions v0: state, timeout, start time, producer id/epoch and partitions of
//! each transactional id; TRANSACTIONAL_ID_NOT_FOUND for ids the coordinator does not know.
//! With an authorizer (Kafka 4's KafkaApis): an id needs TRANSACTIONAL_ID DESCRIBE, else
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED; only partitions of topics the requester may
//! DESCRIBE are listed.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId, ResponseKind,
};

use super::{str_bytes, topic_name};
use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;

pub async fn handle(ctx: &RequestContext, request: DescribeTransactionsRequest) -> Reply {
    let broker = &ctx.broker;
    let authz = ctx.authz();
    let states = request
        .transactional_ids
        .into_iter()
        .map(|id| {
            let state = TransactionState::default()
                .with_transactional_id(id.clone())
                .with_transaction_state(str_bytes(""))
                .with_transaction_start_time_ms(-1)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1);
            if !authz.allows(AclOperation::Describe, ResourceType::TransactionalId, &id.0) {
                let denied = BrokerError::Unauthorized(ResourceType::TransactionalId);
                return state.with_error_code(ctx.code(&denied));
            }
            match broker.txn.describe(&id.0) {
                Err(e) => state.with_error_code(ctx.code(&BrokerError::Coordinator(e))),
                Ok(None) => state.with_error_code(
                    ctx.code(&BrokerError::TransactionalIdNotFound(id.0.to_string())),
                ),
                Ok(Some(m)) => {
                    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
                    for (t, p) in &m.partitions {
                        if !authz.allows(AclOperation::Describe, ResourceType::Topic, t) {
                            continue;
                        }
                        topics.entry(t.as_str()).or_default().push(*p);
                    }
                    state
                        .with_transaction_state(str_bytes(m.state.name()))
                        .with_transaction_timeout_ms(m.timeout_ms)
                        .with_transaction_start_time_ms(m.start_ms)
                        .with_producer_id(ProducerId(m.producer_id))
                        .with_producer_epoch(m.producer_epoch)
                        .with_topics(
                            topics
                                .into_iter()
                                .map(|(t, ps)| {
                                    TopicData::default()
                                        .with_topic(topic_name(t))
                                        .with_partitions(ps)
                                })
                                .collect(),
                        )
                }
            }
        })
        .collect();
    Reply::Respond(ResponseKind::DescribeTransactions(
        DescribeTransactionsResponse::default().with_transaction_states(states),
    ))
}
