//! ApiVersions: the table in `skiff_protocol::SUPPORTED` (through `api_version_entries`, which
//! also lowers Produce's minimum as Kafka does), so advertising and dispatch share one source.
//!
//! Features (v3+, tagged fields) are what `kafka-features describe` shows (Kafka's admin
//! client reads them from ApiVersions). Skiff lists a feature only at the level it serves:
//! - `group.version` 1: consumer groups (KIP-848) are served, as on Kafka 4.4.
//! - `share.version` 1: share groups are served; level 2 (dead-letter queues, Kafka 4.4's
//!   default) is not built.
//! - `transaction.version` 2: transactions with an epoch bump at every EndTxn (KIP-890 part
//!   2, docs/transactions.md), as on Kafka 4.4. The Java producer (4.x) uses them (EndTxn
//!   v5, Produce v12+ without AddPartitionsToTxn, TxnOffsetCommit v5 without
//!   AddOffsetsToTxn) when the finalized level is at least 2.
//! - `streams.version` 1: streams groups (KIP-1071) are served, as on Kafka 4.4.
//!
//! Other features stay out: Skiff has no metadata log (`metadata.version`, `kraft.version`)
//! and no replicas (`eligible.leader.replicas.version`). The
//! levels are fixed while Skiff runs; there is no UpdateFeatures.

use kafka_protocol::messages::api_versions_response::{FinalizedFeatureKey, SupportedFeatureKey};
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse, ResponseKind};

use super::str_bytes;
use crate::context::RequestContext;
use crate::dispatch::Reply;

/// `(name, level)` of every feature Skiff serves: supported from 0 up to `level`, and
/// finalized at `level`.
const FEATURES: &[(&str, i16)] = &[
    ("group.version", 1),
    ("share.version", 1),
    ("streams.version", 1),
    ("transaction.version", 2),
];

/// The epoch of the finalized features: they never change while Skiff runs.
const FINALIZED_FEATURES_EPOCH: i64 = 1;

pub async fn handle(_ctx: &RequestContext, _request: ApiVersionsRequest) -> Reply {
    Reply::Respond(ResponseKind::ApiVersions(response()))
}

fn response() -> ApiVersionsResponse {
    let supported = FEATURES
        .iter()
        .map(|&(name, level)| {
            SupportedFeatureKey::default()
                .with_name(str_bytes(name))
                .with_min_version(0)
                .with_max_version(level)
        })
        .collect();
    let finalized = FEATURES
        .iter()
        .map(|&(name, level)| {
            FinalizedFeatureKey::default()
                .with_name(str_bytes(name))
                .with_min_version_level(level)
                .with_max_version_level(level)
        })
        .collect();
    ApiVersionsResponse::default()
        .with_api_keys(skiff_protocol::api_version_entries())
        .with_supported_features(supported)
        .with_finalized_features_epoch(FINALIZED_FEATURES_EPOCH)
        .with_finalized_features(finalized)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finalized(r: &ApiVersionsResponse) -> Vec<(String, i16, i16)> {
        r.finalized_features
            .iter()
            .map(|f| {
                let name = f.name.to_string();
                (name, f.min_version_level, f.max_version_level)
            })
            .collect()
    }

    #[test]
    fn finalizes_what_skiff_serves_and_nothing_else() {
        let r = response();
        assert_eq!(
            finalized(&r),
            [
                ("group.version".to_string(), 1, 1),
                ("share.version".to_string(), 1, 1),
                ("streams.version".to_string(), 1, 1),
                ("transaction.version".to_string(), 2, 2)
            ]
        );
        let names: Vec<String> = r
            .supported_features
            .iter()
            .map(|f| f.name.to_string())
            .collect();
        assert_eq!(
            names,
            [
                "group.version",
                "share.version",
                "streams.version",
                "transaction.version"
            ]
        );
        assert!(r.supported_features.iter().all(|f| f.min_version == 0));
        assert_eq!(r.finalized_features_epoch, FINALIZED_FEATURES_EPOCH);
    }
}
