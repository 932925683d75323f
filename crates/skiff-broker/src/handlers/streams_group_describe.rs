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
            match groups.describe(&caller, id, request.include_topology_description) {
                Ok(mut group) => {
                    if request.include_authorized_operations && group.error_code == 0 {
                        group.authorized_operations =
                            operations(&caller.authz, ResourceType::Group, id);
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
