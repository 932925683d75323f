//! EndTxn: commit or abort the producer's transaction. Answered once the markers of every
//! partition in the transaction and the completed state are durable.

use std::sync::Arc;

use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse, ResponseKind};
use kafka_protocol::ResponseError;

use crate::broker::Broker;
use crate::dispatch::{blocking, Reply};

pub fn handle(broker: &Arc<Broker>, _version: i16, request: EndTxnRequest) -> Reply {
    let broker = broker.clone();
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
        // Only v0-4 are advertised: v5's producer id/epoch fields (transaction version 2,
        // an epoch bump at every EndTxn) stay at their defaults.
        ResponseKind::EndTxn(
            EndTxnResponse::default().with_error_code(result.err().map_or(0, |e| e.code())),
        )
    }))
}
