//! DescribeAcls, CreateAcls and DeleteAcls (v1-3): Skiff has no authorizer, so these answer
//! exactly as Kafka does when `authorizer.class.name` is unset — SECURITY_DISABLED, which
//! clients (MirrorMaker 2's topic ACL sync, `kafka-acls.sh`) read as "no ACLs here".
//!
//! Kafka answers differently per API: DescribeAcls fails as a whole (no resources),
//! CreateAcls fails each creation and DeleteAcls each filter, with their own messages.
//! Before that, Kafka's request parser refuses any filter or creation that names an UNKNOWN
//! (code 0) resource type, pattern type, operation or permission type; a parse failure there
//! closes the connection, and so does Skiff. Codes Kafka does not know (other than 0) pass
//! its parser and get SECURITY_DISABLED like any other.
//!
//! Thread-safety: stateless. No on-disk format.

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::DeleteAclsFilterResult;
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse, ResponseKind,
};

use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::{kafka_error, BrokerError};
use crate::handlers::str_bytes;

/// DescribeAcls' top-level message when no authorizer is configured (Kafka's wording).
pub const DESCRIBE_NO_AUTHORIZER: &str = "No Authorizer is configured on the broker";
/// CreateAcls' per-creation and DeleteAcls' per-filter message (Kafka's wording).
pub const ALTER_NO_AUTHORIZER: &str = "No Authorizer is configured.";

/// The UNKNOWN code of Kafka's ResourceType, PatternType, AclOperation and AclPermissionType.
const UNKNOWN: i8 = 0;

/// True when any of the four enum codes of a filter or creation is UNKNOWN.
fn names_unknown(resource_type: i8, pattern_type: i8, operation: i8, permission: i8) -> bool {
    [resource_type, pattern_type, operation, permission].contains(&UNKNOWN)
}

pub async fn describe(ctx: &RequestContext, request: DescribeAclsRequest) -> Reply {
    answer_describe(ctx.version(), request)
}

pub async fn create(ctx: &RequestContext, request: CreateAclsRequest) -> Reply {
    answer_create(ctx.version(), request)
}

pub async fn delete(ctx: &RequestContext, request: DeleteAclsRequest) -> Reply {
    answer_delete(ctx.version(), request)
}

/// The code every ACL API answers without an authorizer.
fn no_authorizer(api: ApiKey, version: i16, message: &'static str) -> i16 {
    kafka_error(api, version, &BrokerError::NoAuthorizer(message)).code()
}

fn answer_describe(version: i16, request: DescribeAclsRequest) -> Reply {
    if names_unknown(
        request.resource_type_filter,
        request.pattern_type_filter,
        request.operation,
        request.permission_type,
    ) {
        return Reply::Close(
            "DescribeAcls filter contains UNKNOWN elements (Kafka refuses to parse it); closing"
                .to_string(),
        );
    }
    Reply::Respond(ResponseKind::DescribeAcls(
        DescribeAclsResponse::default()
            .with_error_code(no_authorizer(
                ApiKey::DescribeAcls,
                version,
                DESCRIBE_NO_AUTHORIZER,
            ))
            .with_error_message(Some(str_bytes(DESCRIBE_NO_AUTHORIZER))),
    ))
}

fn answer_create(version: i16, request: CreateAclsRequest) -> Reply {
    if request.creations.iter().any(|c| {
        names_unknown(
            c.resource_type,
            c.resource_pattern_type,
            c.operation,
            c.permission_type,
        )
    }) {
        return Reply::Close(
            "CreateAcls creations contain UNKNOWN elements (Kafka refuses to parse them); closing"
                .to_string(),
        );
    }
    let results = request
        .creations
        .iter()
        .map(|_| {
            AclCreationResult::default()
                .with_error_code(no_authorizer(
                    ApiKey::CreateAcls,
                    version,
                    ALTER_NO_AUTHORIZER,
                ))
                .with_error_message(Some(str_bytes(ALTER_NO_AUTHORIZER)))
        })
        .collect();
    Reply::Respond(ResponseKind::CreateAcls(
        CreateAclsResponse::default().with_results(results),
    ))
}

