//! ApiVersions: the table in `skiff_protocol::SUPPORTED` (through `api_version_entries`, which
//! also lowers Produce's minimum as Kafka does), so advertising and dispatch share one source.
//!
//! Features (v3+, tagged fields): `share.version` supported 0–1 and finalized at 1, because
//! share groups are served; level 2 (dead-letter queues, Kafka 4.4's default) is not built.
//! `transaction.version` supported 0–2 and finalized at 2, as a fresh Kafka 4.4 node: the
//! Java producer (4.x) uses transaction version 2 (EndTxn v5, Produce v12+ without
//! AddPartitionsToTxn, TxnOffsetCommit v5 without AddOffsetsToTxn) when the finalized level
//! is at least 2. Other features stay out: Skiff has no metadata log (`metadata.version`,
//! `kraft.version`) and does not serve streams groups.

use kafka_protocol::messages::api_versions_response::{FinalizedFeatureKey, SupportedFeatureKey};
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse, ResponseKind};

use super::str_bytes;
use crate::context::RequestContext;
use crate::dispatch::Reply;

/// `share.version`: the level Skiff serves (1: share groups, no dead-letter queues).
const SHARE_VERSION: i16 = 1;
/// `transaction.version`: 2, transactions with an epoch bump at every EndTxn (KIP-890).
const TRANSACTION_VERSION: i16 = 2;
/// The epoch of the finalized features: they never change while Skiff runs.
const FINALIZED_FEATURES_EPOCH: i64 = 1;

pub async fn handle(_ctx: &RequestContext, _request: ApiVersionsRequest) -> Reply {
    Reply::Respond(ResponseKind::ApiVersions(
        ApiVersionsResponse::default()
            .with_api_keys(skiff_protocol::api_version_entries())
            .with_supported_features(vec![
                SupportedFeatureKey::default()
                    .with_name(str_bytes("share.version"))
                    .with_min_version(0)
                    .with_max_version(SHARE_VERSION),
                SupportedFeatureKey::default()
                    .with_name(str_bytes("transaction.version"))
                    .with_min_version(0)
                    .with_max_version(TRANSACTION_VERSION),
            ])
            .with_finalized_features_epoch(FINALIZED_FEATURES_EPOCH)
            .with_finalized_features(vec![
                FinalizedFeatureKey::default()
                    .with_name(str_bytes("share.version"))
                    .with_min_version_level(SHARE_VERSION)
                    .with_max_version_level(SHARE_VERSION),
                FinalizedFeatureKey::default()
                    .with_name(str_bytes("transaction.version"))
                    .with_min_version_level(TRANSACTION_VERSION)
                    .with_max_version_level(TRANSACTION_VERSION),
            ]),
    ))
}
