//! The console's Messages page over real HTTP: records appended beforehand (plain and
//! compressed batches, a tombstone, headers, JSON and binary values) read back as text,
//! JSON and hex, oldest or newest first, from an offset, a timestamp or the newest; a
//! test record produced through the form and read back; read-only mode, cross-origin
//! posts and the ACLs (READ to browse, WRITE to produce) refusing with 403.
#![allow(clippy::unwrap_used)]

mod acl_support;
mod common;

use std::sync::Arc;

use acl_support::{create_acls, creation, ALLOW, LITERAL, READ, TOPIC};
use common::http::{basic, get, post_form, send, serve_api};
use common::tables::topic_with;
use hyper::header::LOCATION;
use skiff_broker::partitioner::Partitioner;
use skiff_broker::Broker;
use skiff_log::AppendValidation;
use skiff_records::{BatchBuilder, Compression};

/// Record timestamps: record i of the partition at T0 + i seconds.
const T0: i64 = 1_800_000_000_000;

type Rec = (Option<&'static [u8]>, Option<&'static [u8]>);

/// Appends one batch of `recs` (timestamps continue from the partition's end offset), each
/// with the header `src=console-test`.
async fn append(
    broker: &Arc<Broker>,
    topic: &str,
    partition: i32,
    compression: Compression,
    recs: Vec<Rec>,
) {
    let b = broker.clone();
    let topic = topic.to_string();
    tokio::task::spawn_blocking(move || {
        let p = b.topics.get(&topic).unwrap().partition(partition).unwrap();
        let first = p.log.high_watermark();
        let mut builder = BatchBuilder::new(0, compression);
        let mut last = T0;
        for (i, (k, v)) in recs.iter().enumerate() {
            last = T0 + (first + i as i64) * 1000;
            builder.push(last, *k, *v, &[(b"src", Some(b"console-test"))]);
        }
        p.log
            .append(
                &builder.build().unwrap(),
                0,
                &AppendValidation { now_ms: last },
            )
            .unwrap();
    })
    .await
    .unwrap();
}

/// Offsets 0-2 plain, 3-5 gzip-compressed (5 a tombstone), 6 binary, in partition 0.
async fn fill(broker: &Arc<Broker>) {
    topic_with(broker, "events", 2, &[]).await;
    append(
        broker,
        "events",
        0,
        Compression::None,
        vec![
            (Some(b"k0"), Some(b"{\"n\":0,\"tag\":\"<zero>\"}")),
            (Some(b"k1"), Some(b"plain one")),
            (None, Some(b"no key")),
        ],
    )
    .await;
    append(
        broker,
        "events",
        0,
        Compression::Gzip,
        vec![
            (Some(b"k3"), Some(b"{\"n\":3}")),
            (Some(b"k4"), Some(b"zipped four")),
            (Some(b"k1"), None),
        ],
    )
    .await;
    append(
        broker,
        "events",
        0,
        Compression::Zstd,
        vec![(Some(b"bin"), Some(b"\x00\xff"))],
    )
    .await;
}

/// The offsets of the rows of the messages table, in page order.
fn offsets(html: &str) -> Vec<i64> {
    cells(html).iter().map(|r| r[0].parse().unwrap()).collect()
}

