//! Which API a request is for: one of kafka-protocol's [`ApiKey`]s, or one of the APIs that
//! crate does not know and Skiff codes itself ([`OwnApi`], see [`crate::streams`]).
//!
//! Why a type of our own: kafka-protocol 0.18 is generated from Kafka 4.1's schemas and has
//! no `ApiKey` for newer APIs such as the streams group ones (KIP-1071, keys 88 and 89). The
//! request pipeline (decoder, connection, dispatch, metrics) names APIs with [`Api`], which
//! covers both; everything about a crate API still goes through its `ApiKey`, so existing
//! handlers are unchanged. When a later kafka-protocol knows an own API, its [`OwnApi`]
//! variant and codec go, and the key becomes an `Api::Kafka`.
//!
//! Thread-safety: plain `Copy` data. No on-disk format.

use std::fmt;

use kafka_protocol::messages::ApiKey;

/// An API Skiff can name: a kafka-protocol one or one of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Api {
    /// An API kafka-protocol knows (decoded and encoded by that crate).
    Kafka(ApiKey),
    /// An API Skiff codes itself.
    Own(OwnApi),
}

/// APIs kafka-protocol 0.18 has no messages for, coded by Skiff ([`crate::streams`]).
/// The discriminant is the Kafka api key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i16)]
pub enum OwnApi {
    /// StreamsGroupHeartbeat (KIP-1071).
    StreamsGroupHeartbeat = 88,
    /// StreamsGroupDescribe (KIP-1071).
    StreamsGroupDescribe = 89,
}

impl OwnApi {
    /// Every own API.
    pub const ALL: [OwnApi; 2] = [OwnApi::StreamsGroupHeartbeat, OwnApi::StreamsGroupDescribe];

    /// The Kafka api key.
    pub fn key(self) -> i16 {
        self as i16
    }

    /// The own API with Kafka api key `key`, if any.
    pub fn from_key(key: i16) -> Option<OwnApi> {
        OwnApi::ALL.into_iter().find(|a| a.key() == key)
    }

    /// Kafka's name of the API, as metrics and logs show it.
    pub fn name(self) -> &'static str {
        match self {
            OwnApi::StreamsGroupHeartbeat => "StreamsGroupHeartbeat",
            OwnApi::StreamsGroupDescribe => "StreamsGroupDescribe",
        }
    }

    /// The versions our codec reads and writes (Kafka 4.4's `validVersions`). Serving an API
    /// means listing it in [`crate::SUPPORTED_OWN`] within this range.
    pub fn codec_range(self) -> (i16, i16) {
        match self {
            OwnApi::StreamsGroupHeartbeat | OwnApi::StreamsGroupDescribe => (0, 1),
        }
    }

    /// Request header version: every version of both streams APIs is flexible (header v2).
    pub fn request_header_version(self, _version: i16) -> i16 {
        2
    }

    /// Response header version: flexible, so v1 (with tagged fields).
    pub fn response_header_version(self, _version: i16) -> i16 {
        1
    }
}

impl Api {
    /// The API with Kafka api key `key`, if Skiff can name it at all.
    pub fn from_key(key: i16) -> Option<Api> {
        match ApiKey::try_from(key) {
            Ok(k) => Some(Api::Kafka(k)),
            Err(()) => OwnApi::from_key(key).map(Api::Own),
        }
    }

    /// The Kafka api key.
    pub fn key(self) -> i16 {
        match self {
            Api::Kafka(k) => k as i16,
            Api::Own(o) => o.key(),
        }
    }

    /// The kafka-protocol key, for a crate API.
    pub fn kafka(self) -> Option<ApiKey> {
        match self {
            Api::Kafka(k) => Some(k),
            Api::Own(_) => None,
        }
    }

    /// Kafka's name of the API (`Produce`, `StreamsGroupHeartbeat`), as metrics and logs
    /// show it.
    pub fn name(self) -> String {
        self.to_string()
    }

    /// Request header version at `version` (1: classic, 2: flexible).
    pub fn request_header_version(self, version: i16) -> i16 {
        match self {
            Api::Kafka(k) => k.request_header_version(version),
            Api::Own(o) => o.request_header_version(version),
        }
    }

    /// Response header version at `version` (0: classic, 1: flexible; ApiVersions is 0).
    pub fn response_header_version(self, version: i16) -> i16 {
        match self {
            Api::Kafka(k) => k.response_header_version(version),
            Api::Own(o) => o.response_header_version(version),
        }
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Api::Kafka(k) => write!(f, "{k:?}"),
            Api::Own(o) => f.write_str(o.name()),
        }
    }
}

impl From<ApiKey> for Api {
    fn from(key: ApiKey) -> Api {
        Api::Kafka(key)
    }
}

impl From<OwnApi> for Api {
    fn from(api: OwnApi) -> Api {
        Api::Own(api)
    }
}

impl PartialEq<ApiKey> for Api {
    fn eq(&self, other: &ApiKey) -> bool {
        *self == Api::Kafka(*other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_names_and_headers() {
        assert_eq!(Api::from_key(0), Some(Api::Kafka(ApiKey::Produce)));
        assert_eq!(
            Api::from_key(88),
            Some(Api::Own(OwnApi::StreamsGroupHeartbeat))
        );
        assert_eq!(
            Api::from_key(89),
            Some(Api::Own(OwnApi::StreamsGroupDescribe))
        );
        assert_eq!(Api::from_key(1000), None);
        assert_eq!(Api::from_key(-1), None);
        for own in OwnApi::ALL {
            // The crate must not know the key, or there would be two ways to name it.
            assert!(ApiKey::try_from(own.key()).is_err(), "{own:?}");
            let api = Api::Own(own);
            assert_eq!(Api::from_key(api.key()), Some(api));
            assert_eq!(api.request_header_version(0), 2);
            assert_eq!(api.response_header_version(1), 1);
        }
        assert_eq!(
            Api::Own(OwnApi::StreamsGroupHeartbeat).name(),
            "StreamsGroupHeartbeat"
        );
        assert_eq!(Api::Kafka(ApiKey::Fetch).name(), "Fetch");
        assert!(Api::Kafka(ApiKey::Fetch) == ApiKey::Fetch);
        assert_eq!(Api::Kafka(ApiKey::Fetch).kafka(), Some(ApiKey::Fetch));
        assert_eq!(Api::Own(OwnApi::StreamsGroupDescribe).kafka(), None);
    }
}
