//! What CreateAcls, DescribeAcls and DeleteAcls refuse, in the order and with the error codes
//! and messages Kafka 4 uses.
//!
//! Kafka refuses in three places, and a handler must keep their order:
//! 1. **Parsing** ([`check_create_request`], [`check_filter_request`]): a request carrying an
//!    `UNKNOWN` code (0, or any code Kafka does not define), or a version-0 request with a
//!    pattern type other than LITERAL, fails to parse; Kafka then closes the connection
//!    without answering. DescribeAcls/DeleteAcls v0 first rewrite a filter's pattern type ANY
//!    to LITERAL (v0 predates pattern types).
//! 2. **The handler**, after the CLUSTER ALTER (Create/Delete) or CLUSTER DESCRIBE (Describe)
//!    check: a creation naming resource type ANY, pattern type ANY or MATCH, operation ANY or
//!    permission ANY cannot become a binding, and Kafka then fails the *whole* request with
//!    UNKNOWN_SERVER_ERROR (message null) for every creation ([`check_creations_constructible`]).
//! 3. **Per creation** ([`validate_creation`]): INVALID_REQUEST with Kafka's messages.
//!
//! Kafka does not check that an operation is one the resource type supports (READ on CLUSTER
//! is stored), nor the host, nor the principal type; a PREFIXED `*` is an ordinary prefix.
//!
//! Thread safety: pure functions.

use crate::filter::AclBindingFilter;
use crate::model::{
    AclBinding, AclOperation, PatternType, PermissionType, ResourceType, CLUSTER_NAME,
};

/// The Kafka error codes this crate answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i16)]
pub enum ErrorCode {
    UnknownServerError = -1,
    None = 0,
    TopicAuthorizationFailed = 29,
    GroupAuthorizationFailed = 30,
    ClusterAuthorizationFailed = 31,
    InvalidRequest = 42,
    TransactionalIdAuthorizationFailed = 53,
    SecurityDisabled = 54,
    DelegationTokenAuthorizationFailed = 65,
}

impl ErrorCode {
    pub fn code(self) -> i16 {
        self as i16
    }

    /// The error Kafka answers when `resource_type` is not authorized (its
    /// `AclEntry.authorizationError`); `None` for types that have none (USER, ANY, UNKNOWN),
    /// where Kafka's handlers choose per API.
    pub fn authorization_failed(resource_type: ResourceType) -> Option<ErrorCode> {
        match resource_type {
            ResourceType::Topic => Some(ErrorCode::TopicAuthorizationFailed),
            ResourceType::Group => Some(ErrorCode::GroupAuthorizationFailed),
            ResourceType::Cluster => Some(ErrorCode::ClusterAuthorizationFailed),
            ResourceType::TransactionalId => Some(ErrorCode::TransactionalIdAuthorizationFailed),
            ResourceType::DelegationToken => Some(ErrorCode::DelegationTokenAuthorizationFailed),
            ResourceType::User | ResourceType::Any | ResourceType::Unknown => None,
        }
    }
}

/// An error code with the message Kafka puts beside it (`None`: Kafka sends null).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: Option<String>,
}

impl ApiError {
    fn invalid(message: String) -> ApiError {
        ApiError {
            code: ErrorCode::InvalidRequest,
            message: Some(message),
        }
    }
}

/// A request Kafka cannot parse; the connection is to be closed. The text is for the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unparseable(pub String);

/// Parse-time checks of a CreateAcls request of `version` (see the module docs, step 1).
pub fn check_create_request(version: i16, creations: &[AclBinding]) -> Result<(), Unparseable> {
    if version == 0
        && creations
            .iter()
            .any(|c| c.pattern.pattern_type != PatternType::Literal)
    {
        return Err(Unparseable(
            "CreateAcls v0 only supports literal resource pattern types".into(),
        ));
    }
    for c in creations {
        if c.pattern.pattern_type == PatternType::Unknown
            || c.pattern.resource_type == ResourceType::Unknown
            || c.entry.permission_type == PermissionType::Unknown
            || c.entry.operation == AclOperation::Unknown
        {
            return Err(Unparseable(format!(
                "CreateAcls creation has an UNKNOWN element: {c}"
            )));
        }
    }
    Ok(())
}

