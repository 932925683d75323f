//! AlterUserScramCredentials v0: adds, replaces and deletes users' SCRAM credentials in the
//! durable [`ScramStore`](crate::scram_store::ScramStore), validated as Kafka's
//! `ScramControlManager` validates them, with its codes and messages:
//! - a user named twice in one request (deletions and upsertions together):
//!   DUPLICATE_RESOURCE, and none of that user's changes is applied;
//! - an empty user name: UNACCEPTABLE_CREDENTIAL; a mechanism other than SCRAM-SHA-256/512:
//!   UNSUPPORTED_SASL_MECHANISM;
//! - iterations outside Kafka's bounds (4096..=16384): UNACCEPTABLE_CREDENTIAL;
//! - deleting a credential the user does not have: RESOURCE_NOT_FOUND.
//!
//! Each user gets one result row: first the applied deletions, then the applied upsertions,
//! then the refused users, each group in request order. The client sends the salted password;
//! only the derived stored and server keys are kept. The changes of all accepted users are
//! written in one durable file replacement before the response (a failed write answers
//! KAFKA_STORAGE_ERROR for them and changes nothing).

use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, ResponseKind,
};
use kafka_protocol::ResponseError;
use skiff_auth::scram::credential::{check_iterations, ScramCredential};
use skiff_auth::scram::ScramMechanism;
use skiff_auth::ConfigError;

use super::str_bytes;
use crate::context::RequestContext;
use crate::dispatch::{blocking, Reply};
use crate::errors::BrokerError;
use crate::scram_store::{Change, Credentials};

/// Kafka's message for a user altered twice in one request.
pub const ALTERED_TWICE: &str = "A user credential cannot be altered twice in the same request";
/// Kafka's message for deleting a credential that does not exist.
pub const DELETE_MISSING: &str = "Attempt to delete a user credential that does not exist";

/// Kafka (ControllerApis) requires ALTER on the CLUSTER resource.
///
/// AUTHORIZER HOOK: answer from `ctx.principal` and the ACL authorizer once it is wired into
/// handlers. Without an authorizer everything is allowed, as in Kafka.
fn authorized(_ctx: &RequestContext) -> bool {
    true
}

pub async fn handle(ctx: &RequestContext, request: AlterUserScramCredentialsRequest) -> Reply {
    if !authorized(ctx) {
        return respond(refuse_all(
            &request,
            ResponseError::ClusterAuthorizationFailed,
        ));
    }
    let store = ctx.broker.scram.clone();
    // Kept to name every user should the blocking task fail (Bytes clones are cheap).
    let asked = request.clone();
    let applied = blocking(move || {
        let _updating = store.lock_updates();
        let plan = plan(&request, &store.snapshot());
        let written = store.commit(&plan.changes);
        (plan, written)
    })
    .await;
    respond(match applied {
        Ok((plan, Ok(()))) => plan.rows(None),
        Ok((plan, Err(e))) => {
            tracing::error!(error = %e, "writing SCRAM credentials failed");
            let err = BrokerError::StorageFailure(e.to_string());
            plan.rows(Some((ctx.error(&err), e.to_string())))
        }
        Err(e) => refuse_all(&asked, ctx.error(&e)),
    })
}

fn respond(results: Vec<AlterUserScramCredentialsResult>) -> Reply {
    Reply::Respond(ResponseKind::AlterUserScramCredentials(
        AlterUserScramCredentialsResponse::default().with_results(results),
    ))
}

/// Kafka's error response for a refused request: every user named in it, once, with `error`
/// and its default message.
fn refuse_all(
    request: &AlterUserScramCredentialsRequest,
    error: ResponseError,
) -> Vec<AlterUserScramCredentialsResult> {
    let mut users: Vec<&str> = Vec::new();
    let names = request.deletions.iter().map(|d| d.name.as_str());
    for user in names.chain(request.upsertions.iter().map(|u| u.name.as_str())) {
        if !users.contains(&user) {
            users.push(user);
        }
    }
    let message = error.to_string();
    users
        .into_iter()
        .map(|u| row(u, error.code(), Some(&message)))
        .collect()
}

fn row(user: &str, code: i16, message: Option<&str>) -> AlterUserScramCredentialsResult {
    AlterUserScramCredentialsResult::default()
        .with_user(str_bytes(user))
        .with_error_code(code)
        .with_error_message(message.map(str_bytes))
}

/// What one request does: the accepted users (whose changes are `changes`) and the refused.
pub struct Plan {
    deleted: Vec<String>,
    upserted: Vec<String>,
    refused: Vec<(String, ResponseError, String)>,
    pub changes: Vec<Change>,
}

