//! AddOffsetsToTxn: adds the group's `__consumer_offsets` partition to the transaction, so
//! EndTxn writes a marker there and the offsets of TxnOffsetCommit follow the outcome.

use std::sync::Arc;

use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, ResponseKind};
use kafka_protocol::ResponseError;

use crate::broker::Broker;
use crate::coordinator::OFFSETS_TOPIC;
use crate::dispatch::{blocking, Reply};

pub fn handle(broker: &Arc<Broker>, _version: i16, request: AddOffsetsToTxnRequest) -> Reply {
    let broker = broker.clone();
    Reply::Later(Box::pin(async move {
        let result = blocking(move || {
            if request.group_id.0.is_empty() {
                return Err(ResponseError::InvalidGroupId);
            }
            if request.transactional_id.0.is_empty() {
                return Err(ResponseError::InvalidRequest);
            }
            let partition = broker.coordinator.partition_for(&request.group_id.0);
            broker.txn.add_partitions(
                &request.transactional_id.0,
                request.producer_id.0,
                request.producer_epoch,
                &[(OFFSETS_TOPIC.to_string(), partition)],
            )
        })
        .await
        .unwrap_or(Err(ResponseError::UnknownServerError));
        ResponseKind::AddOffsetsToTxn(
            AddOffsetsToTxnResponse::default()
                .with_error_code(result.err().map_or(0, |e| e.code())),
        )
    }))
}