/// Parse-time checks of a DescribeAcls filter or of each DeleteAcls filter, with the v0
/// rewrite of ANY to LITERAL applied in place (see the module docs, step 1).
pub fn check_filter_request(
    version: i16,
    filter: &mut AclBindingFilter,
) -> Result<(), Unparseable> {
    if version == 0 {
        match filter.pattern.pattern_type {
            PatternType::Any => filter.pattern.pattern_type = PatternType::Literal,
            PatternType::Literal => {}
            other => {
                return Err(Unparseable(format!(
                    "version 0 does not support pattern type {other} (only LITERAL and ANY)"
                )))
            }
        }
    }
    if filter.is_unknown() {
        return Err(Unparseable(format!(
            "ACL filter has an UNKNOWN element: {filter:?}"
        )));
    }
    Ok(())
}

/// Step 2 of the module docs: `Err` (to be answered for every creation) when some creation
/// cannot be turned into a binding.
pub fn check_creations_constructible(creations: &[AclBinding]) -> Result<(), ApiError> {
    let bad = creations.iter().any(|c| {
        c.pattern.resource_type == ResourceType::Any
            || matches!(
                c.pattern.pattern_type,
                PatternType::Any | PatternType::Match
            )
            || c.entry.operation == AclOperation::Any
            || c.entry.permission_type == PermissionType::Any
    });
    if bad {
        Err(ApiError {
            code: ErrorCode::UnknownServerError,
            message: None,
        })
    } else {
        Ok(())
    }
}