impl Plan {
    /// The response rows; `failed` replaces success when the write failed.
    fn rows(self, failed: Option<(ResponseError, String)>) -> Vec<AlterUserScramCredentialsResult> {
        let ok = |user: &String| match &failed {
            None => row(user, 0, None),
            Some((e, m)) => row(user, e.code(), Some(m)),
        };
        let mut rows: Vec<_> = self.deleted.iter().chain(&self.upserted).map(ok).collect();
        rows.extend(
            self.refused
                .iter()
                .map(|(user, e, m)| row(user, e.code(), Some(m))),
        );
        rows
    }
}

/// Validates `request` against `current` in Kafka's order (deletions, then upsertions; a
/// user's first refusal sticks). Pure: nothing is written.
pub fn plan(request: &AlterUserScramCredentialsRequest, current: &Credentials) -> Plan {
    let mut deletions: Vec<(String, ScramMechanism)> = Vec::new();
    let mut upsertions: Vec<(String, ScramMechanism, ScramCredential)> = Vec::new();
    let mut refused: Vec<(String, ResponseError, String)> = Vec::new();
    let is_refused = |r: &[(String, ResponseError, String)], u: &str| r.iter().any(|x| x.0 == u);
    for d in &request.deletions {
        let user = d.name.to_string();
        if is_refused(&refused, &user) {
            continue;
        }
        if let Some(i) = deletions.iter().position(|x| x.0 == user) {
            deletions.remove(i);
            refused.push((user, ResponseError::DuplicateResource, ALTERED_TWICE.into()));
            continue;
        }
        match validate_deletion(d, current) {
            Ok(m) => deletions.push((user, m)),
            Err((e, m)) => refused.push((user, e, m)),
        }
    }
    for u in &request.upsertions {
        let user = u.name.to_string();
        if is_refused(&refused, &user) {
            continue;
        }
        let in_deletions = deletions.iter().position(|x| x.0 == user);
        let in_upsertions = upsertions.iter().position(|x| x.0 == user);
        if in_deletions.is_some() || in_upsertions.is_some() {
            if let Some(i) = in_deletions {
                deletions.remove(i);
            }
            if let Some(i) = in_upsertions {
                upsertions.remove(i);
            }
            refused.push((user, ResponseError::DuplicateResource, ALTERED_TWICE.into()));
            continue;
        }
        match validate_upsertion(u) {
            Ok((m, iterations)) => {
                let credential = ScramCredential::from_salted_password(
                    m,
                    &u.salt,
                    &u.salted_password,
                    iterations,
                );
                upsertions.push((user, m, credential));
            }
            Err((e, m)) => refused.push((user, e, m)),
        }
    }
    let mut changes = Vec::new();
    for (user, mechanism) in &deletions {
        changes.push(Change::Delete {
            user: user.clone(),
            mechanism: *mechanism,
        });
    }
    for (user, mechanism, credential) in &upsertions {
        changes.push(Change::Upsert {
            user: user.clone(),
            mechanism: *mechanism,
            credential: credential.clone(),
        });
    }
    Plan {
        deleted: deletions.into_iter().map(|x| x.0).collect(),
        upserted: upsertions.into_iter().map(|x| x.0).collect(),
        refused,
        changes,
    }
}

type Refusal = (ResponseError, String);

/// Kafka's `validateScramUsernameAndMechanism`: the name first, then the mechanism.
fn validate_name_and_mechanism(name: &str, mechanism: i8) -> Result<ScramMechanism, Refusal> {
    if name.is_empty() {
        return Err((
            ResponseError::UnacceptableCredential,
            "Username must not be empty".into(),
        ));
    }
    ScramMechanism::from_kafka_type(mechanism).ok_or_else(|| {
        (
            ResponseError::UnsupportedSaslMechanism,
            "Unknown SCRAM mechanism".into(),
        )
    })
}

fn validate_deletion(
    d: &ScramCredentialDeletion,
    current: &Credentials,
) -> Result<ScramMechanism, Refusal> {
    let m = validate_name_and_mechanism(&d.name, d.mechanism)?;
    let exists = current
        .get(d.name.as_str())
        .is_some_and(|by| by.contains_key(&m));
    if !exists {
        return Err((ResponseError::ResourceNotFound, DELETE_MISSING.into()));
    }
    Ok(m)
}

fn validate_upsertion(u: &ScramCredentialUpsertion) -> Result<(ScramMechanism, u32), Refusal> {
    let m = validate_name_and_mechanism(&u.name, u.mechanism)?;
    let iterations = check_iterations(i64::from(u.iterations)).map_err(|e| {
        let message = match e {
            ConfigError::Iterations(m) => m,
            other => other.to_string(),
        };
        (ResponseError::UnacceptableCredential, message)
    })?;
    Ok((m, iterations))
}
