//! Request body schemas of the share-group data APIs (KIP-932): ShareFetch and
//! ShareAcknowledge, v1 only (the one version kafka-protocol 0.18 knows; flexible). Field order
//! follows the Kafka 4.1 message definitions as generated in kafka-protocol 0.18. Static data.

use super::{all, fields, Struct, Ty};

static ACKNOWLEDGEMENT_BATCH: Struct = fields(&[
    all(Ty::Int64),            // first_offset
    all(Ty::Int64),            // last_offset
    all(Ty::Array(&Ty::Int8)), // acknowledge_types
]);

static FETCH_PARTITION: Struct = fields(&[
    all(Ty::Int32), // partition_index
    all(Ty::Array(&Ty::Struct(&ACKNOWLEDGEMENT_BATCH))),
]);

static FETCH_TOPIC: Struct = fields(&[
    all(Ty::Uuid), // topic_id
    all(Ty::Array(&Ty::Struct(&FETCH_PARTITION))),
]);

static FORGOTTEN_TOPIC: Struct = fields(&[
    all(Ty::Uuid),              // topic_id
    all(Ty::Array(&Ty::Int32)), // partitions
]);

/// ShareFetchRequest v1.
pub(crate) static SHARE_FETCH: Struct = fields(&[
    all(Ty::Str),   // group_id
    all(Ty::Str),   // member_id
    all(Ty::Int32), // share_session_epoch
    all(Ty::Int32), // max_wait_ms
    all(Ty::Int32), // min_bytes
    all(Ty::Int32), // max_bytes
    all(Ty::Int32), // max_records
    all(Ty::Int32), // batch_size
    all(Ty::Array(&Ty::Struct(&FETCH_TOPIC))),
    all(Ty::Array(&Ty::Struct(&FORGOTTEN_TOPIC))),
]);

static ACKNOWLEDGE_PARTITION: Struct = fields(&[
    all(Ty::Int32), // partition_index
    all(Ty::Array(&Ty::Struct(&ACKNOWLEDGEMENT_BATCH))),
]);

static ACKNOWLEDGE_TOPIC: Struct = fields(&[
    all(Ty::Uuid), // topic_id
    all(Ty::Array(&Ty::Struct(&ACKNOWLEDGE_PARTITION))),
]);

/// ShareAcknowledgeRequest v1.
pub(crate) static SHARE_ACKNOWLEDGE: Struct = fields(&[
    all(Ty::Str),   // group_id
    all(Ty::Str),   // member_id
    all(Ty::Int32), // share_session_epoch
    all(Ty::Array(&Ty::Struct(&ACKNOWLEDGE_TOPIC))),
]);
