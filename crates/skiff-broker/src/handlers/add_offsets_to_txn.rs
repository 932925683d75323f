//! AddOffsetsToTxn: adds the group's `__consumer_offsets` partition to the transaction, so
//! EndTxn writes a marker there and the offsets of TxnOffsetCommit follow the outcome.
//! With an authorizer it needs TRANSACTIONAL_ID WRITE (else
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then GROUP READ (else GROUP_AUTHORIZATION_FAILED).

use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, ApiKey, ResponseKind,
};

use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::{kafka_error, BrokerError};
use skiff_coordinator::groups::OFFSETS_TOPIC;

pub async fn handle(ctx: &RequestContext, request: AddOffsetsToTxnRequest) -> Reply {
    let broker = ctx.broker.clone();
    let version = ctx.version();
    let authz = ctx.authz();
    let denied = if !authz.allows(
        AclOperation::Write,
        ResourceType::TransactionalId,
        &request.transactional_id.0,
    ) {
        Some(ResourceType::TransactionalId)
    } else if !authz.allows(AclOperation::Read, ResourceType::Group, &request.group_id.0) {
        Some(ResourceType::Group)
    } else {
        None
    };
    Reply::Later(Box::pin(async move {
        let result = blocking(move || -> Result<(), BrokerError> {
            if let Some(rt) = denied {
                return Err(BrokerError::Unauthorized(rt));
            }
            if request.group_id.0.is_empty() {
                return Err(BrokerError::InvalidGroupId(String::new()));
            }
            if request.transactional_id.0.is_empty() {
                return Err(BrokerError::InvalidRequest(
                    "empty transactional id".to_string(),
                ));
            }
            let partition = broker.coordinator.partition_for(&request.group_id.0);
            Ok(broker.txn.add_partitions(
                &request.transactional_id.0,
                request.producer_id.0,
                request.producer_epoch,
                &[(OFFSETS_TOPIC.to_string(), partition)],
            )?)
        })
        .await
        .and_then(|r| r);
        let code = result.err().map_or(0, |e| {
            kafka_error(ApiKey::AddOffsetsToTxn, version, &e).code()
        });
        ResponseKind::AddOffsetsToTxn(AddOffsetsToTxnResponse::default().with_error_code(code))
    }))
}
