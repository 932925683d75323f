//! ACLs for the suites that run with an authorizer: Kafka's CreateAcls codes and literal
//! ALLOW bindings, created over the raw wire client (librdkafka's admin API has no ACLs).

use anyhow::{ensure, Result};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::{ApiKey, CreateAclsRequest, CreateAclsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::raw::RawClient;

/// Resource types.
pub const TOPIC: i8 = 2;
pub const GROUP: i8 = 3;
pub const CLUSTER: i8 = 4;
/// Operations.
pub const ALL: i8 = 2;
pub const READ: i8 = 3;
pub const ALTER: i8 = 7;
pub const DESCRIBE: i8 = 8;
const LITERAL: i8 = 3;
const ALLOW: i8 = 3;

/// Allows `principal` (`User:alice`) the operation `op` on the resource named `name`
/// exactly, from any host.
pub fn allow(resource_type: i8, name: &str, principal: &str, op: i8) -> AclCreation {
    AclCreation::default()
        .with_resource_type(resource_type)
        .with_resource_name(StrBytes::from_string(name.to_string()))
        .with_resource_pattern_type(LITERAL)
        .with_principal(StrBytes::from_string(principal.to_string()))
        .with_host(StrBytes::from_static_str("*"))
        .with_operation(op)
        .with_permission_type(ALLOW)
}

/// Creates `acls` through the listener at `bootstrap` (a super user's); fails unless every
/// one is created.
pub fn create(bootstrap: &str, acls: Vec<AclCreation>) -> Result<()> {
    let n = acls.len();
    let mut raw = RawClient::connect(bootstrap)?;
    let req = CreateAclsRequest::default().with_creations(acls);
    let r: CreateAclsResponse = raw.call(ApiKey::CreateAcls, 3, &req)?;
    let codes: Vec<i16> = r.results.iter().map(|r| r.error_code).collect();
    ensure!(codes == vec![0; n], "CreateAcls: {codes:?}");
    Ok(())
}
