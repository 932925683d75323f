//! Skiff's access control, without I/O except the ACL file: the ACL model with Kafka's wire
//! codes ([`model`]), CreateAcls validation ([`validate`]), DescribeAcls/DeleteAcls filters
//! ([`filter`]), an authorizer with Kafka 4's StandardAuthorizer semantics ([`authorizer`]),
//! the durable ACL file ([`store`]), the three ACL APIs over both ([`service`]), Kafka's
//! `ssl.principal.mapping.rules` ([`ssl_mapping`]) and the certificate subject text they
//! apply to ([`dn`]).
//!
//! The broker wires these into its handlers; nothing here knows of sockets or async.

pub mod authorizer;
pub mod dn;
pub mod filter;
pub mod model;
pub mod service;
pub mod ssl_mapping;
pub mod store;
pub mod validate;

pub use authorizer::{host_address, Authorizer, AuthorizerConfig, Decision};
pub use filter::{AccessControlEntryFilter, AclBindingFilter, ResourcePatternFilter};
pub use model::{
    AccessControlEntry, AclBinding, AclOperation, PatternType, PermissionType, Principal,
    ResourcePattern, ResourceType, CLUSTER_NAME, WILDCARD,
};
pub use service::Acls;
pub use ssl_mapping::SslPrincipalMapper;
pub use store::AclStore;
pub use validate::{ApiError, ErrorCode};

use std::path::PathBuf;

/// The errors of this crate (request-level refusals are [`validate::ApiError`] values, not
/// errors).
#[derive(Debug, thiserror::Error)]
pub enum AclError {
    /// A configuration value is unusable (`super.users`, ...).
    #[error("{0}")]
    Config(String),
    /// `ssl.principal.mapping.rules` cannot be parsed; the text names the rule.
    #[error("ssl.principal.mapping.rules: {0}")]
    MappingRules(String),
    /// No mapping rule applies to a certificate's distinguished name, or a rule's replacement
    /// is unusable for it.
    #[error("{0}")]
    Mapping(String),
    #[error("{context} {}: {source}", path.display())]
    Io {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The ACL file exists but cannot be used; the broker must not start over it (its
    /// contents would be lost on the next write).
    #[error("{} is not a valid ACL file: {reason}", path.display())]
    Corrupt { path: PathBuf, reason: String },
}
