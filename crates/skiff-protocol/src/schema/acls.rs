//! Request body schemas of the ACL APIs: DescribeAcls, CreateAcls, DeleteAcls (v1-3, flexible
//! from v2). Field order follows the Kafka 4.1 message definitions (as generated in
//! kafka-protocol 0.18); none of these requests has a known tagged field. Static data only.

use super::{all, fields, Struct, Ty};

/// DescribeAclsRequest: one ACL binding filter, inline (also each DeleteAcls filter).
pub(crate) static DESCRIBE_ACLS: Struct = fields(&[
    all(Ty::Int8), // resource_type_filter
    all(Ty::Str),  // resource_name_filter (null: any)
    all(Ty::Int8), // pattern_type_filter
    all(Ty::Str),  // principal_filter (null: any)
    all(Ty::Str),  // host_filter (null: any)
    all(Ty::Int8), // operation
    all(Ty::Int8), // permission_type
]);

static ACL_CREATION: Struct = fields(&[
    all(Ty::Int8), // resource_type
    all(Ty::Str),  // resource_name
    all(Ty::Int8), // resource_pattern_type
    all(Ty::Str),  // principal
    all(Ty::Str),  // host
    all(Ty::Int8), // operation
    all(Ty::Int8), // permission_type
]);

/// CreateAclsRequest.
pub(crate) static CREATE_ACLS: Struct = fields(&[all(Ty::Array(&Ty::Struct(&ACL_CREATION)))]);

/// DeleteAclsRequest.
pub(crate) static DELETE_ACLS: Struct = fields(&[all(Ty::Array(&Ty::Struct(&DESCRIBE_ACLS)))]);
