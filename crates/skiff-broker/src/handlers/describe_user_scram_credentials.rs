//! DescribeUserScramCredentials v0: which SCRAM mechanisms each user has a credential for, and
//! with how many iterations (never a salt or key), from the durable
//! [`ScramStore`](crate::scram_store::ScramStore), answered as Kafka's `ScramImage.describe`:
//! - users null or empty: every user that has a credential, in name order;
//! - a user named twice: one row, DUPLICATE_RESOURCE;
//! - a user without any credential: RESOURCE_NOT_FOUND;
//!
//! with Kafka's messages, which end in `": <user>"`. Rows follow the request's first-seen order.
//! Reads only the in-memory snapshot, so it stays on the runtime worker.

use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, ResponseKind,
};
use kafka_protocol::ResponseError;

use super::str_bytes;
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::scram_store::Credentials;

/// Kafka's message prefix for a user named twice (the user name follows).
pub const DESCRIBE_TWICE: &str =
    "Cannot describe SCRAM credentials for the same user twice in a single request: ";
/// Kafka's message prefix for a user without credentials (the user name follows).
pub const DESCRIBE_MISSING: &str = "Attempt to describe a user credential that does not exist: ";

/// Kafka (KafkaApis) requires DESCRIBE on the CLUSTER resource.
///
/// AUTHORIZER HOOK: answer from `ctx.principal` and the ACL authorizer once it is wired into
/// handlers. Without an authorizer everything is allowed, as in Kafka.
fn authorized(_ctx: &RequestContext) -> bool {
    true
}

pub async fn handle(ctx: &RequestContext, request: DescribeUserScramCredentialsRequest) -> Reply {
    let response = if authorized(ctx) {
        DescribeUserScramCredentialsResponse::default()
            .with_results(describe(&request, &ctx.broker.scram.snapshot()))
    } else {
        // Kafka's error response: the top-level code and message, no rows.
        let e = ResponseError::ClusterAuthorizationFailed;
        DescribeUserScramCredentialsResponse::default()
            .with_error_code(e.code())
            .with_error_message(Some(str_bytes(&e.to_string())))
    };
    Reply::Respond(ResponseKind::DescribeUserScramCredentials(response))
}

/// The result rows for `request` against `current`.
pub fn describe(
    request: &DescribeUserScramCredentialsRequest,
    current: &Credentials,
) -> Vec<DescribeUserScramCredentialsResult> {
    // (user, named more than once)
    let mut users: Vec<(String, bool)> = Vec::new();
    match &request.users {
        Some(named) if !named.is_empty() => {
            for u in named {
                match users.iter_mut().find(|(name, _)| name == u.name.as_str()) {
                    Some(seen) => seen.1 = true,
                    None => users.push((u.name.to_string(), false)),
                }
            }
        }
        _ => users.extend(current.keys().map(|u| (u.clone(), false))),
    }
    users
        .into_iter()
        .map(|(user, twice)| {
            let result = DescribeUserScramCredentialsResult::default().with_user(str_bytes(&user));
            let refuse = |e: ResponseError, prefix: &str| {
                DescribeUserScramCredentialsResult::default()
                    .with_user(str_bytes(&user))
                    .with_error_code(e.code())
                    .with_error_message(Some(str_bytes(&format!("{prefix}{user}"))))
            };
            if twice {
                return refuse(ResponseError::DuplicateResource, DESCRIBE_TWICE);
            }
            match current.get(&user).filter(|by| !by.is_empty()) {
                Some(by_mechanism) => result.with_credential_infos(
                    by_mechanism
                        .iter()
                        .map(|(m, c)| {
                            CredentialInfo::default()
                                .with_mechanism(m.kafka_type())
                                .with_iterations(i32::try_from(c.iterations).unwrap_or(i32::MAX))
                        })
                        .collect(),
                ),
                None => refuse(ResponseError::ResourceNotFound, DESCRIBE_MISSING),
            }
        })
        .collect()
}
