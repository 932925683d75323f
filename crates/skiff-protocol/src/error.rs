//! Error types of skiff-protocol: one enum per failure point (frame size, request decode,
//! response encode). Each variant tells the connection what to do next.
//!
//! Thread-safety: plain data. No on-disk format.

use thiserror::Error;

/// The 4-byte size prefix of a request cannot be accepted: close the connection without
/// reading (or allocating for) the frame.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FrameError {
    /// The prefix is negative: the peer is not speaking the Kafka protocol.
    #[error("request size prefix is negative ({0}); not a Kafka client?")]
    Negative(i32),
    /// The frame is larger than `socket.request.max.bytes`.
    #[error("request of {size} bytes exceeds socket.request.max.bytes ({max})")]
    TooLarge {
        /// Size announced by the prefix.
        size: usize,
        /// Configured limit.
        max: usize,
    },
}

/// A request frame could not be turned into a [`crate::DecodedRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RequestError {
    /// Frame too short to hold the header, or the header is undecodable: no correlation id
    /// can be trusted, so the connection must be closed.
    #[error("malformed request header: {0}")]
    Malformed(String),
    /// The api key is unknown, or the key/version pair is not in [`crate::SUPPORTED`].
    /// Kafka closes the connection for these (the client should have used ApiVersions).
    #[error("unsupported request: api key {api_key} version {api_version} (correlation id {correlation_id})")]
    Unsupported {
        /// Raw api key from the header.
        api_key: i16,
        /// Raw api version from the header.
        api_version: i16,
        /// Correlation id from the header.
        correlation_id: i32,
    },
    /// An ApiVersions request at a version we do not support. Answer it with
    /// [`crate::api_versions_fallback`] (a v0 response with UNSUPPORTED_VERSION and our
    /// ranges, KIP-511) so the client can retry at a version we know.
    #[error("ApiVersions v{api_version} is not supported (correlation id {correlation_id}); answer with the v0 fallback")]
    ApiVersionsFallback {
        /// Version the client asked for.
        api_version: i16,
        /// Correlation id from the header.
        correlation_id: i32,
    },
    /// The header is fine but the body failed the pre-decode guard or kafka-protocol's
    /// decoder. Close the connection (Kafka treats this as an invalid request).
    #[error(
        "bad body for api key {api_key} v{api_version} (correlation id {correlation_id}): {reason}"
    )]
    BadBody {
        /// Api key from the header.
        api_key: i16,
        /// Api version from the header.
        api_version: i16,
        /// Correlation id from the header.
        correlation_id: i32,
        /// What was wrong, with a byte offset into the body where known.
        reason: String,
    },
}

/// A response could not be encoded; this is a broker bug (a field set that the negotiated
/// version cannot carry, or a response over 2 GiB), never the client's fault.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EncodeError {
    /// kafka-protocol refused to encode the body or header at this version.
    #[error("cannot encode {api_key} response v{version}: {reason}")]
    Body {
        /// Api key name.
        api_key: String,
        /// Response version.
        version: i16,
        /// kafka-protocol's error, with its context chain.
        reason: String,
    },
    /// The encoded response does not fit the i32 size prefix.
    #[error("response of {0} bytes does not fit a Kafka frame (max i32::MAX)")]
    TooLarge(usize),
}
