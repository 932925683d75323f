//! EndTxn: commit or abort the producer's transaction. Answered once the markers of every
//! partition in the transaction and the completed state are durable. With an authorizer it
//! needs TRANSACTIONAL_ID WRITE, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
//!
//! v0-4 end the transaction at transaction version 0 (the epoch stays). v5 is transaction
//! version 2 (KIP-890 part 2), as Kafka's KafkaApis decides from the request version alone:
//! the coordinator bumps the epoch, writes the markers with it, and the answer carries the
//! producer id and epoch the producer goes on with (-1 and -1 with an error).

use kafka_protocol::messages::{ApiKey, EndTxnRequest, EndTxnResponse, ResponseKind};

use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::{kafka_error, BrokerError};

/// The first EndTxn version at transaction version 2.
const TV2_VERSION: i16 = 5;

pub async fn handle(ctx: &RequestContext, request: EndTxnRequest) -> Reply {
    let broker = ctx.broker.clone();
    let version = ctx.version();
    let allowed = ctx.authz().allows(
        AclOperation::Write,
        ResourceType::TransactionalId,
        &request.transactional_id.0,
    );
    Reply::Later(Box::pin(async move {
        let result = blocking(move || -> Result<Option<(i64, i16)>, BrokerError> {
            if !allowed {
                return Err(BrokerError::Unauthorized(ResourceType::TransactionalId));
            }
            if request.transactional_id.0.is_empty() {
                return Err(BrokerError::InvalidRequest(
                    "empty transactional id".to_string(),
                ));
            }
            let (id, pid, epoch) = (
                &request.transactional_id.0,
                request.producer_id.0,
                request.producer_epoch,
            );
            if version >= TV2_VERSION {
                let next = broker
                    .txn
                    .end_txn_v2(&broker, id, pid, epoch, request.committed)?;
                Ok(Some(next))
            } else {
                broker
                    .txn
                    .end_txn(&broker, id, pid, epoch, request.committed)?;
                Ok(None)
            }
        })
        .await
        .and_then(|r| r);
        let mut response = EndTxnResponse::default();
        match result {
            Ok(Some((pid, epoch))) => {
                response.producer_id = pid.into();
                response.producer_epoch = epoch;
            }
            Ok(None) => {}
            Err(e) => response.error_code = kafka_error(ApiKey::EndTxn, version, &e).code(),
        }
        ResponseKind::EndTxn(response)
    }))
}
