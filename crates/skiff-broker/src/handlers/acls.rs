//! DescribeAcls, CreateAcls and DeleteAcls (v1-3).
//!
//! With an authorizer (`authorizer.class.name`), they are served from the broker's
//! [`skiff_acl::Acls`] as Kafka 4 serves them: Kafka's parse-time checks first (a request it
//! cannot parse closes the connection), then CLUSTER ALTER (Create/Delete) or CLUSTER
//! DESCRIBE (Describe) — refused with CLUSTER_AUTHORIZATION_FAILED for the whole request or
//! every creation/filter — then the per-creation validation and the durable write (on the
//! blocking pool: it fsyncs `acls.json`).
//!
//! Without an authorizer, they answer exactly as Kafka does when `authorizer.class.name` is
//! unset — SECURITY_DISABLED, which clients (MirrorMaker 2's topic ACL sync,
//! `kafka-acls.sh`) read as "no ACLs here".
//!
//! Kafka answers differently per API: DescribeAcls fails as a whole (no resources),
//! CreateAcls fails each creation and DeleteAcls each filter, with their own messages.
//! Before that, Kafka's request parser refuses any filter or creation that names an UNKNOWN
//! (code 0) resource type, pattern type, operation or permission type; a parse failure there
//! closes the connection, and so does Skiff. Codes Kafka does not know (other than 0) pass
//! its parser and get SECURITY_DISABLED like any other.
//!
//! Thread-safety: the ACL state synchronises itself ([`skiff_acl::Acls`]). On-disk format:
//! `acls.json`, owned by `skiff_acl::store`.

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
    match &ctx.broker.acls {
        Some(acls) => served::describe(ctx, acls, request),
        None => answer_describe(ctx.version(), request),
    }
}

pub async fn create(ctx: &RequestContext, request: CreateAclsRequest) -> Reply {
    match &ctx.broker.acls {
        Some(acls) => served::create(ctx, acls.clone(), request).await,
        None => answer_create(ctx.version(), request),
    }
}

pub async fn delete(ctx: &RequestContext, request: DeleteAclsRequest) -> Reply {
    match &ctx.broker.acls {
        Some(acls) => served::delete(ctx, acls.clone(), request).await,
        None => answer_delete(ctx.version(), request),
    }
}

/// The three APIs with an authorizer.
mod served {
    use std::sync::Arc;

    use kafka_protocol::messages::create_acls_request::AclCreation;
    use kafka_protocol::messages::create_acls_response::AclCreationResult;
    use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
    use kafka_protocol::messages::delete_acls_response::{
        DeleteAclsFilterResult, DeleteAclsMatchingAcl,
    };
    use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
    use kafka_protocol::messages::{
        CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
        DescribeAclsRequest, DescribeAclsResponse, ResponseKind,
    };
    use kafka_protocol::protocol::StrBytes;
    use kafka_protocol::ResponseError;
    use skiff_acl::validate::{
        check_create_request, check_creations_constructible, check_filter_request,
    };
    use skiff_acl::{
        AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation,
        Acls, ApiError, PatternType, PermissionType, ResourcePattern, ResourcePatternFilter,
        ResourceType,
    };

    use crate::context::RequestContext;
    use crate::dispatch::{blocking, Reply};
    use crate::handlers::str_bytes;

    /// The message beside CLUSTER_AUTHORIZATION_FAILED (Kafka's default for the code).
    const CLUSTER_DENIED: &str = "Cluster authorization failed.";

    fn opt(s: &Option<StrBytes>) -> Option<String> {
        s.as_ref().map(|s| s.to_string())
    }

    fn binding(c: &AclCreation) -> AclBinding {
        AclBinding::new(
            ResourcePattern::new(
                ResourceType::from_code(c.resource_type),
                c.resource_name.to_string(),
                PatternType::from_code(c.resource_pattern_type),
            ),
            AccessControlEntry::new(
                c.principal.to_string(),
                c.host.to_string(),
                AclOperation::from_code(c.operation),
                PermissionType::from_code(c.permission_type),
            ),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn filter(
        resource_type: i8,
        name: &Option<StrBytes>,
        pattern_type: i8,
        principal: &Option<StrBytes>,
        host: &Option<StrBytes>,
        operation: i8,
        permission: i8,
    ) -> AclBindingFilter {
        AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type: ResourceType::from_code(resource_type),
                name: opt(name),
                pattern_type: PatternType::from_code(pattern_type),
            },
            entry: AccessControlEntryFilter {
                principal: opt(principal),
                host: opt(host),
                operation: AclOperation::from_code(operation),
                permission_type: PermissionType::from_code(permission),
            },
        }
    }

    fn delete_filter(f: &DeleteAclsFilter) -> AclBindingFilter {
        filter(
            f.resource_type_filter,
            &f.resource_name_filter,
            f.pattern_type_filter,
            &f.principal_filter,
            &f.host_filter,
            f.operation,
            f.permission_type,
        )
    }

    fn message(e: &ApiError) -> Option<StrBytes> {
        e.message.as_deref().map(str_bytes)
    }

