//! Our own description of the wire layout of request bodies: every API in [`crate::SUPPORTED`]
//! and the group/transaction/admin APIs a later handler may enable.
//!
//! Owns: the field lists (with the versions each field exists in) that the pre-decode guard
//! ([`crate::guard`]) walks, and the table of which APIs and versions have one
//! ([`guarded_range`]); that table is a superset of [`crate::SUPPORTED`]. Written by hand from the Kafka 4.1 message schemas as generated
//! into kafka-protocol 0.18's `src/messages/*_request.rs`; the tests in
//! `tests/schema_roundtrip.rs` encode a filled request with kafka-protocol for every supported
//! version and require the walker to consume exactly the encoded bytes, so a mistake here fails
//! a test rather than letting a frame through unchecked.
//!
//! Whether a version is "flexible" (compact strings/arrays, tagged fields after every struct)
//! is not repeated here: it is taken from `ApiKey::request_header_version` (header v2 ⇔
//! flexible body), the same rule the crate's generated decoders follow.
//!
//! Thread-safety: plain `static` data. No on-disk format.

mod acls;
mod admin;
mod core;
mod groups;
mod quotas;
mod scram;
mod share;
mod txn;

use kafka_protocol::messages::ApiKey;

/// Highest version bound, for fields that exist from some version onwards.
pub(crate) const MAX: i16 = i16::MAX;

