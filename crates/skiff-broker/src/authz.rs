//! Authorization of one request against the configured authorizer (`authorizer.class.name`).
//!
//! Handlers take one [`Authz`] per request ([`RequestContext::authz`]): the authorizer in force
//! when the request arrived (a snapshot; ACL changes apply to later requests), the principal
//! and the client host as Kafka compares ACL hosts with. Without an authorizer every check
//! allows, so a handler's answer is exactly the one it gave before authorization existed;
//! handlers that must answer differently without one (the ACL APIs) ask [`Authz::enabled`].
//!
//! The checks follow Kafka 4's `KafkaApis` (and its group coordinator handlers): which
//! operation on which resource each API needs, and which error code a refusal answers
//! ([`unauthorized`]).
//!
//! Thread safety: an `Authz` is an immutable snapshot; `Send + Sync`.

use std::net::IpAddr;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use skiff_acl::{host_address, Authorizer, Decision, Principal};

pub use skiff_acl::{AclOperation, ResourceType, CLUSTER_NAME};

use crate::context::RequestContext;

/// The authorization view of one request.
pub struct Authz {
    /// `None` without an authorizer: nothing to check, so nothing about the requester is
    /// computed (this runs for every request).
    checked: Option<Checked>,
}

/// The authorizer snapshot and who is asking from where, as the authorizer compares them.
struct Checked {
    authorizer: Arc<Authorizer>,
    principal: Principal,
    host: String,
}

impl RequestContext {
    /// The authorizer snapshot, principal and host of this request.
    pub fn authz(&self) -> Authz {
        Authz::for_principal(
            &self.broker,
            self.principal.kind,
            &self.principal.name,
            &self.client_host,
        )
    }
}

impl Authz {
    /// The authorization view of a caller that is not a Kafka request (the HTTP API): same
    /// authorizer snapshot, principal and host comparison as [`RequestContext::authz`].
    pub fn for_principal(broker: &crate::Broker, kind: &str, name: &str, host: &str) -> Authz {
        let checked = broker.acls.as_ref().map(|acls| {
            let host = host.trim_start_matches('/');
            Checked {
                authorizer: acls.snapshot(),
                principal: Principal {
                    kind: kind.to_string(),
                    name: name.to_string(),
                },
                host: host
                    .parse::<IpAddr>()
                    .map(host_address)
                    .unwrap_or_else(|_| host.to_string()),
            }
        });
        Authz { checked }
    }

    /// Is an authorizer configured?
    pub fn enabled(&self) -> bool {
        self.checked.is_some()
    }

    /// May the requester perform `op` on the resource `name` of type `rt`? Always true
    /// without an authorizer.
    pub fn allows(&self, op: AclOperation, rt: ResourceType, name: &str) -> bool {
        self.checked.as_ref().is_none_or(|c| {
            c.authorizer.authorize(&c.principal, &c.host, op, rt, name) == Decision::Allowed
        })
    }

    /// `op` on the cluster resource.
    pub fn allows_cluster(&self, op: AclOperation) -> bool {
        self.allows(op, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// Kafka's `authorizeByResourceType`: may the requester perform `op` on *some* resource
    /// of type `rt`? Always true without an authorizer.
    pub fn allows_some(&self, op: AclOperation, rt: ResourceType) -> bool {
        self.checked.as_ref().is_none_or(|c| {
            c.authorizer
                .authorize_by_resource_type(&c.principal, &c.host, op, rt)
                == Decision::Allowed
        })
    }

    /// The `*AuthorizedOperations` bits for the resource, from the authorizer; `None`
    /// without one (the caller keeps its no-authorizer answer).
    pub fn authorized_operations(&self, rt: ResourceType, name: &str) -> Option<i32> {
        self.checked.as_ref().map(|c| {
            c.authorizer
                .authorized_operations(&c.principal, &c.host, rt, name)
        })
    }
}

/// The error Kafka answers when a resource of type `rt` is not authorized.
pub fn unauthorized(rt: ResourceType) -> ResponseError {
    match rt {
        ResourceType::Topic => ResponseError::TopicAuthorizationFailed,
        ResourceType::Group => ResponseError::GroupAuthorizationFailed,
        ResourceType::Cluster => ResponseError::ClusterAuthorizationFailed,
        ResourceType::TransactionalId => ResponseError::TransactionalIdAuthorizationFailed,
        ResourceType::DelegationToken => ResponseError::DelegationTokenAuthorizationFailed,
        ResourceType::User | ResourceType::Any | ResourceType::Unknown => {
            ResponseError::ClusterAuthorizationFailed
        }
    }
}

/// The code of [`unauthorized`].
pub fn unauthorized_code(rt: ResourceType) -> i16 {
    unauthorized(rt).code()
}

/// The ACL resource a config resource (DescribeConfigs / AlterConfigs wire type) is
/// authorized on, as Kafka's `KafkaApis`: a topic or a group by its name; a broker, a broker
/// logger or anything else the cluster.
pub fn config_resource(config_type: i8, name: &str) -> (ResourceType, &str) {
    match config_type {
        2 => (ResourceType::Topic, name),
        32 => (ResourceType::Group, name),
        _ => (ResourceType::Cluster, CLUSTER_NAME),
    }
}

/// Kafka's default message for an authorization failure on `rt` (its `Errors` text).
pub fn unauthorized_message(rt: ResourceType) -> &'static str {
    match rt {
        ResourceType::Topic => "Topic authorization failed.",
        ResourceType::Group => "Group authorization failed.",
        ResourceType::TransactionalId => "Transactional Id authorization failed.",
        _ => "Cluster authorization failed.",
    }
}
