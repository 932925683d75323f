//! With SASL/PLAIN and ACLs, HTTP lookups, snapshots and compaction routes obey the same
//! ACLs as Kafka reads.

use skiff_e2e::acl::{self, ALTER, DESCRIBE, GROUP, READ, TOPIC};

use crate::tables_support::*;

/// `Authorization: Basic` values of base64("alice:alice-secret") and base64("bob:bob-secret").
const ALICE: &str = "Basic YWxpY2U6YWxpY2Utc2VjcmV0";
const BOB: &str = "Basic Ym9iOmJvYi1zZWNyZXQ=";
/// base64("eve:eve-secret"): a user without any ACL.
const EVE: &str = "Basic ZXZlOmV2ZS1zZWNyZXQ=";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_and_kafka_reads_obey_the_same_acls() {
    use rdkafka::config::ClientConfig;

    let plain = format!("127.0.0.1:{}", free_port().unwrap());
    let sasl = format!("127.0.0.1:{}", free_port().unwrap());
    let http = format!("127.0.0.1:{}", free_port().unwrap());
    let listeners = format!("PLAINTEXT://{plain},SASL_PLAINTEXT://{sasl}");
    // PLAINTEXT callers are User:ANONYMOUS, the super user that sets things up; alice and
    // bob log in with SASL/PLAIN on Kafka and with Basic (same passwords) over HTTP.
    let _b = Broker::start_opts(
        skiff_e2e::Options::new()
            .set("listeners", &listeners)
            .set("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
            .set("super.users", "User:ANONYMOUS")
            .set("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN")
            .set(
                "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\" user_bob=\"bob-secret\" user_eve=\"eve-secret\";",
            )
            .set("skiff.http.listener", &http)
            .set("skiff.http.authentication", "basic")
            .set("connection.failed.authentication.delay.ms", "0")
            .ready(skiff_e2e::Ready::LogLine("skiff is ready".into())),
    )
    .unwrap();
    let client = |extra: &[(&str, &str)]| {
        let mut c = ClientConfig::new();
        c.set("socket.timeout.ms", "10000")
            .set("message.timeout.ms", "10000");
        for (k, v) in extra {
            c.set(*k, *v);
        }
        c
    };
    let super_cfg = client(&[("bootstrap.servers", &plain)]);
    let admin: rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext> =
        super_cfg.create().unwrap();
    let topic = unique_topic("tables-acl");
    create_topic(
        &admin,
        &topic,
        1,
        &[
            ("cleanup.policy", "compact"),
            ("skiff.key.index.enable", "true"),
        ],
    )
    .await
    .unwrap();
    let p: FutureProducer = super_cfg.create().unwrap();
    let (_, off) = send(&p, &topic, "acct", Some("balance=7")).await;

    // alice may read the topic (READ implies DESCRIBE); bob may only describe it. Both may
    // use the consumer group the Kafka consumers below name.
    let group = format!("{topic}-g");
    acl::create(
        &plain,
        vec![
            acl::allow(TOPIC, &topic, "User:alice", READ),
            acl::allow(TOPIC, &topic, "User:bob", DESCRIBE),
            acl::allow(GROUP, &group, "User:alice", READ),
            acl::allow(GROUP, &group, "User:bob", READ),
        ],
    )
    .unwrap();

    let lookup = format!("/v1/topics/{topic}/keys/acct?partition=0");
    let snapshot = format!("/v1/topics/{topic}/snapshot");
    // No credentials: 401 on both routes.
    for path in [&lookup, &snapshot] {
        let r = get(&http, path);
        assert_eq!(
            (r.status, r.error_code().as_str()),
            (401, "unauthenticated"),
            "{path}"
        );
    }
    // alice: 200 on both, with the record.
    let r = get_ready(&http, &lookup, Some(ALICE));
    assert_lookup(&r, "acct", Some((0, off, "balance=7")), "alice");
    let r = common::http::request(&http, "GET", &snapshot, Some(ALICE)).unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let (rows, _) = parse_snapshot(&r.body);
    assert_eq!(rows["acct"].value, "balance=7");
    // bob: 403 on both, and the same 403 for a topic that does not exist.
    for path in [
        lookup.clone(),
        snapshot.clone(),
        "/v1/topics/no-such-topic/keys/acct".to_string(),
        "/v1/topics/no-such-topic/snapshot".to_string(),
    ] {
        let r = common::http::request(&http, "GET", &path, Some(BOB)).unwrap();
        assert_eq!(
            (r.status, r.error_code().as_str()),
            (403, "topic_authorization_failed"),
            "bob {path}: {}",
            r.body
        );
    }

    // The same ACLs on Kafka: alice's consumer reads the record, bob's is refused.
    let sasl_consumer = |user: &str, pass: &str| -> rdkafka::consumer::BaseConsumer {
        client(&[
            ("bootstrap.servers", &sasl),
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.username", user),
            ("sasl.password", pass),
            ("group.id", &group),
            ("enable.auto.commit", "false"),
            ("fetch.wait.max.ms", "100"),
        ])
        .create()
        .unwrap()
    };
    let assign = |c: &BaseConsumer| {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&topic, 0, Offset::Beginning)
            .unwrap();
        c.assign(&tpl).unwrap();
    };
    let alice = sasl_consumer("alice", "alice-secret");
    assign(&alice);
    let deadline = Instant::now() + T;
    let got = loop {
        assert!(Instant::now() < deadline, "alice read nothing");
        if let Some(m) = alice.poll(Duration::from_millis(200)) {
            break m.unwrap().payload().map(<[u8]>::to_vec);
        }
    };
    assert_eq!(got.as_deref(), Some(&b"balance=7"[..]));
    let bob = sasl_consumer("bob", "bob-secret");
    assign(&bob);
    let deadline = Instant::now() + T;
    let err = loop {
        assert!(Instant::now() < deadline, "bob's consumer got no error");
        match bob.poll(Duration::from_millis(200)) {
            None => {}
            Some(Ok(m)) => panic!("bob read offset {} without READ", m.offset()),
            Some(Err(e)) => break e,
        }
    };
    assert_eq!(
        err.rdkafka_error_code(),
        Some(rdkafka::types::RDKafkaErrorCode::TopicAuthorizationFailed),
        "{err}"
    );

    // The compaction routes (docs/http-api.md §2): the dry run needs DESCRIBE (bob has it),
    // compact-now ALTER (nobody yet), a ticket DESCRIBE on its topic (eve has nothing).
    let dry_run = format!("/v1/topics/{topic}/compaction/dry-run");
    let compact = format!("/v1/topics/{topic}/compaction");
    let r = common::http::request(&http, "GET", &dry_run, Some(BOB)).unwrap();
    assert_eq!(r.status, 200, "bob dry run: {}", r.body);
    for who in [ALICE, BOB] {
        let r = common::http::request(&http, "POST", &compact, Some(who)).unwrap();
        assert_eq!(
            (r.status, r.error_code().as_str()),
            (403, "topic_authorization_failed"),
            "compact-now without ALTER: {}",
            r.body
        );
    }
    let r = common::http::request(&http, "GET", &dry_run, Some(EVE)).unwrap();
    assert_eq!(r.status, 403, "eve dry run: {}", r.body);
    acl::create(&plain, vec![acl::allow(TOPIC, &topic, "User:bob", ALTER)]).unwrap();
    let r = common::http::request(&http, "POST", &compact, Some(BOB)).unwrap();
    assert_eq!(r.status, 202, "bob compact-now with ALTER: {}", r.body);
    let ticket = r
        .json()
        .get("tickets")
        .at(0)
        .get("url")
        .as_str()
        .unwrap()
        .to_string();
    let r = common::http::request(&http, "GET", &ticket, Some(ALICE)).unwrap();
    assert_eq!(r.status, 200, "alice ticket: {}", r.body);
    let r = common::http::request(&http, "GET", &ticket, Some(EVE)).unwrap();
    assert_eq!(r.status, 403, "eve ticket: {}", r.body);
    // ALTER does not give READ: bob's lookups are still refused.
    let r = common::http::request(&http, "GET", &lookup, Some(BOB)).unwrap();
    assert_eq!(r.status, 403, "{}", r.body);
}
