//! StreamsGroupDescribe (KIP-1071): the state, topology and members of streams groups. The
//! descriptions come from the streams group coordinator ([`crate::streams_groups`], which
//! also says how the API is switched on); this handler does what Kafka 4.4's `KafkaApis`
//! does around it: without a coordinator (streams groups not enabled) every group is
//! answered UNSUPPORTED_VERSION; with an authorizer each group needs DESCRIBE, else that
//! group alone is answered GROUP_AUTHORIZATION_FAILED; authorized operations go to every
//! group described without an error when asked for.

use kafka_protocol::ResponseError;
use skiff_protocol::streams::describe::{
    DescribedGroup, StreamsGroupDescribeRequest, StreamsGroupDescribeResponse,
};
use skiff_protocol::{OwnRequest, OwnResponse};

use crate::acl_operations::{operations, ResourceType};
use crate::authz::{AclOperation, ResourceType as Rt};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;
use crate::streams_groups::Caller;

/// TopologyDescriptionStatus NOT_STORED: asked for, but no description is recorded.
const TOPOLOGY_DESCRIPTION_NOT_STORED: i8 = 1;

pub async fn handle(ctx: &RequestContext, request: StreamsGroupDescribeRequest) -> Reply {
    let Some(groups) = ctx.broker.streams_groups.get().cloned() else {
        let request = OwnRequest::StreamsGroupDescribe(request);
        return Reply::own(request.error_response(ResponseError::UnsupportedVersion.code()));
    };
    let caller = Caller {
        authz: ctx.authz(),
        version: ctx.version(),
        client_id: ctx.client_id.clone(),
        client_host: ctx.client_host.clone(),
    };
    let failed = |group_id: &str, e: &BrokerError| DescribedGroup {
        group_id: group_id.to_string(),
        error_code: ctx.code(e),
        ..Default::default()
    };
    let described = request
        .group_ids
        .iter()
        .map(|id| {
            if !caller.authz.allows(AclOperation::Describe, Rt::Group, id) {
                return failed(id, &BrokerError::Unauthorized(Rt::Group));
            }
            // Kafka answers an empty id INVALID_GROUP_ID, without a message.
            if id.is_empty() {
                return failed(id, &BrokerError::InvalidGroupId(String::new()));
            }
            match groups.describe(&caller, id, request.include_topology_description) {
                Ok(mut group) => {
                    if request.include_authorized_operations && group.error_code == 0 {
                        group.authorized_operations =
                            operations(&caller.authz, ResourceType::Group, id);
                    }
                    if request.include_topology_description && group.error_code == 0 {
                        // Skiff stores no topology descriptions (Kafka keeps them only
                        // through a plug-in): asked for one, a group has NOT_STORED.
                        group.topology_description_status = TOPOLOGY_DESCRIPTION_NOT_STORED;
                    }
                    group
                }
                Err(e) => failed(id, &e),
            }
        })
        .collect();
    Reply::own(OwnResponse::StreamsGroupDescribe(
        StreamsGroupDescribeResponse {
            groups: described,
            ..Default::default()
        },
    ))
}