fn answer_delete(version: i16, request: DeleteAclsRequest) -> Reply {
    if request.filters.iter().any(|f| {
        names_unknown(
            f.resource_type_filter,
            f.pattern_type_filter,
            f.operation,
            f.permission_type,
        )
    }) {
        return Reply::Close(
            "DeleteAcls filters contain UNKNOWN elements (Kafka refuses to parse them); closing"
                .to_string(),
        );
    }
    let results = request
        .filters
        .iter()
        .map(|_| {
            DeleteAclsFilterResult::default()
                .with_error_code(no_authorizer(
                    ApiKey::DeleteAcls,
                    version,
                    ALTER_NO_AUTHORIZER,
                ))
                .with_error_message(Some(str_bytes(ALTER_NO_AUTHORIZER)))
        })
        .collect();
    Reply::Respond(ResponseKind::DeleteAcls(
        DeleteAclsResponse::default().with_filter_results(results),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::create_acls_request::AclCreation;
    use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;

    // Codes as Kafka's admin client sends them: TOPIC=2, LITERAL=3, ANY=1, READ=3, ALLOW=3.
    fn creation(name: &str) -> AclCreation {
        AclCreation::default()
            .with_resource_type(2)
            .with_resource_name(str_bytes(name))
            .with_resource_pattern_type(3)
            .with_principal(str_bytes("User:alice"))
            .with_host(str_bytes("*"))
            .with_operation(3)
            .with_permission_type(3)
    }

    fn any_filter() -> DeleteAclsFilter {
        DeleteAclsFilter::default()
            .with_resource_type_filter(1)
            .with_pattern_type_filter(1)
            .with_operation(1)
            .with_permission_type(1)
    }

    fn respond(reply: Reply) -> ResponseKind {
        match reply {
            Reply::Respond(r) => r,
            Reply::Close(why) => panic!("closed: {why}"),
            _ => panic!("no immediate answer"),
        }
    }

    #[test]
    fn describe_is_security_disabled_with_no_resources() {
        // MirrorMaker 2's filter: topics, any name/pattern/principal/host/operation/permission.
        let request = DescribeAclsRequest::default()
            .with_resource_type_filter(2)
            .with_pattern_type_filter(1)
            .with_operation(1)
            .with_permission_type(1);
        let ResponseKind::DescribeAcls(r) = respond(answer_describe(3, request)) else {
            panic!("wrong response kind");
        };
        assert_eq!(r.error_code, 54);
        assert_eq!(
            r.error_message.as_deref(),
            Some("No Authorizer is configured on the broker")
        );
        assert!(r.resources.is_empty());
        assert_eq!(r.throttle_time_ms, 0);
    }

    #[test]
    fn create_fails_each_creation() {
        let request = CreateAclsRequest::default().with_creations(vec![
            creation("a"),
            creation("b"),
            creation("c"),
        ]);
        let ResponseKind::CreateAcls(r) = respond(answer_create(2, request)) else {
            panic!("wrong response kind");
        };
        assert_eq!(r.results.len(), 3);
        for result in &r.results {
            assert_eq!(result.error_code, 54);
            assert_eq!(
                result.error_message.as_deref(),
                Some("No Authorizer is configured.")
            );
        }
        let ResponseKind::CreateAcls(empty) =
            respond(answer_create(1, CreateAclsRequest::default()))
        else {
            panic!("wrong response kind");
        };
        assert!(empty.results.is_empty());
    }

    #[test]
    fn delete_fails_each_filter() {
        let request = DeleteAclsRequest::default().with_filters(vec![any_filter(), any_filter()]);
        let ResponseKind::DeleteAcls(r) = respond(answer_delete(3, request)) else {
            panic!("wrong response kind");
        };
        assert_eq!(r.filter_results.len(), 2);
        for result in &r.filter_results {
            assert_eq!(result.error_code, 54);
            assert_eq!(
                result.error_message.as_deref(),
                Some("No Authorizer is configured.")
            );
            assert!(result.matching_acls.is_empty());
        }
    }

    #[test]
    fn unknown_elements_close_the_connection() {
        let unknown_describe = DescribeAclsRequest::default()
            .with_resource_type_filter(2)
            .with_pattern_type_filter(1)
            .with_operation(0)
            .with_permission_type(1);
        assert!(matches!(
            answer_describe(3, unknown_describe),
            Reply::Close(_)
        ));
        let unknown_creation = CreateAclsRequest::default().with_creations(vec![
            creation("a"),
            creation("b").with_resource_pattern_type(0),
        ]);
        assert!(matches!(
            answer_create(3, unknown_creation),
            Reply::Close(_)
        ));
        let unknown_filter = DeleteAclsRequest::default().with_filters(vec![
            any_filter(),
            any_filter().with_resource_type_filter(0),
        ]);
        assert!(matches!(answer_delete(3, unknown_filter), Reply::Close(_)));
        // A code Kafka does not know but that is not 0 passes its parser: answered normally.
        let odd = DescribeAclsRequest::default()
            .with_resource_type_filter(99)
            .with_pattern_type_filter(1)
            .with_operation(1)
            .with_permission_type(1);
        assert!(matches!(answer_describe(3, odd), Reply::Respond(_)));
    }
}
