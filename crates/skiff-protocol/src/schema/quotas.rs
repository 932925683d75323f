//! Guard schemas of the client quota APIs: DescribeClientQuotas and AlterClientQuotas (v0-1,
//! flexible from v1), from Kafka's `DescribeClientQuotasRequest.json` /
//! `AlterClientQuotasRequest.json` as generated into kafka-protocol 0.18.

use super::{all, fields, Struct, Ty};

static COMPONENT: Struct = fields(&[
    all(Ty::Str),  // entity_type
    all(Ty::Int8), // match_type
    all(Ty::Str),  // match (nullable)
]);

/// DescribeClientQuotasRequest: filter components, then `strict`.
pub(crate) static DESCRIBE_CLIENT_QUOTAS: Struct = fields(&[
    all(Ty::Array(&Ty::Struct(&COMPONENT))),
    all(Ty::Bool), // strict
]);

static ENTITY: Struct = fields(&[
    all(Ty::Str), // entity_type
    all(Ty::Str), // entity_name (nullable)
]);

static OP: Struct = fields(&[
    all(Ty::Str),   // key
    all(Ty::Int64), // value (float64: eight bytes)
    all(Ty::Bool),  // remove
]);

static ENTRY: Struct = fields(&[
    all(Ty::Array(&Ty::Struct(&ENTITY))),
    all(Ty::Array(&Ty::Struct(&OP))),
]);

/// AlterClientQuotasRequest: entries, then `validate_only`.
pub(crate) static ALTER_CLIENT_QUOTAS: Struct = fields(&[
    all(Ty::Array(&Ty::Struct(&ENTRY))),
    all(Ty::Bool), // validate_only
]);
