//! ApiVersions: the table in `skiff_protocol::SUPPORTED` (through `api_version_entries`, which
//! also lowers Produce's minimum as Kafka does), so advertising and dispatch share one source.
//! Optional feature fields stay at their defaults: old librdkafka (2.0.2) cannot parse the
//! tagged fields they would add.

use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse, ResponseKind};

use crate::context::RequestContext;
use crate::dispatch::Reply;

pub async fn handle(_ctx: &RequestContext, _request: ApiVersionsRequest) -> Reply {
    Reply::Respond(ResponseKind::ApiVersions(
        ApiVersionsResponse::default().with_api_keys(skiff_protocol::api_version_entries()),
    ))
}
