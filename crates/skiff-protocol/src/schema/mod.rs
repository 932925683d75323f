//! Our own description of the wire layout of every request body in [`crate::SUPPORTED`].
//!
//! Owns: the field lists (with the versions each field exists in) that the pre-decode guard
//! ([`crate::guard`]) walks. Written by hand from the Kafka 4.1 message schemas as generated
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

mod admin;
mod core;

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

/// The body schema of a request API, or `None` when we have not described it (such keys
/// must never appear in [`crate::SUPPORTED`]; a test enforces it).
pub(crate) fn request_schema(key: ApiKey) -> Option<&'static Struct> {
    Some(match key {
        ApiKey::ApiVersions => &core::API_VERSIONS,
        ApiKey::Metadata => &core::METADATA,
        ApiKey::Produce => &core::PRODUCE,
        ApiKey::Fetch => &core::FETCH,
        ApiKey::ListOffsets => &core::LIST_OFFSETS,
        ApiKey::OffsetForLeaderEpoch => &core::OFFSET_FOR_LEADER_EPOCH,
        ApiKey::CreateTopics => &admin::CREATE_TOPICS,
        ApiKey::DeleteTopics => &admin::DELETE_TOPICS,
        ApiKey::CreatePartitions => &admin::CREATE_PARTITIONS,
        ApiKey::DescribeConfigs => &admin::DESCRIBE_CONFIGS,
        ApiKey::AlterConfigs => &admin::ALTER_CONFIGS,
        ApiKey::IncrementalAlterConfigs => &admin::INCREMENTAL_ALTER_CONFIGS,
        ApiKey::DeleteRecords => &admin::DELETE_RECORDS,
        ApiKey::DescribeCluster => &admin::DESCRIBE_CLUSTER,
        _ => return None,
    })
}
