//! Filled sample requests of the ACL APIs (DescribeAcls, CreateAcls, DeleteAcls), one per
//! version, built with kafka-protocol: every string set (a null filter string in one of the
//! DeleteAcls filters), every array of two.

use super::s;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::*;

/// A sample of `key` at `v` (`f`: flexible), or `None` if `key` is not an ACL API.
pub fn sample(key: ApiKey, _v: i16, f: bool) -> Option<RequestKind> {
    Some(match key {
        ApiKey::DescribeAcls => {
            let r = DescribeAclsRequest::default()
                .with_resource_type_filter(2)
                .with_resource_name_filter(Some(s("topic-a")))
                .with_pattern_type_filter(3)
                .with_principal_filter(Some(s("User:alice")))
                .with_host_filter(Some(s("*")))
                .with_operation(1)
                .with_permission_type(3);
            RequestKind::DescribeAcls(tag!(r, f))
        }
        ApiKey::CreateAcls => {
            let c = |name, op| {
                tag!(
                    AclCreation::default()
                        .with_resource_type(2)
                        .with_resource_name(s(name))
                        .with_resource_pattern_type(4)
                        .with_principal(s("User:bob"))
                        .with_host(s("10.0.0.1"))
                        .with_operation(op)
                        .with_permission_type(3),
                    f
                )
            };
            let r = CreateAclsRequest::default().with_creations(vec![c("a", 3), c("bb", 4)]);
            RequestKind::CreateAcls(tag!(r, f))
        }
        ApiKey::DeleteAcls => {
            let d = |name: Option<&'static str>| {
                tag!(
                    DeleteAclsFilter::default()
                        .with_resource_type_filter(1)
                        .with_resource_name_filter(name.map(s))
                        .with_pattern_type_filter(1)
                        .with_principal_filter(Some(s("User:carol")))
                        .with_host_filter(None)
                        .with_operation(2)
                        .with_permission_type(1),
                    f
                )
            };
            let r = DeleteAclsRequest::default().with_filters(vec![d(Some("t")), d(None)]);
            RequestKind::DeleteAcls(tag!(r, f))
        }
        _ => return None,
    })
}
