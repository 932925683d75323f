//! InitProducerId. Without a transactional id (idempotent producers) every request gets a new
//! producer id at epoch 0, as Kafka's `TransactionCoordinator.handleInitProducerId` does for a
//! null transactional id — also for a KIP-360 request (v3+) that carries the producer's current
//! id and epoch: the client simply continues with the new id. With a transactional id the
//! answer is COORDINATOR_NOT_AVAILABLE (what Kafka answers while no transaction coordinator
//! can serve the id, which clients retry) until transactions are built; an empty one is
//! INVALID_REQUEST, as in Kafka.

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
        // Transactions are not built yet: no coordinator can serve this id.
        Some(_) => Err(ResponseError::CoordinatorNotAvailable),
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
        assert_eq!(
            check(&req(Some("tx"), -1, -1)),
            Err(ResponseError::CoordinatorNotAvailable)
        );
    }
}
