//! Which operations the requester may perform on a resource, as the bit field Kafka's
//! describe APIs return in their `*AuthorizedOperations` fields (bit n set: the AclOperation
//! with code n is allowed). Handlers ask [`authorized_operations`] and never compute the
//! bits themselves, so that an authorizer can later answer per principal in one place.
//!
//! With an authorizer configured, [`operations`] answers from it for the requester
//! ([`crate::authz::Authz`]); without one, Kafka allows every operation a resource type
//! supports, so that is what is returned for every principal.
//!
//! Thread safety: pure functions.

pub use skiff_acl::{AclOperation, ResourceType};

/// Who is asking: `User:ANONYMOUS` on PLAINTEXT connections and TLS ones without a client
/// certificate (as Kafka), `User:<mapped subject>` for a TLS client certificate. The name is
/// owned when it comes from a connection, borrowed for constants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal<'a> {
    pub kind: &'a str,
    pub name: std::borrow::Cow<'a, str>,
}

impl std::fmt::Display for Principal<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.kind, self.name)
    }
}

impl Principal<'static> {
    pub const ANONYMOUS: Principal<'static> = Principal {
        kind: "User",
        name: std::borrow::Cow::Borrowed("ANONYMOUS"),
    };
}

/// The bit field of the operations `principal` may perform on the resource `name` of type
/// `resource`. Without an authorizer: every supported operation, whoever asks.
pub fn authorized_operations(
    _principal: &Principal<'_>,
    resource: ResourceType,
    _name: &str,
) -> i32 {
    bits(resource.supported_operations())
}

/// The bit field for the requester of `authz`: from the authorizer when one is configured,
/// else [`authorized_operations`]'s every-supported-operation answer.
pub fn operations(authz: &crate::authz::Authz, resource: ResourceType, name: &str) -> i32 {
    authz
        .authorized_operations(resource, name)
        .unwrap_or_else(|| bits(resource.supported_operations()))
}

fn bits(ops: &[AclOperation]) -> i32 {
    ops.iter().fold(0, |acc, op| acc | (1i32 << op.code()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_an_authorizer_every_supported_operation_is_allowed() {
        let ops = |r| authorized_operations(&Principal::ANONYMOUS, r, "x");
        // READ(3) WRITE(4) CREATE(5) DELETE(6) ALTER(7) DESCRIBE(8) DESCRIBE_CONFIGS(10)
        // ALTER_CONFIGS(11).
        assert_eq!(ops(ResourceType::Topic), 0b1101_1111_1000);
        assert_eq!(ops(ResourceType::Topic), 3576);
        // READ DELETE DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS.
        assert_eq!(ops(ResourceType::Group), 3400);
        // CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE.
        assert_eq!(ops(ResourceType::Cluster), 8096);
        assert_eq!(ops(ResourceType::TransactionalId), (1 << 4) | (1 << 8));
        assert_eq!(ops(ResourceType::DelegationToken), 1 << 8);
        assert_eq!(ops(ResourceType::User), (1 << 13) | (1 << 14));
    }
}
