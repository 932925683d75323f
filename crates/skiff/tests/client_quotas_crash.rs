//! Client quotas survive a crash: an AlterClientQuotas that was answered is still there after
//! the binary is killed with SIGKILL and started again on the same data directory.
#![allow(clippy::unwrap_used)]

mod common;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable};
use skiff_testkit::Broker;

use common::frames::{s, Conn};

/// Sends `body` as `key` v1 (flexible) on a new connection and decodes the answer.
fn roundtrip<Req: Encodable, Resp: Decodable>(bootstrap: &str, key: ApiKey, body: &Req) -> Resp {
    Conn::connect(bootstrap).call(key, 1, body)
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
    let r: DescribeClientQuotasResponse =
        roundtrip(bootstrap, ApiKey::DescribeClientQuotas, &request);
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
    let r: AlterClientQuotasResponse = roundtrip(&bootstrap, ApiKey::AlterClientQuotas, &request);
    assert!(r.entries.iter().all(|e| e.error_code == 0), "{r:?}");
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
