//! The one table of APIs Skiff implements, with the version ranges it advertises.
//!
//! The broker builds its ApiVersions response from [`SUPPORTED`] and its dispatch must handle
//! every entry; [`crate::decode_request`] rejects anything outside it. Minimums are the Kafka
//! 4.x baseline (KIP-896); maximums never exceed kafka-protocol 0.18's `valid_versions()`
//! (a test checks). To stop advertising a version, lower it here and nowhere else.
//!
//! To serve a new API: it must have a guard schema (see [`crate::guarded_range`], which lists
//! every API and version range the request guard can check); add one line here with a range
//! inside that one, and a handler in the broker's dispatch. APIs kafka-protocol does not know
//! ([`OwnApi`]) are served from [`SUPPORTED_OWN`] instead, within their codec's range.
//!
//! Thread-safety: constant data. No on-disk format.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::ApiKey;

use crate::api::{Api, OwnApi};

/// `(api key, min version, max version)` for every API Skiff serves.
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 13),
    (ApiKey::Fetch, 4, 18),
    (ApiKey::ListOffsets, 1, 10),
    (ApiKey::Metadata, 0, 13),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DescribeCluster, 0, 2),
    // Answered as Kafka without an authorizer does: SECURITY_DISABLED.
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    // Share groups (KIP-932). Kafka 4.4 also serves ShareFetch/ShareAcknowledge v2 (RENEW,
    // record-limit acquisition) and DescribeShareGroupOffsets v1 (lag); kafka-protocol 0.18
    // has none of them, and every client here falls back to these versions.
    (ApiKey::ShareGroupHeartbeat, 1, 1),
    (ApiKey::ShareGroupDescribe, 1, 1),
    (ApiKey::ShareFetch, 1, 1),
    (ApiKey::ShareAcknowledge, 1, 1),
    (ApiKey::DescribeShareGroupOffsets, 0, 0),
    (ApiKey::AlterShareGroupOffsets, 0, 0),
    (ApiKey::DeleteShareGroupOffsets, 0, 0),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::AddPartitionsToTxn, 0, 5),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    // v5 is transaction version 2 (KIP-890 part 2: an epoch bump at every EndTxn); it goes
    // with Produce v12+ and TxnOffsetCommit v5 adding partitions implicitly, and with the
    // `transaction.version` feature finalized at 2 in ApiVersions.
    (ApiKey::EndTxn, 0, 5),
    (ApiKey::TxnOffsetCommit, 0, 5),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::ListTransactions, 0, 2),
    (ApiKey::DescribeTransactions, 0, 0),
    // Kafka 4.x serves both at v0 only.
    (ApiKey::DescribeClientQuotas, 0, 1),
    (ApiKey::AlterClientQuotas, 0, 1),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    // Advertised on every listener, as Kafka does; served by the connection's SASL state
    // machine on SASL listeners, answered ILLEGAL_SASL_STATE elsewhere.
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
];

/// The APIs kafka-protocol does not know that Skiff serves, coded by Skiff itself
/// ([`crate::streams`]); advertised and decoded exactly like [`SUPPORTED`] entries. Ranges
/// must lie inside [`OwnApi::codec_range`] (a test checks).
///
/// Streams groups (KIP-1071): StreamsGroupHeartbeat (88) and StreamsGroupDescribe (89), at
/// Kafka 4.4's versions.
pub const SUPPORTED_OWN: &[(OwnApi, i16, i16)] = &[
    (OwnApi::StreamsGroupHeartbeat, 0, 1),
    (OwnApi::StreamsGroupDescribe, 0, 1),
];

/// The advertised `(min, max)` for `api` (an `ApiKey`, an [`OwnApi`] or an [`Api`]), or `None`
/// if Skiff does not serve it.
pub fn supported_range(api: impl Into<Api>) -> Option<(i16, i16)> {
    match api.into() {
        Api::Kafka(key) => SUPPORTED
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|&(_, min, max)| (min, max)),
        Api::Own(own) => SUPPORTED_OWN
            .iter()
            .find(|(k, _, _)| *k == own)
            .map(|&(_, min, max)| (min, max)),
    }
}

/// The lowest Produce version put in ApiVersions answers, below the lowest one served (3).
///
/// Kafka 4.x does the same (KAFKA-18659): librdkafka before 2.8 decides whether the broker
/// can take gzip, snappy and lz4 by looking for Produce v0 in the advertised range, and
/// silently produces uncompressed batches when it is missing. A Produce request at v0-2 is
/// still refused like any unserved version: the connection is closed.
pub const ADVERTISED_PRODUCE_MIN: i16 = 0;

/// The [`SUPPORTED`] table, then [`SUPPORTED_OWN`], as ApiVersions response entries, in
/// table order, with Produce's minimum lowered to [`ADVERTISED_PRODUCE_MIN`].
pub fn api_version_entries() -> Vec<ApiVersion> {
    let own = SUPPORTED_OWN
        .iter()
        .map(|&(api, min, max)| (api.key(), min, max));
    SUPPORTED
        .iter()
        .map(|&(key, min, max)| {
            let min = if key == ApiKey::Produce {
                ADVERTISED_PRODUCE_MIN
            } else {
                min
            };
            (key as i16, min, max)
        })
        .chain(own)
        .map(|(key, min, max)| {
            ApiVersion::default()
                .with_api_key(key)
                .with_min_version(min)
                .with_max_version(max)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_within_kafka_protocol_and_schemas_exist() {
        for &(key, min, max) in SUPPORTED {
            let valid = key.valid_versions();
            assert!(min <= max, "{key:?}");
            assert!(
                min >= valid.min && max <= valid.max,
                "{key:?} {min}-{max} vs {valid:?}"
            );
            let (gmin, gmax) = crate::schema::guarded_range(key)
                .unwrap_or_else(|| panic!("{key:?} has no guard schema"));
            assert!(
                gmin <= min && max <= gmax,
                "{key:?} {min}-{max} is not inside its guarded range {gmin}-{gmax}"
            );
        }
    }

    #[test]
    fn own_ranges_within_their_codec() {
        for &(api, min, max) in SUPPORTED_OWN {
            let (cmin, cmax) = api.codec_range();
            assert!(
                cmin <= min && min <= max && max <= cmax,
                "{api:?} {min}-{max}"
            );
            assert!(
                SUPPORTED.iter().all(|(k, _, _)| *k as i16 != api.key()),
                "{api:?}"
            );
        }
    }

    #[test]
    fn streams_apis_are_advertised_at_kafka_4_4s_versions() {
        for api in OwnApi::ALL {
            assert_eq!(supported_range(api), Some((0, 1)), "{api:?}");
            assert!(api_version_entries()
                .iter()
                .any(|e| e.api_key == api.key() && e.min_version == 0 && e.max_version == 1));
        }
    }

    #[test]
    fn no_duplicates() {
        for (i, (k, _, _)) in SUPPORTED.iter().enumerate() {
            assert!(SUPPORTED[i + 1..].iter().all(|(o, _, _)| o != k), "{k:?}");
        }
        assert_eq!(supported_range(ApiKey::Fetch), Some((4, 18)));
        assert_eq!(supported_range(ApiKey::Envelope), None);
    }
}