/// Step 3 of the module docs: may this binding be stored? Checks in Kafka's order: the
/// broker's (CLUSTER name, empty name), then the controller's.
pub fn validate_creation(binding: &AclBinding) -> Result<(), ApiError> {
    let pattern = &binding.pattern;
    let entry = &binding.entry;
    if pattern.resource_type == ResourceType::Cluster && pattern.name != CLUSTER_NAME {
        return Err(ApiError::invalid(format!(
            "The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        )));
    }
    if pattern.name.is_empty() {
        return Err(ApiError::invalid("Invalid empty resource name".into()));
    }
    if !pattern.resource_type.is_concrete() {
        return Err(ApiError::invalid(format!(
            "Invalid resourceType {}",
            pattern.resource_type
        )));
    }
    if !matches!(
        pattern.pattern_type,
        PatternType::Literal | PatternType::Prefixed
    ) {
        return Err(ApiError::invalid(format!(
            "Invalid patternType {}",
            pattern.pattern_type
        )));
    }
    if matches!(entry.operation, AclOperation::Unknown | AclOperation::Any) {
        return Err(ApiError::invalid(format!(
            "Invalid operation {}",
            entry.operation
        )));
    }
    if !matches!(
        entry.permission_type,
        PermissionType::Allow | PermissionType::Deny
    ) {
        return Err(ApiError::invalid(format!(
            "Invalid permissionType {}",
            entry.permission_type
        )));
    }
    if !entry.principal.contains(':') {
        return Err(ApiError::invalid(format!(
            "Could not parse principal from `{}` (no colon is present separating the \
             principal type from the principal name)",
            entry.principal
        )));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{AccessControlEntry, ResourcePattern};

    fn b(rt: ResourceType, name: &str, pt: PatternType, principal: &str) -> AclBinding {
        AclBinding::new(
            ResourcePattern::new(rt, name, pt),
            AccessControlEntry::new(principal, "*", AclOperation::Read, PermissionType::Allow),
        )
    }

    fn msg(r: Result<(), ApiError>) -> (ErrorCode, String) {
        let e = r.unwrap_err();
        (e.code, e.message.unwrap_or_default())
    }

    #[test]
    fn valid_bindings_pass() {
        use PatternType::*;
        for binding in [
            b(ResourceType::Topic, "t", Literal, "User:alice"),
            b(ResourceType::Topic, "*", Literal, "User:*"),
            b(ResourceType::Topic, "*", Prefixed, "User:alice"),
            b(ResourceType::Group, "g-", Prefixed, "Group:x"),
            b(ResourceType::Cluster, "kafka-cluster", Literal, "User:a"),
            b(ResourceType::Cluster, "kafka-cluster", Prefixed, "User:a"),
            b(ResourceType::TransactionalId, "tx", Literal, "User:"),
            b(ResourceType::User, "bob", Literal, "User:a"),
        ] {
            assert_eq!(validate_creation(&binding), Ok(()), "{binding}");
        }
    }

    #[test]
    fn invalid_bindings_get_kafkas_errors() {
        use PatternType::*;
        let c = msg(validate_creation(&b(
            ResourceType::Cluster,
            "my-cluster",
            Literal,
            "User:a",
        )));
        assert_eq!(
            c,
            (
                ErrorCode::InvalidRequest,
                "The only valid name for the CLUSTER resource is kafka-cluster".into()
            )
        );
        // The CLUSTER name check comes first, so an empty CLUSTER name gets its message.
        let c = msg(validate_creation(&b(
            ResourceType::Cluster,
            "",
            Literal,
            "a",
        )));
        assert!(c.1.starts_with("The only valid name"), "{c:?}");
        let c = msg(validate_creation(&b(
            ResourceType::Topic,
            "",
            Literal,
            "User:a",
        )));
        assert_eq!(
            c,
            (
                ErrorCode::InvalidRequest,
                "Invalid empty resource name".into()
            )
        );
        let c = msg(validate_creation(&b(
            ResourceType::Topic,
            "t",
            Literal,
            "alice",
        )));
        assert_eq!(
            c.1,
            "Could not parse principal from `alice` (no colon is present separating the \
             principal type from the principal name)"
        );
        let c = msg(validate_creation(&b(
            ResourceType::Topic,
            "t",
            Match,
            "User:a",
        )));
        assert_eq!(c.1, "Invalid patternType MATCH");
        let mut x = b(ResourceType::Topic, "t", Literal, "User:a");
        x.entry.operation = AclOperation::Any;
        assert_eq!(msg(validate_creation(&x)).1, "Invalid operation ANY");
        x.entry.operation = AclOperation::Read;
        x.entry.permission_type = PermissionType::Any;
        assert_eq!(msg(validate_creation(&x)).1, "Invalid permissionType ANY");
        let c = msg(validate_creation(&b(
            ResourceType::Any,
            "t",
            Literal,
            "User:a",
        )));
        assert_eq!(c.1, "Invalid resourceType ANY");
    }

    #[test]
    fn unbuildable_creations_fail_the_whole_request() {
        let ok = b(ResourceType::Topic, "t", PatternType::Literal, "User:a");
        assert_eq!(
            check_creations_constructible(std::slice::from_ref(&ok)),
            Ok(())
        );
        for bad in [
            b(ResourceType::Any, "t", PatternType::Literal, "User:a"),
            b(ResourceType::Topic, "t", PatternType::Any, "User:a"),
            b(ResourceType::Topic, "t", PatternType::Match, "User:a"),
        ] {
            let e = check_creations_constructible(&[ok.clone(), bad]).unwrap_err();
            assert_eq!(e.code, ErrorCode::UnknownServerError);
            assert_eq!(e.message, None);
        }
        let mut bad = ok.clone();
        bad.entry.operation = AclOperation::Any;
        assert!(check_creations_constructible(&[bad]).is_err());
    }

    #[test]
    fn unknown_codes_and_v0_patterns_are_unparseable() {
        let lit = b(ResourceType::Topic, "t", PatternType::Literal, "User:a");
        let pre = b(ResourceType::Topic, "t", PatternType::Prefixed, "User:a");
        assert!(check_create_request(0, std::slice::from_ref(&lit)).is_ok());
        assert!(check_create_request(0, &[lit.clone(), pre.clone()]).is_err());
        assert!(check_create_request(1, &[lit.clone(), pre]).is_ok());
        let mut unk = lit.clone();
        unk.pattern.resource_type = ResourceType::from_code(42);
        assert!(check_create_request(3, &[unk]).is_err());
        let mut unk = lit;
        unk.entry.operation = AclOperation::Unknown;
        assert!(check_create_request(3, &[unk]).is_err());

        let mut f = AclBindingFilter::any();
        assert!(check_filter_request(0, &mut f).is_ok());
        assert_eq!(f.pattern.pattern_type, PatternType::Literal);
        let mut f = AclBindingFilter::any();
        assert!(check_filter_request(1, &mut f).is_ok());
        assert_eq!(f.pattern.pattern_type, PatternType::Any);
        let mut f = AclBindingFilter::any();
        f.pattern.pattern_type = PatternType::Match;
        assert!(check_filter_request(0, &mut f).is_err());
        assert!(check_filter_request(1, &mut f).is_ok());
        f.entry.permission_type = PermissionType::Unknown;
        assert!(check_filter_request(2, &mut f).is_err());
    }

    #[test]
    fn authorization_errors_per_resource_type() {
        assert_eq!(
            ErrorCode::authorization_failed(ResourceType::Topic).map(ErrorCode::code),
            Some(29)
        );
        assert_eq!(
            ErrorCode::authorization_failed(ResourceType::TransactionalId).map(ErrorCode::code),
            Some(53)
        );
        assert_eq!(ErrorCode::authorization_failed(ResourceType::User), None);
        assert_eq!(ErrorCode::InvalidRequest.code(), 42);
        assert_eq!(ErrorCode::SecurityDisabled.code(), 54);
    }
}
