//! Client quotas survive a crash: an AlterClientQuotas that was answered is still there after
//! the binary is killed with SIGKILL and started again on the same data directory.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use skiff_testkit::Broker;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// Sends `body` as `key` v1 (flexible) and returns the response body.
fn roundtrip<R: Encodable>(bootstrap: &str, key: ApiKey, body: &R) -> Bytes {
    let mut stream = TcpStream::connect(bootstrap).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(1)
        .with_correlation_id(7)
        .with_client_id(Some(s("crash-test")));
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    header
        .encode(&mut buf, key.request_header_version(1))
        .unwrap();
    body.encode(&mut buf, 1).unwrap();
    let size = i32::try_from(buf.len() - 4).unwrap();
    buf[..4].copy_from_slice(&size.to_be_bytes());
    stream.write_all(&buf).unwrap();
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).unwrap();
    let mut body = vec![0u8; usize::try_from(i32::from_be_bytes(size)).unwrap()];
    stream.read_exact(&mut body).unwrap();
    let mut body = Bytes::from(body);
    let header = ResponseHeader::decode(&mut body, key.response_header_version(1)).unwrap();
    assert_eq!(header.correlation_id, 7);
    body
}

/// A user entity (None: the default) and its quota values.
type UserQuotas = (Option<String>, Vec<(String, f64)>);

fn describe_users(bootstrap: &str) -> Vec<UserQuotas> {
    use describe_client_quotas_request::ComponentData;
    let request =
        DescribeClientQuotasRequest::default().with_components(vec![ComponentData::default()
            .with_entity_type(s("user"))
            .with_match_type(2)
            .with_match(None)]);
    let mut body = roundtrip(bootstrap, ApiKey::DescribeClientQuotas, &request);
    let r = DescribeClientQuotasResponse::decode(&mut body, 1).unwrap();
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    let mut rows: Vec<_> = r
        .entries
        .unwrap()
        .into_iter()
        .map(|e| {
            let user = e.entity[0].entity_name.as_ref().map(|n| n.to_string());
            let values = e
                .values
                .iter()
                .map(|v| (v.key.to_string(), v.value))
                .collect();
            (user, values)
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows
}

#[test]
fn an_answered_alteration_survives_kill_9() {
    let mut broker = Broker::start().unwrap();
    let bootstrap = broker.bootstrap();
    use alter_client_quotas_request::{EntityData, EntryData, OpData};
    let entry = |user: Option<&str>, key: &str, value: f64| {
        EntryData::default()
            .with_entity(vec![EntityData::default()
                .with_entity_type(s("user"))
                .with_entity_name(user.map(s))])
            .with_ops(vec![OpData::default().with_key(s(key)).with_value(value)])
    };
    let request = AlterClientQuotasRequest::default().with_entries(vec![
        entry(Some("alice"), "producer_byte_rate", 1024.0),
        entry(None, "request_percentage", 25.0),
    ]);
    let mut body = roundtrip(&bootstrap, ApiKey::AlterClientQuotas, &request);
    let r = AlterClientQuotasResponse::decode(&mut body, 1).unwrap();
    assert!(r.entries.iter().all(|e| e.error_code == 0), "{r:?}");
    assert_eq!(body.remaining(), 0);
    let before = describe_users(&bootstrap);
    assert_eq!(before.len(), 2);

    broker.kill9().unwrap();
    broker.restart().unwrap();
    assert_eq!(describe_users(&broker.bootstrap()), before);
    assert_eq!(
        before,
        vec![
            (None, vec![("request_percentage".to_string(), 25.0)]),
            (
                Some("alice".to_string()),
                vec![("producer_byte_rate".to_string(), 1024.0)]
            ),
        ]
    );
    broker.stop().unwrap();
}
