//! DescribeClientQuotas and AlterClientQuotas v0-1, answered as Kafka 4 answers them
//! (decisions in [`crate::quotas::admin`]).
//!
//! - Describe needs DESCRIBE_CONFIGS on the cluster, Alter ALTER_CONFIGS (else
//!   CLUSTER_AUTHORIZATION_FAILED: Describe's top-level code and no entries; Alter's on every
//!   entry). Without an authorizer everything is allowed.
//! - A bad Describe filter answers its error code and message at the top level with null
//!   entries (Kafka throws from `ClientQuotasImage.describe`).
//! - Alter with `validate_only` answers as for real and changes nothing; otherwise the valid
//!   entities are written to `client-quotas.json` (on a blocking thread: it fsyncs) and, once
//!   durable, enforced from the next request on. A failed write answers UNKNOWN_SERVER_ERROR
//!   for the entities that were to change.

use kafka_protocol::messages::alter_client_quotas_response::{
    EntityData as AlterEntityData, EntryData as AlterEntryData,
};
use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse, ResponseKind,
};
use kafka_protocol::ResponseError;

use super::str_bytes;
use crate::authz::AclOperation;
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::quotas::admin;

pub async fn describe(ctx: &RequestContext, request: DescribeClientQuotasRequest) -> Reply {
    let refuse = |e: ResponseError, message: String| {
        DescribeClientQuotasResponse::default()
            .with_error_code(e.code())
            .with_error_message(Some(str_bytes(&message)))
            .with_entries(None)
    };
    let response = if !ctx.authz().allows_cluster(AclOperation::DescribeConfigs) {
        let e = ResponseError::ClusterAuthorizationFailed;
        refuse(e, e.to_string())
    } else {
        let current = ctx.broker.quota_store.snapshot();
        match admin::describe(&current, &request.components, request.strict) {
            Err((e, message)) => refuse(e, message),
            // Kafka's success answer carries an empty (not null) message.
            Ok(found) => DescribeClientQuotasResponse::default().with_entries(Some(
                found
                    .into_iter()
                    .map(|(entity, values)| {
                        EntryData::default()
                            .with_entity(
                                entity
                                    .parts()
                                    .into_iter()
                                    .map(|(t, n)| {
                                        EntityData::default()
                                            .with_entity_type(str_bytes(t))
                                            .with_entity_name(n.map(str_bytes))
                                    })
                                    .collect(),
                            )
                            .with_values(
                                values
                                    .iter()
                                    .map(|(k, v)| {
                                        ValueData::default().with_key(str_bytes(k)).with_value(*v)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            )),
        }
    };
    Reply::Respond(ResponseKind::DescribeClientQuotas(response))
}

fn entity_data(entity: &admin::NamedEntity) -> Vec<AlterEntityData> {
    entity
        .iter()
        .map(|(t, n)| {
            AlterEntityData::default()
                .with_entity_type(str_bytes(t))
                .with_entity_name(n.as_deref().map(str_bytes))
        })
        .collect()
}

pub async fn alter(ctx: &RequestContext, request: AlterClientQuotasRequest) -> Reply {
    // The response's entities (one per distinct entity), for answers that fail them all.
    let fail_all = |e: ResponseError, message: String| -> Vec<_> {
        admin::alter(&Default::default(), &request.entries)
            .0
            .into_iter()
            .map(|r| (r.entity, Err((e, message.clone()))))
            .collect()
    };
    let rows: Vec<(admin::NamedEntity, Result<(), admin::ApiError>)> =
        if !ctx.authz().allows_cluster(AclOperation::AlterConfigs) {
            let e = ResponseError::ClusterAuthorizationFailed;
            fail_all(e, e.to_string())
        } else {
            let broker = ctx.broker.clone();
            let entries = request.entries.clone();
            let validate_only = request.validate_only;
            let done = blocking(move || {
                let store = &broker.quota_store;
                let _updates = store.lock_updates();
                let current = store.snapshot();
                let (results, next) = admin::alter(&current, &entries);
                let rows: Vec<_> = results.into_iter().map(|r| (r.entity, r.result)).collect();
                if validate_only || next == *current {
                    return rows;
                }
                match store.commit(next) {
                    Ok(()) => {
                        broker.quotas.update(store.snapshot());
                        rows
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "writing client quotas failed");
                        let failed = ResponseError::UnknownServerError;
                        rows.into_iter()
                            .map(|(entity, r)| match r {
                                Ok(()) => (entity, Err((failed, e.to_string()))),
                                err => (entity, err),
                            })
                            .collect()
                    }
                }
            })
            .await;
            match done {
                Ok(rows) => rows,
                Err(e) => fail_all(ResponseError::UnknownServerError, e.to_string()),
            }
        };
    let entries = rows
        .into_iter()
        .map(|(entity, result)| {
            let row = AlterEntryData::default().with_entity(entity_data(&entity));
            match result {
                Ok(()) => row.with_error_message(None),
                Err((e, message)) => row
                    .with_error_code(e.code())
                    .with_error_message(Some(str_bytes(&message))),
            }
        })
        .collect();
    Reply::Respond(ResponseKind::AlterClientQuotas(
        AlterClientQuotasResponse::default().with_entries(entries),
    ))
}
