//! Filled sample requests of the client quota APIs (v0-1, flexible from v1).

use super::s;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

/// A sample of `key` at `v` (`f`: flexible), or `None` if `key` is not one of these APIs.
pub fn sample(key: ApiKey, _v: i16, f: bool) -> Option<RequestKind> {
    Some(match key {
        ApiKey::DescribeClientQuotas => {
            use describe_client_quotas_request::*;
            let c = |t, m: i8, n: Option<StrBytes>| {
                tag!(
                    ComponentData::default()
                        .with_entity_type(s(t))
                        .with_match_type(m)
                        .with_match(n),
                    f
                )
            };
            let r = DescribeClientQuotasRequest::default()
                .with_components(vec![
                    c("user", 0, Some(s("alice"))),
                    c("client-id", 1, None),
                ])
                .with_strict(true);
            RequestKind::DescribeClientQuotas(tag!(r, f))
        }
        ApiKey::AlterClientQuotas => {
            use alter_client_quotas_request::*;
            let e = |t, n: Option<StrBytes>| {
                tag!(
                    EntityData::default()
                        .with_entity_type(s(t))
                        .with_entity_name(n),
                    f
                )
            };
            let o = |k, v: f64, rm| {
                tag!(
                    OpData::default()
                        .with_key(s(k))
                        .with_value(v)
                        .with_remove(rm),
                    f
                )
            };
            let entry = tag!(
                EntryData::default()
                    .with_entity(vec![e("user", Some(s("alice"))), e("client-id", None)])
                    .with_ops(vec![
                        o("producer_byte_rate", 1024.0, false),
                        o("request_percentage", 0.0, true)
                    ]),
                f
            );
            let r = AlterClientQuotasRequest::default()
                .with_entries(vec![entry])
                .with_validate_only(true);
            RequestKind::AlterClientQuotas(tag!(r, f))
        }
        _ => return None,
    })
}
