//! ApiVersions: the table in `skiff_protocol::SUPPORTED`, so advertising and dispatch share
//! one source. Optional feature fields stay at their defaults: old librdkafka (2.0.2) cannot
//! parse the tagged fields they would add.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};

pub fn handle(_version: i16, _request: ApiVersionsRequest) -> ApiVersionsResponse {
    let api_keys = skiff_protocol::SUPPORTED
        .iter()
        .map(|&(key, min, max)| {
            ApiVersion::default()
                .with_api_key(key as i16)
                .with_min_version(min)
                .with_max_version(max)
        })
        .collect();
    ApiVersionsResponse::default().with_api_keys(api_keys)
}
