//! Guard schemas of the SCRAM credential APIs: DescribeUserScramCredentials and
//! AlterUserScramCredentials (both v0 only and flexible in Kafka 4.x), from Kafka's
//! `DescribeUserScramCredentialsRequest.json` / `AlterUserScramCredentialsRequest.json` as
//! generated into kafka-protocol 0.18; and the SASL exchange requests SaslHandshake and
//! SaslAuthenticate, which carry the credentials these APIs manage.

use super::{all, fields, Struct, Ty};

static USER_NAME: Struct = fields(&[all(Ty::Str)]); // name

/// DescribeUserScramCredentialsRequest: a nullable array of user names (null: all users).
pub(crate) static DESCRIBE_USER_SCRAM_CREDENTIALS: Struct =
    fields(&[all(Ty::Array(&Ty::Struct(&USER_NAME)))]);

static DELETION: Struct = fields(&[
    all(Ty::Str),  // name
    all(Ty::Int8), // mechanism
]);

static UPSERTION: Struct = fields(&[
    all(Ty::Str),   // name
    all(Ty::Int8),  // mechanism
    all(Ty::Int32), // iterations
    all(Ty::Bytes), // salt
    all(Ty::Bytes), // salted_password
]);

/// SaslHandshakeRequest (v0-1): the mechanism name.
pub(crate) static SASL_HANDSHAKE: Struct = fields(&[all(Ty::Str)]);

/// SaslAuthenticateRequest (v0-2, flexible from v2): the client's SASL token.
pub(crate) static SASL_AUTHENTICATE: Struct = fields(&[all(Ty::Bytes)]);

/// AlterUserScramCredentialsRequest: deletions, then upsertions.
pub(crate) static ALTER_USER_SCRAM_CREDENTIALS: Struct = fields(&[
    all(Ty::Array(&Ty::Struct(&DELETION))),
    all(Ty::Array(&Ty::Struct(&UPSERTION))),
]);