/// The rows of the messages table, inner HTML of each cell.
fn cells(html: &str) -> Vec<Vec<String>> {
    let table = html
        .split("<table id=\"messages\">")
        .nth(1)
        .unwrap_or_else(|| panic!("no messages table: {html}"));
    let body = table
        .split("<tbody>")
        .nth(1)
        .unwrap()
        .split("</tbody>")
        .next()
        .unwrap();
    body.split("<tr>")
        .skip(1)
        .filter(|r| !r.contains("class=\"empty\""))
        .map(|tr| {
            tr.split("<td")
                .skip(1)
                .map(|c| {
                    let c = &c[c.find('>').unwrap() + 1..];
                    c[..c.find("</td>").unwrap()].to_string()
                })
                .collect()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browse_in_each_format_order_and_start() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    fill(&broker).await;
    let api = serve_api(broker.clone()).await;
    let page = |q: &str| format!("/console/topics/events/messages?{q}");

    let r = get(&api, &page("partition=0&from=oldest&format=text")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let html = r.text();
    assert!(html.contains("id=\"browse\""));
    assert!(html.contains("id=\"produce\""));
    let rows = cells(&html);
    assert_eq!(offsets(&html), vec![0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(rows[0][2], "<pre>k0</pre>");
    assert_eq!(
        rows[0][3],
        "<pre>{&quot;n&quot;:0,&quot;tag&quot;:&quot;&lt;zero&gt;&quot;}</pre>"
    );
    assert!(
        rows[0][1].contains("2027-01-15 08:00:00 UTC"),
        "{:?}",
        rows[0]
    );
    assert!(
        rows[0][4].contains("<dt>src</dt><dd><pre>console-test</pre></dd>"),
        "{:?}",
        rows[0]
    );
    assert!(rows[2][2].contains("null"));
    assert_eq!(rows[4][3], "<pre>zipped four</pre>", "the gzip batch");
    assert!(rows[5][3].contains("null (tombstone)"), "{:?}", rows[5]);
    assert!(rows[6][3].contains("not UTF-8"), "{:?}", rows[6]);

    // Newest first.
    let html = get(&api, &page("partition=0&from=oldest&order=desc"))
        .await
        .text();
    assert_eq!(offsets(&html), vec![6, 5, 4, 3, 2, 1, 0]);
    // The default: the newest `limit` records, newest first.
    let html = get(&api, &page("limit=2")).await.text();
    assert_eq!(offsets(&html), vec![6, 5]);
    let html = get(&api, &page("from=newest&limit=3&order=asc"))
        .await
        .text();
    assert_eq!(offsets(&html), vec![4, 5, 6]);

    // JSON pretty-printed when it parses; text otherwise.
    let rows = cells(
        &get(&api, &page("from=oldest&format=json&limit=4"))
            .await
            .text(),
    );
    assert_eq!(rows.len(), 4);
    assert_eq!(
        rows[0][3],
        "<pre class=\"json\">{\n  &quot;n&quot;: 0,\n  &quot;tag&quot;: &quot;&lt;zero&gt;&quot;\n}</pre>"
    );
    assert_eq!(rows[1][3], "<pre>plain one</pre>");
    assert!(
        rows[3][3].contains("class=\"json\""),
        "the gzip batch: {:?}",
        rows[3]
    );

    // Hex.
    let rows = cells(&get(&api, &page("offset=6&format=hex")).await.text());
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][2], "<code class=\"hex\">62 69 6e</code>");
    assert_eq!(rows[0][3], "<code class=\"hex\">00 ff</code>");

    // From an offset, within the compressed batch; and a limit.
    let html = get(&api, &page("offset=4&limit=2")).await.text();
    assert_eq!(offsets(&html), vec![4, 5]);
    // From a timestamp: the first record at or after it.
    let html = get(&api, &page(&format!("timestamp={}", T0 + 2500)))
        .await
        .text();
    assert_eq!(offsets(&html), vec![3, 4, 5, 6]);
    let html = get(&api, &page(&format!("timestamp={}", T0 + 60_000)))
        .await
        .text();
    assert_eq!(offsets(&html), Vec::<i64>::new());
    // The empty partition.
    let html = get(&api, &page("partition=1&from=oldest")).await.text();
    assert_eq!(offsets(&html), Vec::<i64>::new());

    for bad in [
        "partition=2",
        "partition=x",
        "format=xml",
        "from=middle",
        "order=up",
    ] {
        let r = get(&api, &page(bad)).await;
        assert!(matches!(r.status, 400 | 404), "{bad}: {}", r.status);
    }
    assert_eq!(get(&api, "/console/topics/nope/messages").await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_through_the_form_and_read_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path()).start().await;
    fill(&broker).await;
    let api = serve_api(broker.clone()).await;

    let r = post_form(
        &api,
        "/console/topics/events/produce",
        &[
            ("partition", ""),
            ("key", "order-17"),
            ("value", "{\"total\": 5}"),
            ("headers", "trace=abc\r\nsrc=form"),
        ],
        true,
        None,
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text());
    let partition = Partitioner::Murmur2.partition(b"order-17", 2).unwrap();
    let p = broker
        .topics
        .get("events")
        .unwrap()
        .partition(partition)
        .unwrap();
    let offset = p.log.high_watermark() - 1;
    let location = r.headers[LOCATION].to_str().unwrap().to_string();
    assert!(
        location.starts_with(&format!(
            "/console/topics/events/messages?partition={partition}&offset={offset}&"
        )),
        "{location}"
    );
    let html = get(&api, &location).await.text();
    assert!(
        html.contains(&format!("at offset {offset}")),
        "the notice: {html}"
    );
    let rows = cells(&html);
    assert_eq!(rows[0][0], offset.to_string());
    assert_eq!(rows[0][2], "<pre>order-17</pre>");
    assert_eq!(rows[0][3], "<pre>{&quot;total&quot;: 5}</pre>");
    assert!(rows[0][4].contains("<dt>trace</dt><dd><pre>abc</pre></dd>"));
    assert!(rows[0][4].contains("<dt>src</dt><dd><pre>form</pre></dd>"));

    // An explicit partition, a null key and a tombstone.
    let r = post_form(
        &api,
        "/console/topics/events/produce",
        &[("partition", "0"), ("key", "k9"), ("tombstone", "on")],
        true,
        None,
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text());
    let html = get(&api, r.headers[LOCATION].to_str().unwrap())
        .await
        .text();
    let rows = cells(&html);
    let p0 = broker.topics.get("events").unwrap().partition(0).unwrap();
    assert_eq!(rows[0][0], (p0.log.high_watermark() - 1).to_string());
    assert!(rows[0][3].contains("null (tombstone)"));

    // Kafka's errors.
    let r = post_form(
        &api,
        "/console/topics/events/produce",
        &[("partition", "5"), ("value", "x")],
        true,
        None,
    )
    .await;
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(r.text().contains("UNKNOWN_TOPIC_OR_PARTITION"));
    let r = post_form(
        &api,
        "/console/topics/events/produce",
        &[("headers", "oops")],
        true,
        None,
    )
    .await;
    assert_eq!(r.status, 400);
    // Cross-origin: refused, nothing written.
    let before = broker
        .topics
        .get("events")
        .unwrap()
        .partition(0)
        .unwrap()
        .log
        .high_watermark();
    let r = post_form(
        &api,
        "/console/topics/events/produce",
        &[("partition", "0"), ("value", "evil")],
        false,
        None,
    )
    .await;
    assert_eq!(r.status, 403);
    let after = broker
        .topics
        .get("events")
        .unwrap()
        .partition(0)
        .unwrap()
        .log
        .high_watermark();
    assert_eq!(after, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_shows_records_but_no_produce() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::broker(dir.path())
        .sets(&["skiff.console.read.only=true"])
        .start()
        .await;
    fill(&broker).await;
    let api = serve_api(broker.clone()).await;
    let html = get(&api, "/console/topics/events/messages?from=oldest")
        .await
        .text();
    assert_eq!(offsets(&html).len(), 7);
    assert!(html.contains("id=\"browse\""));
    assert!(!html.contains("id=\"produce\""));
    let r = post_form(
        &api,
        "/console/topics/events/produce",
        &[("partition", "0"), ("value", "x")],
        true,
        None,
    )
    .await;
    assert_eq!(r.status, 403);
    let p = broker.topics.get("events").unwrap().partition(0).unwrap();
    assert_eq!(p.log.high_watermark(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_may_browse_write_is_needed_to_produce() {
    let dir = tempfile::tempdir().unwrap();
    let broker = acl_support::start(
        dir.path(),
        &[
            "listeners=SASL_PLAINTEXT://127.0.0.1:0",
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin=\"admin-secret\" user_alice=\"alice-secret\" user_bob=\"bob-secret\";",
            "skiff.http.authentication=basic",
        ],
    )
    .await;
    fill(&broker).await;
    let codes = create_acls(
        &broker,
        "admin",
        vec![creation(
            TOPIC,
            "events",
            LITERAL,
            "User:alice",
            READ,
            ALLOW,
        )],
    )
    .await;
    assert_eq!(codes, vec![0]);
    let api = serve_api(broker.clone()).await;
    let alice = basic("alice", "alice-secret");
    let bob = basic("bob", "bob-secret");
    let admin = basic("admin", "admin-secret");
    let path = "/console/topics/events/messages?from=oldest";

    let r = send(&api, "GET", path, Some(&alice)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let html = r.text();
    assert_eq!(offsets(&html), vec![0, 1, 2, 3, 4, 5, 6]);
    assert!(!html.contains("id=\"produce\""), "alice may not write");
    let r = post_form(
        &api,
        "/console/topics/events/produce",
        &[("partition", "0"), ("value", "x")],
        true,
        Some(&alice),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(
        r.text().contains("TOPIC_AUTHORIZATION_FAILED"),
        "{}",
        r.text()
    );
    let p = broker.topics.get("events").unwrap().partition(0).unwrap();
    assert_eq!(p.log.high_watermark(), 7);

    // bob: the same refusal as for a topic that does not exist.
    let denied = send(&api, "GET", path, Some(&bob)).await;
    let missing = send(&api, "GET", "/console/topics/nope/messages", Some(&bob)).await;
    assert_eq!(denied.status, 403);
    assert_eq!((missing.status, missing.text()), (403, denied.text()));
    let r = post_form(
        &api,
        "/console/topics/events/produce",
        &[("partition", "0"), ("value", "x")],
        true,
        Some(&bob),
    )
    .await;
    assert_eq!(r.status, 403);

    // The super user may produce.
    let html = send(&api, "GET", path, Some(&admin)).await.text();
    assert!(html.contains("id=\"produce\""));
    let r = post_form(
        &api,
        "/console/topics/events/produce",
        &[("partition", "0"), ("value", "x")],
        true,
        Some(&admin),
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text());
    assert_eq!(p.log.high_watermark(), 8);
}
