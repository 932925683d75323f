//! EndTxn: commit or abort the producer's transaction. Answered once the markers of every
//! partition in the transaction and the completed state are durable.

use std::sync::Arc;

use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse, ResponseKind};
use kafka_protocol::ResponseError;

use crate::broker::Broker;
use crate::dispatch::{blocking, Reply};

pub fn handle(broker: &Arc<Broker>, _version: i16, request: EndTxnRequest) -> Reply {
    let broker = broker.clone();
    let (pid, epoch) = (request.producer_id, request.producer_epoch);
    Reply::Later(Box::pin(async move {
        let result = blocking(move || {
            if request.transactional_id.0.is_empty() {
                return Err(ResponseError::InvalidRequest);
            }
            broker.txn.end_txn(
                &broker,
                &request.transactional_id.0,
                request.producer_id.0,
                request.producer_epoch,
                request.committed,
            )
        })
        .await
        .unwrap_or(Err(ResponseError::UnknownServerError));
        // v5 (KIP-890) carries the producer id/epoch to continue with: Skiff does not bump
        // epochs at EndTxn (transaction version 1), so they are the producer's own, as Kafka
        // answers then.
        ResponseKind::EndTxn(
            EndTxnResponse::default()
                .with_error_code(result.err().map_or(0, |e| e.code()))
                .with_producer_id(pid)
                .with_producer_epoch(epoch),
        )
    }))
}
