//! The byte-level primitives of Kafka's internal-topic records (big-endian integers, int16
//! and compact strings, unsigned varints, uuids, tag sections), shared by every record
//! codec of this crate: `__consumer_offsets` (`groups/`, `share_group/`),
//! `__share_group_state` (`share_state/`) and `__transaction_state` (`txn/`).
//!
//! One copy so that a fix to bounds checking or to an encoding reaches every topic. What is
//! topic-specific (which versions exist, whether trailing bytes are refused, which tags mean
//! something) stays with each topic's codec; errors name the topic through [`CodecError::in_topic`].

mod read;
mod write;

pub(crate) use read::Reader;
pub(crate) use write::*;

/// Why a record key or value could not be decoded. The message does not name the topic:
/// callers that report it say which one with [`CodecError::in_topic`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("record truncated while reading {0}")]
    Truncated(&'static str),
    #[error("record has an invalid {0}")]
    Invalid(&'static str),
    #[error("value version {0} is not one Kafka defines")]
    UnknownVersion(i16),
    /// A key or value version this codec does not read, whether or not Kafka defines it
    /// (`__transaction_state` value version 1, which Kafka writes with KIP-890).
    #[error("{0} version {1} is not one Skiff reads")]
    UnsupportedVersion(&'static str, i16),
}

impl CodecError {
    /// The error as a message naming its topic, e.g. `__consumer_offsets record truncated
    /// while reading group`.
    pub fn in_topic(&self, topic: &'static str) -> InTopic<'_> {
        InTopic { topic, error: self }
    }
}

/// A [`CodecError`] displayed with the topic whose record it is.
#[derive(Debug)]
pub struct InTopic<'a> {
    topic: &'static str,
    error: &'a CodecError,
}

impl std::fmt::Display for InTopic<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.topic, self.error)
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
