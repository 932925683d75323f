//! InitProducerId. Without a transactional id (idempotent producers) every request gets a new
//! producer id at epoch 0, as Kafka's `TransactionCoordinator.handleInitProducerId` does for a
//! null transactional id — also for a KIP-360 request (v3+) that carries the producer's current
//! id and epoch: the client simply continues with the new id. With a transactional id the
//! transaction coordinator (`txn/`) answers: a new id, or the next epoch of the existing one
//! (fencing the old producer and aborting its open transaction); `transaction_timeout_ms`
//! above `transaction.max.timeout.ms` is INVALID_TRANSACTION_TIMEOUT. An empty transactional
//! id is INVALID_REQUEST, as in Kafka.

use std::sync::Arc;

use kafka_protocol::messages::{
    InitProducerIdRequest, InitProducerIdResponse, ProducerId, ResponseKind,
};
use kafka_protocol::ResponseError;

use crate::broker::Broker;
use crate::dispatch::{blocking, Reply};
use crate::errors::log_error_code;

/// Kafka's `RecordBatch.NO_PRODUCER_ID` / `NO_PRODUCER_EPOCH`.
const NO_PRODUCER_ID: i64 = -1;
const NO_PRODUCER_EPOCH: i16 = -1;

pub async fn handle(broker: &Arc<Broker>, _version: i16, request: InitProducerIdRequest) -> Reply {
    let respond = |r: Result<i64, ResponseError>| {
        let response = match r {
            Ok(id) => InitProducerIdResponse::default()
                .with_producer_id(ProducerId(id))
                .with_producer_epoch(0),
            Err(e) => InitProducerIdResponse::default()
                .with_error_code(e.code())
                .with_producer_id(ProducerId(NO_PRODUCER_ID))
                .with_producer_epoch(NO_PRODUCER_EPOCH),
        };
        Reply::Respond(ResponseKind::InitProducerId(response))
    };
    if let Err(e) = check(&request) {
        return respond(Err(e));
    }
    if let Some(txn_id) = request.transactional_id.as_ref().map(|t| t.0.to_string()) {
        let b = broker.clone();
        let current = (request.producer_id.0 != NO_PRODUCER_ID)
            .then_some((request.producer_id.0, request.producer_epoch));
        let timeout = request.transaction_timeout_ms;
        let answered =
            blocking(move || b.txn.init_producer_id(&b, &txn_id, timeout, current)).await;
        let response = match answered.unwrap_or(Err(ResponseError::UnknownServerError)) {
            Ok((id, epoch)) => InitProducerIdResponse::default()
                .with_producer_id(ProducerId(id))
                .with_producer_epoch(epoch),
            Err(e) => InitProducerIdResponse::default()
                .with_error_code(e.code())
                .with_producer_id(ProducerId(NO_PRODUCER_ID))
                .with_producer_epoch(NO_PRODUCER_EPOCH),
        };
        return Reply::Respond(ResponseKind::InitProducerId(response));
    }
    let b = broker.clone();
    match blocking(move || b.producer_ids.allocate()).await {
        Ok(Ok(id)) => respond(Ok(id)),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "producer id allocation failed");
            respond(Err(log_error_code(&e)))
        }
        Err(e) => {
            tracing::error!(error = %e, "producer id allocation failed");
            respond(Err(ResponseError::UnknownServerError))
        }
    }
}

/// Request rules checked before any id is handed out (Kafka's `KafkaApis` and coordinator).
fn check(request: &InitProducerIdRequest) -> Result<(), ResponseError> {
    // v3+ (KIP-360): the producer's current id and epoch, both set or both unset.
    let id = request.producer_id.0;
    let epoch = request.producer_epoch;
    if (id == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH) {
        return Err(ResponseError::InvalidRequest);
    }
    match &request.transactional_id {
        None => Ok(()),
        Some(t) if t.0.is_empty() => Err(ResponseError::InvalidRequest),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::TransactionalId;

    fn req(txn: Option<&str>, id: i64, epoch: i16) -> InitProducerIdRequest {
        InitProducerIdRequest::default()
            .with_transactional_id(txn.map(|t| TransactionalId(crate::handlers::str_bytes(t))))
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(epoch)
    }

    #[test]
    fn request_rules() {
        assert_eq!(check(&req(None, -1, -1)), Ok(()));
        assert_eq!(check(&req(None, 17, 3)), Ok(()));
        assert_eq!(
            check(&req(None, 17, -1)),
            Err(ResponseError::InvalidRequest)
        );
        assert_eq!(check(&req(None, -1, 0)), Err(ResponseError::InvalidRequest));
        assert_eq!(
            check(&req(Some(""), -1, -1)),
            Err(ResponseError::InvalidRequest)
        );
        assert_eq!(check(&req(Some("tx"), -1, -1)), Ok(()));
    }
}
