//! EndTxn: commit or abort the producer's transaction. Answered once the markers of every
//! partition in the transaction and the completed state are durable. With an authorizer it
//! needs TRANSACTIONAL_ID WRITE, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

use kafka_protocol::messages::{ApiKey, EndTxnRequest, EndTxnResponse, ResponseKind};

use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::{kafka_error, BrokerError};

pub async fn handle(ctx: &RequestContext, request: EndTxnRequest) -> Reply {
    let broker = ctx.broker.clone();
    let version = ctx.version();
    let allowed = ctx.authz().allows(
        AclOperation::Write,
        ResourceType::TransactionalId,
        &request.transactional_id.0,
    );
    Reply::Later(Box::pin(async move {
        let result = blocking(move || -> Result<(), BrokerError> {
            if !allowed {
                return Err(BrokerError::Unauthorized(ResourceType::TransactionalId));
            }
            if request.transactional_id.0.is_empty() {
                return Err(BrokerError::InvalidRequest(
                    "empty transactional id".to_string(),
                ));
            }
            Ok(broker.txn.end_txn(
                &broker,
                &request.transactional_id.0,
                request.producer_id.0,
                request.producer_epoch,
                request.committed,
            )?)
        })
        .await
        .and_then(|r| r);
        let code = result
            .err()
            .map_or(0, |e| kafka_error(ApiKey::EndTxn, version, &e).code());
        // Only v0-4 are advertised: v5's producer id/epoch fields (transaction version 2,
        // an epoch bump at every EndTxn) stay at their defaults.
        ResponseKind::EndTxn(EndTxnResponse::default().with_error_code(code))
    }))
}
