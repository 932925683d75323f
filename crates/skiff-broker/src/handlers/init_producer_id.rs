//! InitProducerId. Without a transactional id (idempotent producers) every request gets a new
//! producer id at epoch 0, as Kafka's `TransactionCoordinator.handleInitProducerId` does for a
//! null transactional id — also for a KIP-360 request (v3+) that carries the producer's current
//! id and epoch: the client simply continues with the new id. With a transactional id the
//! transaction coordinator (`txn/`) answers: a new id, or the next epoch of the existing one
//! (fencing the old producer and aborting its open transaction); `transaction_timeout_ms`
//! above `transaction.max.timeout.ms` is INVALID_TRANSACTION_TIMEOUT. An empty transactional
//! id is INVALID_REQUEST, as in Kafka.
//!
//! With an authorizer (checked first, as Kafka 4's KafkaApis): a transactional id needs
//! TRANSACTIONAL_ID WRITE, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED; an idempotent producer
//! needs CLUSTER IDEMPOTENT_WRITE or WRITE on some topic (`authorizeByResourceType`), else
//! CLUSTER_AUTHORIZATION_FAILED.

use kafka_protocol::messages::{
    InitProducerIdRequest, InitProducerIdResponse, ProducerId, ResponseKind,
};

use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::BrokerError;

/// Kafka's `RecordBatch.NO_PRODUCER_ID` / `NO_PRODUCER_EPOCH`.
const NO_PRODUCER_ID: i64 = -1;
const NO_PRODUCER_EPOCH: i16 = -1;

pub async fn handle(ctx: &RequestContext, request: InitProducerIdRequest) -> Reply {
    let response = match init(ctx, request).await {
        Ok((id, epoch)) => InitProducerIdResponse::default()
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(epoch),
        Err(e) => InitProducerIdResponse::default()
            .with_error_code(ctx.code(&e))
            .with_producer_id(ProducerId(NO_PRODUCER_ID))
            .with_producer_epoch(NO_PRODUCER_EPOCH),
    };
    Reply::Respond(ResponseKind::InitProducerId(response))
}

/// The producer id and epoch to hand out.
async fn init(
    ctx: &RequestContext,
    request: InitProducerIdRequest,
) -> Result<(i64, i16), BrokerError> {
    let authz = ctx.authz();
    match request.transactional_id.as_ref() {
        Some(id) if !authz.allows(AclOperation::Write, ResourceType::TransactionalId, id) => {
            return Err(BrokerError::Unauthorized(ResourceType::TransactionalId));
        }
        Some(_) => {}
        None if !authz.allows_cluster(AclOperation::IdempotentWrite)
            && !authz.allows_some(AclOperation::Write, ResourceType::Topic) =>
        {
            return Err(BrokerError::Unauthorized(ResourceType::Cluster));
        }
        None => {}
    }
    check(&request)?;
    let b = ctx.broker.clone();
    if let Some(txn_id) = request.transactional_id.as_ref().map(|t| t.0.to_string()) {
        let current = (request.producer_id.0 != NO_PRODUCER_ID)
            .then_some((request.producer_id.0, request.producer_epoch));
        let timeout = request.transaction_timeout_ms;
        let answered =
            blocking(move || b.txn.init_producer_id(&b, &txn_id, timeout, current)).await?;
        return Ok(answered?);
    }
    match blocking(move || b.producer_ids.allocate()).await? {
        Ok(id) => Ok((id, 0)),
        Err(e) => {
            tracing::error!(error = %e, "producer id allocation failed");
            Err(BrokerError::Storage(e))
        }
    }
}

/// Request rules checked before any id is handed out (Kafka's `KafkaApis` and coordinator).
fn check(request: &InitProducerIdRequest) -> Result<(), BrokerError> {
    // v3+ (KIP-360): the producer's current id and epoch, both set or both unset.
    let id = request.producer_id.0;
    let epoch = request.producer_epoch;
    if (id == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH) {
        return Err(BrokerError::InvalidRequest(
            "producer id and epoch must be both set or both unset".to_string(),
        ));
    }
    match &request.transactional_id {
        None => Ok(()),
        Some(t) if t.0.is_empty() => Err(BrokerError::InvalidRequest(
            "empty transactional id".to_string(),
        )),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{ApiKey, TransactionalId};
    use kafka_protocol::ResponseError;

    /// The code the rules answer (0: accepted).
    fn check_code(request: &InitProducerIdRequest) -> Result<(), ResponseError> {
        check(request).map_err(|e| crate::errors::kafka_error(ApiKey::InitProducerId, 4, &e))
    }

    fn req(txn: Option<&str>, id: i64, epoch: i16) -> InitProducerIdRequest {
        InitProducerIdRequest::default()
            .with_transactional_id(txn.map(|t| TransactionalId(crate::handlers::str_bytes(t))))
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(epoch)
    }

    #[test]
    fn request_rules() {
        assert_eq!(check_code(&req(None, -1, -1)), Ok(()));
        assert_eq!(check_code(&req(None, 17, 3)), Ok(()));
        assert_eq!(
            check_code(&req(None, 17, -1)),
            Err(ResponseError::InvalidRequest)
        );
        assert_eq!(
            check_code(&req(None, -1, 0)),
            Err(ResponseError::InvalidRequest)
        );
        assert_eq!(
            check_code(&req(Some(""), -1, -1)),
            Err(ResponseError::InvalidRequest)
        );
        assert_eq!(check_code(&req(Some("tx"), -1, -1)), Ok(()));
    }
}