/// The wire type of one field. Strings and bytes are accepted as nullable everywhere: the
/// guard only bounds lengths; kafka-protocol itself rejects a null where none is allowed.
#[derive(Debug)]
pub(crate) enum Ty {
    Int8,
    Int16,
    Int32,
    Int64,
    Bool,
    Uuid,
    /// `STRING`/`NULLABLE_STRING`, or `COMPACT_(NULLABLE_)STRING` in flexible versions.
    Str,
    /// `BYTES`/`NULLABLE_BYTES`/`RECORDS`, or their compact forms in flexible versions.
    Bytes,
    /// `ARRAY`, or `COMPACT_ARRAY` in flexible versions (nullable accepted).
    Array(&'static Ty),
    Struct(&'static Struct),
}

/// A field present in versions `min..=max`.
#[derive(Debug)]
pub(crate) struct Field {
    pub min: i16,
    pub max: i16,
    pub ty: Ty,
}

/// A known tagged field (flexible versions only) present in versions `min..=max`.
#[derive(Debug)]
pub(crate) struct Tagged {
    pub tag: u32,
    pub min: i16,
    pub max: i16,
    pub ty: Ty,
}

/// A struct: its fields in wire order, then (in flexible versions) its tagged-field section.
#[derive(Debug)]
pub(crate) struct Struct {
    pub fields: &'static [Field],
    pub tagged: &'static [Tagged],
}

/// Field present in every version.
pub(crate) const fn all(ty: Ty) -> Field {
    Field {
        min: 0,
        max: MAX,
        ty,
    }
}

/// Field present from version `min` on.
pub(crate) const fn since(min: i16, ty: Ty) -> Field {
    Field { min, max: MAX, ty }
}

/// Field present in versions `min..=max`.
pub(crate) const fn between(min: i16, max: i16, ty: Ty) -> Field {
    Field { min, max, ty }
}

/// A struct without known tagged fields.
pub(crate) const fn fields(fields: &'static [Field]) -> Struct {
    Struct {
        fields,
        tagged: &[],
    }
}

/// Every API we have a schema for, with the versions it was verified against
/// (`tests/schema_roundtrip.rs` encodes a filled request at each of them). Ranges are
/// kafka-protocol 0.18's decodable range clipped to the Kafka 4.x minimums (KIP-896); where
/// `ApiKey::valid_versions()` names a newer version than the crate's decoder accepts
/// (OffsetCommit 10, OffsetFetch 10, InitProducerId 6), the decoder's maximum is used.
/// A guarded API is not necessarily served: [`crate::SUPPORTED`] is the advertised subset.
static SCHEMAS: &[(ApiKey, i16, i16, &Struct)] = &[
    (ApiKey::Produce, 3, 13, &core::PRODUCE),
    (ApiKey::Fetch, 4, 18, &core::FETCH),
    (ApiKey::ListOffsets, 1, 10, &core::LIST_OFFSETS),
    (ApiKey::Metadata, 0, 13, &core::METADATA),
    (ApiKey::ApiVersions, 0, 4, &core::API_VERSIONS),
    (
        ApiKey::OffsetForLeaderEpoch,
        2,
        4,
        &core::OFFSET_FOR_LEADER_EPOCH,
    ),
    (ApiKey::CreateTopics, 2, 7, &admin::CREATE_TOPICS),
    (ApiKey::DeleteTopics, 1, 6, &admin::DELETE_TOPICS),
    (ApiKey::DeleteRecords, 0, 2, &admin::DELETE_RECORDS),
    (ApiKey::DescribeConfigs, 1, 4, &admin::DESCRIBE_CONFIGS),
    (ApiKey::AlterConfigs, 0, 2, &admin::ALTER_CONFIGS),
    (ApiKey::CreatePartitions, 0, 3, &admin::CREATE_PARTITIONS),
    (
        ApiKey::IncrementalAlterConfigs,
        0,
        1,
        &admin::INCREMENTAL_ALTER_CONFIGS,
    ),
    (ApiKey::DescribeCluster, 0, 2, &admin::DESCRIBE_CLUSTER),
    (ApiKey::DescribeLogDirs, 1, 4, &admin::DESCRIBE_LOG_DIRS),
    (ApiKey::DescribeAcls, 1, 3, &acls::DESCRIBE_ACLS),
    (ApiKey::CreateAcls, 1, 3, &acls::CREATE_ACLS),
    (ApiKey::DeleteAcls, 1, 3, &acls::DELETE_ACLS),
    (ApiKey::FindCoordinator, 0, 6, &groups::FIND_COORDINATOR),
    (ApiKey::JoinGroup, 0, 9, &groups::JOIN_GROUP),
    (ApiKey::SyncGroup, 0, 5, &groups::SYNC_GROUP),
    (ApiKey::Heartbeat, 0, 4, &groups::HEARTBEAT),
    (ApiKey::LeaveGroup, 0, 5, &groups::LEAVE_GROUP),
    (ApiKey::OffsetCommit, 2, 9, &groups::OFFSET_COMMIT),
    (ApiKey::OffsetFetch, 1, 9, &groups::OFFSET_FETCH),
    (ApiKey::ListGroups, 0, 5, &groups::LIST_GROUPS),
    (ApiKey::DescribeGroups, 0, 6, &groups::DESCRIBE_GROUPS),
    (ApiKey::DeleteGroups, 0, 2, &groups::DELETE_GROUPS),
    (ApiKey::OffsetDelete, 0, 0, &groups::OFFSET_DELETE),
    (
        ApiKey::ConsumerGroupHeartbeat,
        0,
        1,
        &groups::CONSUMER_GROUP_HEARTBEAT,
    ),
    (
        ApiKey::ConsumerGroupDescribe,
        0,
        1,
        &groups::CONSUMER_GROUP_DESCRIBE,
    ),
    (
        ApiKey::ShareGroupHeartbeat,
        1,
        1,
        &share::SHARE_GROUP_HEARTBEAT,
    ),
    (
        ApiKey::ShareGroupDescribe,
        1,
        1,
        &share::SHARE_GROUP_DESCRIBE,
    ),
    (ApiKey::ShareFetch, 1, 1, &share::SHARE_FETCH),
    (ApiKey::ShareAcknowledge, 1, 1, &share::SHARE_ACKNOWLEDGE),
    (
        ApiKey::DescribeShareGroupOffsets,
        0,
        0,
        &share::DESCRIBE_SHARE_GROUP_OFFSETS,
    ),
    (
        ApiKey::AlterShareGroupOffsets,
        0,
        0,
        &share::ALTER_SHARE_GROUP_OFFSETS,
    ),
    (
        ApiKey::DeleteShareGroupOffsets,
        0,
        0,
        &share::DELETE_SHARE_GROUP_OFFSETS,
    ),
    (ApiKey::InitProducerId, 0, 5, &txn::INIT_PRODUCER_ID),
    (
        ApiKey::AddPartitionsToTxn,
        0,
        5,
        &txn::ADD_PARTITIONS_TO_TXN,
    ),
    (ApiKey::AddOffsetsToTxn, 0, 4, &txn::ADD_OFFSETS_TO_TXN),
    (ApiKey::EndTxn, 0, 5, &txn::END_TXN),
    (ApiKey::TxnOffsetCommit, 0, 5, &txn::TXN_OFFSET_COMMIT),
    (ApiKey::WriteTxnMarkers, 1, 1, &txn::WRITE_TXN_MARKERS),
    (ApiKey::DescribeProducers, 0, 0, &txn::DESCRIBE_PRODUCERS),
    (ApiKey::ListTransactions, 0, 2, &txn::LIST_TRANSACTIONS),
    (
        ApiKey::DescribeTransactions,
        0,
        0,
        &txn::DESCRIBE_TRANSACTIONS,
    ),
    (
        ApiKey::DescribeClientQuotas,
        0,
        1,
        &quotas::DESCRIBE_CLIENT_QUOTAS,
    ),
    (
        ApiKey::AlterClientQuotas,
        0,
        1,
        &quotas::ALTER_CLIENT_QUOTAS,
    ),
    (
        ApiKey::DescribeUserScramCredentials,
        0,
        0,
        &scram::DESCRIBE_USER_SCRAM_CREDENTIALS,
    ),
    (
        ApiKey::AlterUserScramCredentials,
        0,
        0,
        &scram::ALTER_USER_SCRAM_CREDENTIALS,
    ),
    (ApiKey::SaslHandshake, 0, 1, &scram::SASL_HANDSHAKE),
    (ApiKey::SaslAuthenticate, 0, 2, &scram::SASL_AUTHENTICATE),
];

/// `(api key, min, max)` of every API that has a guard schema, in table order. Any of these
/// can be moved into [`crate::SUPPORTED`] (within this range) once a handler exists.
pub fn guarded_apis() -> impl Iterator<Item = (ApiKey, i16, i16)> {
    SCHEMAS.iter().map(|&(key, min, max, _)| (key, min, max))
}

/// The versions of `key` our guard can check before decoding, or `None` without a schema.
/// [`crate::SUPPORTED`] must stay inside this range (a test enforces it).
pub fn guarded_range(key: ApiKey) -> Option<(i16, i16)> {
    SCHEMAS
        .iter()
        .find(|(k, _, _, _)| *k == key)
        .map(|&(_, min, max, _)| (min, max))
}

/// The body schema of `key` at `version`, or `None` when that version is not described:
/// the guard then refuses the body rather than let kafka-protocol decode it unchecked.
pub(crate) fn schema_for(key: ApiKey, version: i16) -> Option<&'static Struct> {
    SCHEMAS
        .iter()
        .find(|(k, min, max, _)| *k == key && (*min..=*max).contains(&version))
        .map(|&(_, _, _, s)| s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_entry_per_key_within_kafka_protocol_ranges() {
        for (i, &(key, min, max, _)) in SCHEMAS.iter().enumerate() {
            assert!(
                SCHEMAS[i + 1..].iter().all(|e| e.0 != key),
                "{key:?} listed twice"
            );
            let valid = key.valid_versions();
            assert!(min <= max, "{key:?}");
            assert!(
                min >= valid.min && max <= valid.max,
                "{key:?} {min}-{max} vs {valid:?}"
            );
            assert!(schema_for(key, min).is_some() && schema_for(key, max).is_some());
            assert!(schema_for(key, min - 1).is_none() && schema_for(key, max + 1).is_none());
        }
        assert_eq!(guarded_range(ApiKey::JoinGroup), Some((0, 9)));
        assert_eq!(guarded_range(ApiKey::DescribeAcls), Some((1, 3)));
        assert_eq!(guarded_range(ApiKey::AlterPartitionReassignments), None);
        assert_eq!(guarded_apis().count(), SCHEMAS.len());
    }
}
