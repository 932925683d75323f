//! skiff-protocol: Kafka wire framing and codec for Skiff, on top of kafka-protocol 0.18.
//!
//! Owns: the request size check ([`check_frame_size`]), request decoding behind our own
//! bounds-checked guard ([`decode_request`], [`guard`]), response encoding
//! ([`encode_response`], [`api_versions_fallback`]), the table of supported API versions
//! ([`SUPPORTED`]) and the wider table of APIs the guard can check ([`guarded_range`]).
//! Pure: no I/O, no tokio, no global state; everything is safe to call from any thread.
//! No on-disk format.
//!
//! Why a guard: kafka-protocol 0.18 sizes `Vec`s from wire counts and panics on short headers
//! (see `schema` and `guard`); every frame is walked against our schema first.
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod decode;
mod encode;
mod error;
mod frame;
pub mod guard;
mod pieces;
mod schema;
mod supported;

pub use decode::{decode_request, DecodedRequest};
pub use encode::{api_versions_fallback, encode_response, UNSUPPORTED_VERSION};
pub use error::{EncodeError, FrameError, RequestError};
pub use frame::{check_frame_size, DEFAULT_MAX_REQUEST_SIZE};
pub use guard::{check_request_body, GuardError};
pub use pieces::{encode_response_pieces, Outside, Piece};
pub use schema::{guarded_apis, guarded_range};
pub use supported::{api_version_entries, supported_range, SUPPORTED};

/// Re-export so dependents use the exact kafka-protocol version this crate decodes with.
pub use kafka_protocol;
