//! The console's Topics pages over real HTTP: the list and a topic's page show the figures
//! the broker holds (partitions, offsets, sizes, segments, configs); the create, config and
//! delete forms change the broker through the Kafka requests and report Kafka's errors;
//! read-only mode, cross-origin posts and the ACLs refuse with 403 and change nothing.
#![allow(clippy::unwrap_used)]

mod acl_support;
mod common;

use std::sync::Arc;

use acl_support::{create_acls, creation, ALLOW, DESCRIBE, LITERAL, READ, TOPIC};
use common::http::{basic, get, post_form, send, serve_api, Api};
use common::tables::{produce, topic_with};
use hyper::header::LOCATION;
use skiff_broker::Broker;

/// The cells of the table row that contains `marker`, inner HTML each.
fn row(html: &str, table_id: &str, marker: &str) -> Vec<String> {
    let table = html
        .split(&format!("<table id=\"{table_id}\">"))
        .nth(1)
        .unwrap_or_else(|| panic!("no table {table_id}: {html}"));
    let table = table.split("</table>").next().unwrap();
    let tr = table
        .split("<tr>")
        .find(|r| r.contains(marker))
        .unwrap_or_else(|| panic!("no row with {marker} in {table}"));
    tr.split("<td")
        .skip(1)
        .map(|c| {
            let c = &c[c.find('>').unwrap() + 1..];
            c[..c.find("</td>").unwrap()].to_string()
        })
        .collect()
}

fn bytes(n: u64) -> String {
    assert!(n < 1024, "the tests keep topics under 1 KiB: {n}");
    format!("{n} B")
}

