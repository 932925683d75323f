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
//!
//! APIs kafka-protocol does not know ([`OwnApi`]: the streams group APIs of KIP-1071) are
//! named with [`Api`], carried as [`RequestBody::Own`] / [`OwnResponse`], coded by our own
//! bounds-checked codec (`wire`, [`streams`]) and served only when listed in
//! [`SUPPORTED_OWN`].
#![cfg_attr(test, allow(clippy::unwrap_used))]

#[macro_use]
mod wire;

mod api;
mod decode;
mod encode;
mod error;
mod frame;
pub mod guard;
mod pieces;
mod schema;
pub mod streams;
mod supported;

pub use api::{Api, OwnApi};
pub use decode::{decode_request, DecodedRequest, RequestBody};
pub use encode::{
    api_versions_fallback, encode_own_request, encode_own_response, encode_response,
    UNSUPPORTED_VERSION,
};
pub use error::{EncodeError, FrameError, RequestError};
pub use frame::{check_frame_size, DEFAULT_MAX_REQUEST_SIZE};
pub use guard::{check_request_body, GuardError};
pub use pieces::{encode_response_pieces, Outside, Piece};
pub use schema::{guarded_apis, guarded_range};
pub use streams::{OwnMessage, OwnRequest, OwnResponse};
pub use supported::{api_version_entries, supported_range, SUPPORTED, SUPPORTED_OWN};

/// Re-export so dependents use the exact kafka-protocol version this crate decodes with.
pub use kafka_protocol;
