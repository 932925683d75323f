//! StreamsGroupHeartbeat (KIP-1071): a streams client joins, heartbeats in and leaves a
//! streams group. The group work is the streams group coordinator's
//! ([`crate::streams_groups`], which also says how the API is switched on); this handler does
//! what Kafka 4.4's `KafkaApis` does first: without a coordinator (streams groups not
//! enabled) the answer is UNSUPPORTED_VERSION; with an authorizer the group needs READ,
//! else GROUP_AUTHORIZATION_FAILED. The topic permissions a heartbeat with a topology needs
//! (to create internal topics) are checked by the coordinator with the [`Caller`]'s `authz`.

use kafka_protocol::ResponseError;
use skiff_protocol::streams::heartbeat::{
    StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse,
};
use skiff_protocol::OwnResponse;

use crate::authz::{AclOperation, ResourceType as Rt};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::{kafka_error, BrokerError};
use crate::streams_groups::Caller;

pub async fn handle(ctx: &RequestContext, request: StreamsGroupHeartbeatRequest) -> Reply {
    let Some(groups) = ctx.broker.streams_groups.get().cloned() else {
        return Reply::own(failed(ResponseError::UnsupportedVersion.code()));
    };
    let authz = ctx.authz();
    if !authz.allows(AclOperation::Read, Rt::Group, &request.group_id) {
        return Reply::own(failed(ctx.code(&BrokerError::Unauthorized(Rt::Group))));
    }
    let caller = Caller {
        authz,
        version: ctx.version(),
        client_id: ctx.client_id.clone(),
        client_host: ctx.client_host.clone(),
    };
    let (api, version) = (ctx.api_key, ctx.version());
    let answer = groups.heartbeat(caller, request);
    Reply::Own(Box::pin(async move {
        match answer.await {
            Ok(response) => OwnResponse::StreamsGroupHeartbeat(response),
            Err(e) => failed(kafka_error(api, version, &e).code()),
        }
    }))
}

/// The answer to a heartbeat that failed as a whole.
fn failed(code: i16) -> OwnResponse {
    OwnResponse::StreamsGroupHeartbeat(StreamsGroupHeartbeatResponse {
        error_code: code,
        ..Default::default()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "streams_group_tests.rs"]
mod tests;