async fn fill(broker: &Arc<Broker>) {
    topic_with(broker, "orders", 3, &[]).await;
    topic_with(
        broker,
        "table",
        1,
        &[("cleanup.policy", "compact"), ("retention.ms", "86400000")],
    )
    .await;
    produce(
        broker,
        "orders",
        0,
        &[(b"a", Some(b"1")), (b"b", Some(b"2"))],
    )
    .await;
    produce(broker, "orders", 2, &[(b"c", Some(b"3"))]).await;
    // Partition 0 starts at offset 1: records are end minus start offsets.
    let p = broker.topics.get("orders").unwrap().partition(0).unwrap();
    tokio::task::spawn_blocking(move || p.log.delete_records_before(1).unwrap())
        .await
        .unwrap();
    produce(broker, "table", 0, &[(b"k", Some(b"v")), (b"k", None)]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_and_a_topic_show_what_the_broker_holds() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    fill(&broker).await;
    let api = serve_api(broker.clone()).await;

    let r = get(&api, "/console/topics").await;
    assert_eq!(r.status, 200);
    let html = r.text();
    assert!(html.contains("<h1>Topics</h1>"), "{html}");
    assert!(html.contains("id=\"create-topic\""));
    for name in ["orders", "table"] {
        let t = broker.topics.get(name).unwrap();
        let parts = t.partitions();
        let records: i64 = parts
            .iter()
            .map(|p| p.log.high_watermark() - p.log.log_start_offset())
            .sum();
        let size: u64 = parts.iter().map(|p| p.log.size_bytes()).sum();
        let cells = row(&html, "topics", &format!("href=\"/console/topics/{name}\""));
        assert_eq!(cells[1], parts.len().to_string(), "{name}: {cells:?}");
        assert_eq!(cells[2], records.to_string(), "{name}: {cells:?}");
        assert_eq!(cells[3], bytes(size), "{name}: {cells:?}");
    }
    let cells = row(&html, "topics", "href=\"/console/topics/orders\"");
    assert_eq!((cells[2].as_str(), cells[5].as_str()), ("2", "delete"));
    assert!(!cells[6].contains("retention.ms"), "{cells:?}");
    let cells = row(&html, "topics", "href=\"/console/topics/table\"");
    assert_eq!(cells[5], "compact");
    assert!(
        cells[6].contains("<code>retention.ms=86400000</code>"),
        "{cells:?}"
    );

    // One topic: per partition, the offsets, size and segments of its log.
    let r = get(&api, "/console/topics/orders").await;
    assert_eq!(r.status, 200);
    let html = r.text();
    assert!(html.contains("<h1>Topic orders</h1>"), "{html}");
    assert!(
        html.contains("<dt>Partitions</dt><dd>3</dd></div><div><dt>Records</dt><dd>2</dd>"),
        "{html}"
    );
    for p in broker.topics.get("orders").unwrap().partitions() {
        let cells = row(
            &html,
            "partitions",
            &format!("messages?partition={}\"", p.index),
        );
        assert_eq!(
            cells[..5],
            [
                p.index.to_string(),
                p.log.log_start_offset().to_string(),
                p.log.high_watermark().to_string(),
                bytes(p.log.size_bytes()),
                p.log.segment_count().to_string(),
            ],
            "{cells:?}"
        );
    }
    assert!(html.contains("<svg"), "the size chart");
    assert!(html.contains("data-refresh=\"/console/topics/orders/charts\""));
    let r = get(&api, "/console/topics/orders/charts").await;
    assert_eq!(r.status, 200);
    assert!(r.text().contains("Records produced"));
    let cells = row(&html, "configs", "cleanup.policy");
    assert_eq!(cells[1], "<code>delete</code>");
    assert!(html.contains("id=\"alter-config\""));
    assert!(html.contains("id=\"delete-topic\""));
    assert!(html.contains("data-confirm="));
    assert!(html.contains("href=\"/console/topics/orders/messages\""));
    assert!(
        !html.contains("/console/topics/orders/compaction"),
        "orders is not compacted"
    );
    let html = get(&api, "/console/topics/table").await.text();
    assert!(html.contains("href=\"/console/topics/table/compaction\""));
    let cells = row(&html, "configs", ">retention.ms<");
    assert_eq!(cells[1], "<code>86400000</code>");
    assert!(cells[2].contains("DYNAMIC_TOPIC_CONFIG"), "{cells:?}");

    let r = get(&api, "/console/topics/nope").await;
    assert_eq!(r.status, 404);
    assert!(r.text().contains("UNKNOWN_TOPIC_OR_PARTITION"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_alter_and_delete_through_the_forms() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    fill(&broker).await;
    let api = serve_api(broker.clone()).await;

    let r = post_form(
        &api,
        "/console/topics",
        &[
            ("name", "fresh"),
            ("partitions", "2"),
            ("cleanup.policy", "delete,compact"),
            (
                "configs",
                "retention.ms=1000\r\n\r\nsegment.bytes=1048576\r\n",
            ),
        ],
        true,
        None,
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text());
    let location = r.headers[LOCATION].to_str().unwrap().to_string();
    assert!(
        location.starts_with("/console/topics/fresh?done="),
        "{location}"
    );
    let fresh = broker.topics.get("fresh").unwrap();
    assert_eq!(fresh.partition_count(), 2);
    let o = fresh.overrides();
    assert_eq!(o["cleanup.policy"], "delete,compact");
    assert_eq!(o["retention.ms"], "1000");
    assert_eq!(o["segment.bytes"], "1048576");
    let html = get(&api, &location).await.text();
    assert!(html.contains("class=\"notice\""), "{html}");
    assert!(html.contains("Created topic fresh"), "{html}");

    // Kafka's refusals, by name, and nothing created.
    for (fields, status, name) in [
        (
            vec![("name", "bad"), ("configs", "retention.ms=soon")],
            400,
            "INVALID_CONFIG",
        ),
        (
            vec![("name", "bad"), ("cleanup.policy", "shred")],
            400,
            "INVALID_CONFIG",
        ),
        (
            vec![("name", "bad"), ("partitions", "0")],
            400,
            "INVALID_PARTITIONS",
        ),
        (vec![("name", "orders")], 409, "TOPIC_ALREADY_EXISTS"),
        (vec![("name", "bad/name")], 400, "INVALID_TOPIC_EXCEPTION"),
    ] {
        let r = post_form(&api, "/console/topics", &fields, true, None).await;
        assert_eq!(r.status, status, "{fields:?}: {}", r.text());
        assert!(r.text().contains(name), "{fields:?}: {}", r.text());
    }
    assert!(broker.topics.get("bad").is_none());
    assert!(broker.topics.get("bad/name").is_none());
    assert_eq!(broker.topics.get("orders").unwrap().partition_count(), 3);
    let r = post_form(&api, "/console/topics", &[("configs", "a=b")], true, None).await;
    assert_eq!(r.status, 400);

    // Change a config, see it in the broker and on the page; then back to the default.
    let r = post_form(
        &api,
        "/console/topics/orders/config",
        &[("key", "retention.ms"), ("value", "12345"), ("op", "set")],
        true,
        None,
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text());
    assert_eq!(
        broker.topics.get("orders").unwrap().overrides()["retention.ms"],
        "12345"
    );
    let html = get(&api, "/console/topics/orders").await.text();
    let cells = row(&html, "configs", ">retention.ms<");
    assert_eq!(cells[1], "<code>12345</code>");
    let html = get(&api, "/console/topics").await.text();
    let cells = row(&html, "topics", "href=\"/console/topics/orders\"");
    assert!(cells[6].contains("retention.ms=12345"), "{cells:?}");
    let r = post_form(
        &api,
        "/console/topics/orders/config",
        &[("key", "retention.ms"), ("op", "delete")],
        true,
        None,
    )
    .await;
    assert_eq!(r.status, 303);
    assert!(!broker
        .topics
        .get("orders")
        .unwrap()
        .overrides()
        .contains_key("retention.ms"));
    let r = post_form(
        &api,
        "/console/topics/orders/config",
        &[("key", "retention.ms"), ("value", "-7"), ("op", "set")],
        true,
        None,
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("INVALID_CONFIG"));
    assert!(!broker
        .topics
        .get("orders")
        .unwrap()
        .overrides()
        .contains_key("retention.ms"));

    // Delete with the form: back to the list with a notice.
    let r = post_form(&api, "/console/topics/fresh/delete", &[], true, None).await;
    assert_eq!(r.status, 303, "{}", r.text());
    let location = r.headers[LOCATION].to_str().unwrap().to_string();
    assert!(location.starts_with("/console/topics?done="), "{location}");
    assert!(broker.topics.get("fresh").is_none());
    let html = get(&api, &location).await.text();
    assert!(html.contains("Deleted topic fresh"));
    assert!(!html.contains("href=\"/console/topics/fresh\""));
    let r = post_form(&api, "/console/topics/fresh/delete", &[], true, None).await;
    assert_eq!(r.status, 404);
    assert!(r.text().contains("UNKNOWN_TOPIC_OR_PARTITION"));

    // A form sent from another site is refused and changes nothing.
    let r = post_form(&api, "/console/topics", &[("name", "evil")], false, None).await;
    assert_eq!(r.status, 403);
    let r = post_form(&api, "/console/topics/orders/delete", &[], false, None).await;
    assert_eq!(r.status, 403);
    assert!(broker.topics.get("evil").is_none());
    assert!(broker.topics.get("orders").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_hides_the_forms_and_refuses_the_actions() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path())
        .sets(&["skiff.console.read.only=true"])
        .start()
        .await;
    fill(&broker).await;
    let api = serve_api(broker.clone()).await;

    let html = get(&api, "/console/topics").await.text();
    assert!(html.contains("<table id=\"topics\">"));
    assert!(!html.contains("id=\"create-topic\""));
    let html = get(&api, "/console/topics/orders").await.text();
    assert!(html.contains("<table id=\"partitions\">"));
    assert!(!html.contains("id=\"alter-config\""));
    assert!(!html.contains("id=\"delete-topic\""));

    let r = post_form(&api, "/console/topics", &[("name", "new")], true, None).await;
    assert_eq!(r.status, 403);
    let r = post_form(
        &api,
        "/console/topics/orders/config",
        &[("key", "retention.ms"), ("value", "1")],
        true,
        None,
    )
    .await;
    assert_eq!(r.status, 403);
    let r = post_form(&api, "/console/topics/orders/delete", &[], true, None).await;
    assert_eq!(r.status, 403);
    assert!(r.text().contains("read-only"));
    assert!(broker.topics.get("new").is_none());
    let orders = broker.topics.get("orders").unwrap();
    assert!(!orders.overrides().contains_key("retention.ms"));
}

const USERS: [&str; 4] = [
    "listeners=SASL_PLAINTEXT://127.0.0.1:0",
    "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin=\"admin-secret\" user_alice=\"alice-secret\" user_bob=\"bob-secret\";",
    "skiff.http.authentication=basic",
];

async fn with_acls(dir: &std::path::Path) -> (Arc<Broker>, Api) {
    let broker = acl_support::start(dir, &USERS).await;
    fill(&broker).await;
    topic_with(&broker, "secret", 1, &[]).await;
    let codes = create_acls(
        &broker,
        "admin",
        vec![
            creation(TOPIC, "orders", LITERAL, "User:alice", DESCRIBE, ALLOW),
            creation(TOPIC, "table", LITERAL, "User:alice", READ, ALLOW),
        ],
    )
    .await;
    assert_eq!(codes, vec![0, 0]);
    let api = serve_api(broker.clone()).await;
    (broker, api)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_acls_decide_what_a_user_sees_and_does() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, api) = with_acls(dir.path()).await;
    // As a consumer's first FindCoordinator would, so the list has an internal topic.
    broker.coordinator.ensure_offsets_topic().unwrap();
    let alice = basic("alice", "alice-secret");
    let bob = basic("bob", "bob-secret");
    let admin = basic("admin", "admin-secret");

    assert_eq!(get(&api, "/console/topics").await.status, 401);
    let html = send(&api, "GET", "/console/topics", Some(&alice))
        .await
        .text();
    assert!(html.contains("href=\"/console/topics/orders\""), "{html}");
    assert!(html.contains("href=\"/console/topics/table\""), "{html}");
    assert!(!html.contains("secret"), "{html}");
    let html = send(&api, "GET", "/console/topics", Some(&bob))
        .await
        .text();
    assert!(!html.contains("href=\"/console/topics/"), "{html}");
    let html = send(&api, "GET", "/console/topics", Some(&admin))
        .await
        .text();
    assert!(html.contains("href=\"/console/topics/secret\""), "{html}");
    let cells = row(
        &html,
        "topics",
        "href=\"/console/topics/__consumer_offsets\"",
    );
    assert!(cells[0].contains("internal"), "{cells:?}");
    let cells = row(&html, "topics", "href=\"/console/topics/secret\"");
    assert!(!cells[0].contains("internal"), "{cells:?}");

    // The same refusal for a topic that exists and one that does not.
    let secret = send(&api, "GET", "/console/topics/secret", Some(&alice)).await;
    let missing = send(&api, "GET", "/console/topics/nope", Some(&alice)).await;
    assert_eq!(secret.status, 403);
    assert_eq!((missing.status, missing.text()), (403, secret.text()));
    assert!(!secret.text().contains("secret<"), "{}", secret.text());
    let r = send(&api, "GET", "/console/topics/orders", Some(&bob)).await;
    assert_eq!((r.status, r.text()), (403, secret.text()));
    let r = send(&api, "GET", "/console/topics/orders/charts", Some(&bob)).await;
    assert_eq!((r.status, r.text()), (403, secret.text()));

    // alice may describe orders but not change it: no forms, and the actions are refused.
    let r = send(&api, "GET", "/console/topics/orders", Some(&alice)).await;
    assert_eq!(r.status, 200);
    let html = r.text();
    assert!(html.contains("<table id=\"partitions\">"));
    assert!(!html.contains("id=\"alter-config\""));
    assert!(!html.contains("id=\"delete-topic\""));
    assert!(
        html.contains("TOPIC_AUTHORIZATION_FAILED"),
        "configs need DESCRIBE_CONFIGS"
    );
    let r = post_form(
        &api,
        "/console/topics/orders/delete",
        &[],
        true,
        Some(&alice),
    )
    .await;
    assert_eq!(r.status, 403);
    let r = post_form(
        &api,
        "/console/topics/orders/config",
        &[("key", "retention.ms"), ("value", "1")],
        true,
        Some(&alice),
    )
    .await;
    assert_eq!(r.status, 403);
    let r = post_form(
        &api,
        "/console/topics",
        &[("name", "mine")],
        true,
        Some(&alice),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.text().contains("AUTHORIZATION_FAILED"), "{}", r.text());
    assert!(broker.topics.get("orders").is_some());
    assert!(broker.topics.get("mine").is_none());
    assert!(!broker
        .topics
        .get("orders")
        .unwrap()
        .overrides()
        .contains_key("retention.ms"));

    // The super user may.
    let r = post_form(
        &api,
        "/console/topics",
        &[("name", "mine")],
        true,
        Some(&admin),
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text());
    assert!(broker.topics.get("mine").is_some());
}