    pub(super) fn describe(
        ctx: &RequestContext,
        acls: &Acls,
        request: DescribeAclsRequest,
    ) -> Reply {
        let mut f = filter(
            request.resource_type_filter,
            &request.resource_name_filter,
            request.pattern_type_filter,
            &request.principal_filter,
            &request.host_filter,
            request.operation,
            request.permission_type,
        );
        if let Err(why) = check_filter_request(ctx.version(), &mut f) {
            return Reply::Close(format!("DescribeAcls: {}; closing", why.0));
        }
        if !ctx.authz().allows_cluster(AclOperation::Describe) {
            return Reply::Respond(ResponseKind::DescribeAcls(
                DescribeAclsResponse::default()
                    .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
                    .with_error_message(Some(str_bytes(CLUSTER_DENIED))),
            ));
        }
        let resources = acls
            .describe(&f)
            .into_iter()
            .map(|(pattern, entries)| {
                DescribeAclsResource::default()
                    .with_resource_type(pattern.resource_type.code())
                    .with_resource_name(str_bytes(&pattern.name))
                    .with_pattern_type(pattern.pattern_type.code())
                    .with_acls(
                        entries
                            .iter()
                            .map(|e| {
                                AclDescription::default()
                                    .with_principal(str_bytes(&e.principal))
                                    .with_host(str_bytes(&e.host))
                                    .with_operation(e.operation.code())
                                    .with_permission_type(e.permission_type.code())
                            })
                            .collect(),
                    )
            })
            .collect();
        Reply::Respond(ResponseKind::DescribeAcls(
            DescribeAclsResponse::default().with_resources(resources),
        ))
    }

    fn creation_result(r: &Result<(), ApiError>) -> AclCreationResult {
        match r {
            Ok(()) => AclCreationResult::default(),
            Err(e) => AclCreationResult::default()
                .with_error_code(e.code.code())
                .with_error_message(message(e)),
        }
    }

    pub(super) async fn create(
        ctx: &RequestContext,
        acls: Arc<Acls>,
        request: CreateAclsRequest,
    ) -> Reply {
        let creations: Vec<AclBinding> = request.creations.iter().map(binding).collect();
        if let Err(why) = check_create_request(ctx.version(), &creations) {
            return Reply::Close(format!("CreateAcls: {}; closing", why.0));
        }
        let respond = |results: Vec<AclCreationResult>| {
            Reply::Respond(ResponseKind::CreateAcls(
                CreateAclsResponse::default().with_results(results),
            ))
        };
        if !ctx.authz().allows_cluster(AclOperation::Alter) {
            return respond(
                creations
                    .iter()
                    .map(|_| {
                        AclCreationResult::default()
                            .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
                            .with_error_message(Some(str_bytes(CLUSTER_DENIED)))
                    })
                    .collect(),
            );
        }
        if let Err(e) = check_creations_constructible(&creations) {
            return respond(
                creations
                    .iter()
                    .map(|_| creation_result(&Err(e.clone())))
                    .collect(),
            );
        }
        let n = creations.len();
        match blocking(move || acls.create(&creations)).await {
            Ok(results) => respond(results.iter().map(creation_result).collect()),
            Err(e) => respond(
                (0..n)
                    .map(|_| {
                        AclCreationResult::default()
                            .with_error_code(ctx.code(&e))
                            .with_error_message(Some(str_bytes(&e.to_string())))
                    })
                    .collect(),
            ),
        }
    }

    fn matching(b: &AclBinding) -> DeleteAclsMatchingAcl {
        DeleteAclsMatchingAcl::default()
            .with_resource_type(b.pattern.resource_type.code())
            .with_resource_name(str_bytes(&b.pattern.name))
            .with_pattern_type(b.pattern.pattern_type.code())
            .with_principal(str_bytes(&b.entry.principal))
            .with_host(str_bytes(&b.entry.host))
            .with_operation(b.entry.operation.code())
            .with_permission_type(b.entry.permission_type.code())
    }

    pub(super) async fn delete(
        ctx: &RequestContext,
        acls: Arc<Acls>,
        request: DeleteAclsRequest,
    ) -> Reply {
        let mut filters: Vec<AclBindingFilter> =
            request.filters.iter().map(delete_filter).collect();
        for f in &mut filters {
            if let Err(why) = check_filter_request(ctx.version(), f) {
                return Reply::Close(format!("DeleteAcls: {}; closing", why.0));
            }
        }
        let respond = |results: Vec<DeleteAclsFilterResult>| {
            Reply::Respond(ResponseKind::DeleteAcls(
                DeleteAclsResponse::default().with_filter_results(results),
            ))
        };
        let failed = |code: i16, text: Option<StrBytes>| {
            filters
                .iter()
                .map(|_| {
                    DeleteAclsFilterResult::default()
                        .with_error_code(code)
                        .with_error_message(text.clone())
                })
                .collect::<Vec<_>>()
        };
        if !ctx.authz().allows_cluster(AclOperation::Alter) {
            return respond(failed(
                ResponseError::ClusterAuthorizationFailed.code(),
                Some(str_bytes(CLUSTER_DENIED)),
            ));
        }
        let owned = filters.clone();
        match blocking(move || acls.delete(&owned)).await {
            Ok(results) => respond(
                results
                    .iter()
                    .map(|r| match r {
                        Ok(removed) => DeleteAclsFilterResult::default()
                            .with_matching_acls(removed.iter().map(matching).collect()),
                        Err(e) => DeleteAclsFilterResult::default()
                            .with_error_code(e.code.code())
                            .with_error_message(message(e)),
                    })
                    .collect(),
            ),
            Err(e) => respond(failed(ctx.code(&e), Some(str_bytes(&e.to_string())))),
        }
    }
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
