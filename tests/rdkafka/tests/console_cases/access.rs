//! Who may see and do what: with SASL/PLAIN users, ACLs and Basic authentication, a viewer
//! sees only what its ACLs allow, gets the same refusal page for what it may not see, and its
//! actions are refused and change nothing while an admin's succeed; and a read-only console
//! shows no action form on any page and refuses every action.

use std::io::{Read, Write};
use std::net::TcpStream;

use rdkafka::admin::{AdminClient, ResourceSpecifier};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::CommitMode;
use skiff_e2e::acl::{self, ALL, CLUSTER, DESCRIBE, GROUP, READ, TOPIC};

use super::tour::{assert_reached, crawl, MAX_PAGES};
use crate::console_support::*;

const VIEWER: (&str, &str) = ("viewer", "viewer-secret");
const ADMIN: (&str, &str) = ("admin", "admin-secret");

/// A client config for `bootstrap` (the super user's PLAINTEXT listener).
fn config(bootstrap: &str, extra: &[(&str, &str)]) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("socket.timeout.ms", "10000")
        .set("message.timeout.ms", "10000");
    for (k, v) in extra {
        c.set(*k, *v);
    }
    c
}

/// Commits `offsets` (partition, offset) of `topic` for `group` with librdkafka (manual
/// assignment: the group has no member and is Empty).
fn commit(bootstrap: &str, group: &str, topic: &str, offsets: &[(i32, i64)]) -> Result<()> {
    let c: BaseConsumer = config(bootstrap, &[("group.id", group)]).create()?;
    let mut tpl = TopicPartitionList::new();
    for (p, o) in offsets {
        tpl.add_partition_offset(topic, *p, Offset::Offset(*o))?;
    }
    c.commit(&tpl, CommitMode::Sync)?;
    Ok(())
}

/// The committed offsets of `group` on `topic`'s `partitions`, as librdkafka reads them.
fn committed(bootstrap: &str, group: &str, topic: &str, partitions: i32) -> Result<Vec<i64>> {
    let c: BaseConsumer = config(bootstrap, &[("group.id", group)]).create()?;
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition(topic, p);
    }
    let got = c.committed_offsets(tpl, OP_TIMEOUT)?;
    Ok((0..partitions)
        .map(|p| match got.find_partition(topic, p).map(|e| e.offset()) {
            Some(Offset::Offset(o)) => o,
            _ => -1,
        })
        .collect())
}

/// The high watermarks of `topic`'s `partitions`.
fn highs(bootstrap: &str, topic: &str, partitions: i32) -> Result<Vec<i64>> {
    let c: BaseConsumer = config(bootstrap, &[("group.id", "access-watermarks")]).create()?;
    (0..partitions)
        .map(|p| Ok(c.fetch_watermarks(topic, p, OP_TIMEOUT)?.1))
        .collect()
}

/// The topic names the cluster's metadata lists.
fn topic_names(bootstrap: &str) -> Result<Vec<String>> {
    let c: BaseConsumer = config(bootstrap, &[("group.id", "access-metadata")]).create()?;
    let md = c.fetch_metadata(None, OP_TIMEOUT)?;
    Ok(md.topics().iter().map(|t| t.name().to_string()).collect())
}

/// A topic config's value as DescribeConfigs reports it.
async fn config_value(
    admin: &AdminClient<DefaultClientContext>,
    topic: &str,
    key: &str,
) -> Result<Option<String>> {
    let r = admin
        .describe_configs([&ResourceSpecifier::Topic(topic)], &common::admin_opts())
        .await?;
    let resource = r
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no DescribeConfigs result"))??;
    Ok(resource.get(key).and_then(|e| e.value.clone()))
}

/// A console form POST as a same-origin page would send it (`Origin` = the `Host`), with an
/// optional `Authorization`; returns the status and the body.
fn post_form(
    http: &str,
    path: &str,
    fields: &[(&str, &str)],
    auth: Option<(&str, &str)>,
) -> Result<(u16, String)> {
    use base64::Engine;
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}={}", form_escape(k), form_escape(v)))
        .collect();
    let body = body.join("&");
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {http}\r\nOrigin: http://{http}\r\nConnection: close\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some((u, p)) = auth {
        let creds = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
        head.push_str(&format!("Authorization: Basic {creds}\r\n"));
    }
    head.push_str("\r\n");
    let mut s = TcpStream::connect(http)?;
    s.set_read_timeout(Some(T))?;
    s.write_all(head.as_bytes())?;
    s.write_all(body.as_bytes())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let status = raw
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no status in {raw:?}"))?;
    Ok((status, raw))
}

fn form_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            b' ' => "+".to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The console paths the links of the current page lead to.
async fn links(browser: &Browser) -> Result<Vec<String>> {
    let v = browser
        .client
        .execute(
            "return Array.from(document.querySelectorAll('main a[href]')).map(a => a.getAttribute('href'))",
            vec![],
        )
        .await?;
    Ok(serde_json::from_value(v)?)
}

/// The refusal shown now: the heading and the alert's text.
async fn refusal(browser: &Browser) -> Result<(String, String)> {
    Ok((
        browser.text("h1").await?,
        browser.text("main [role=alert]").await?,
    ))
}

/// Submits the form `form` of the page `path`, shown to the admin, as the viewer (a form
/// left open in a tab when the user changed; the server decides again) and returns the
/// refusal shown.
async fn submit_as_viewer(
    browser: &Browser,
    path: &str,
    form: &str,
    fields: &[(&str, &str)],
) -> Result<(String, String)> {
    browser.login(Some(ADMIN)).await?;
    browser.open(path).await?;
    for (name, value) in fields {
        browser.fill(form, name, value).await?;
    }
    browser.login(Some(VIEWER)).await?;
    browser.submit(form).await?;
    check_refusal_page(browser, &format!("the viewer's {form} on {path}")).await?;
    refusal(browser).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_sees_and_does_only_what_its_acls_allow() -> Result<()> {
    let started = std::time::Instant::now();
    let plain = format!("127.0.0.1:{}", free_port()?);
    let sasl = format!("127.0.0.1:{}", free_port()?);
    let http = format!("127.0.0.1:{}", free_port()?);
    let listeners = format!("PLAINTEXT://{plain},SASL_PLAINTEXT://{sasl}");
    // PLAINTEXT callers are User:ANONYMOUS, the super user that sets things up and checks;
    // viewer and admin log in with SASL/PLAIN on Kafka and with Basic over HTTP.
    let _b = Broker::start_opts(
        skiff_e2e::Options::new()
            .set("listeners", &listeners)
            .set(
                "authorizer.class.name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            )
            .set("super.users", "User:ANONYMOUS")
            .set(
                "listener.name.sasl_plaintext.sasl.enabled.mechanisms",
                "PLAIN",
            )
            .set(
                "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required \
                 user_viewer=\"viewer-secret\" user_admin=\"admin-secret\";",
            )
            .set("skiff.http.listener", &http)
            .set("skiff.http.authentication", "basic")
            .set("connection.failed.authentication.delay.ms", "0")
            .ready(skiff_e2e::Ready::LogLine("skiff is ready".into())),
    )?;
    let su: AdminClient<DefaultClientContext> = config(&plain, &[]).create()?;
    let topic_a = unique_topic("console-access-a");
    let topic_b = unique_topic("console-access-b");
    for t in [&topic_a, &topic_b] {
        create_topic(&su, t, 2, &[]).await?;
    }
    let p: FutureProducer = config(&plain, &[("linger.ms", "5")]).create()?;
    for t in [&topic_a, &topic_b] {
        for i in 0..20 {
            let key = format!("k{i}");
            p.send(FutureRecord::to(t).key(&key).payload("v"), T)
                .await
                .map_err(|(e, _)| e)?;
        }
    }
    let group_a = format!("{topic_a}-group");
    let group_b = format!("{topic_b}-group");
    commit(&plain, &group_a, &topic_a, &[(0, 1), (1, 2)])?;
    commit(&plain, &group_b, &topic_b, &[(0, 3), (1, 4)])?;

    acl::create(
        &plain,
        vec![
            acl::allow(TOPIC, &topic_a, "User:viewer", DESCRIBE),
            acl::allow(TOPIC, &topic_a, "User:viewer", READ),
            acl::allow(GROUP, &group_a, "User:viewer", DESCRIBE),
            acl::allow(GROUP, &group_a, "User:viewer", READ),
            acl::allow(CLUSTER, "kafka-cluster", "User:admin", ALL),
            acl::allow(TOPIC, "*", "User:admin", ALL),
            acl::allow(GROUP, "*", "User:admin", ALL),
        ],
    )?;

    // No credentials, or a wrong password: 401 with the challenge, on pages and actions.
    for (method, path) in [
        ("GET", "/console"),
        ("GET", "/console/topics"),
        ("POST", "/console/topics"),
    ] {
        let r = common::http::request(&http, method, path, None)?;
        assert_eq!(r.status, 401, "{method} {path}: {}", r.body);
        assert!(
            r.header("www-authenticate")
                .is_some_and(|h| h.starts_with("Basic")),
            "{:?}",
            r.headers
        );
    }
    let (status, _) = post_form(
        &http,
        "/console/topics",
        &[("name", "x")],
        Some(("viewer", "wrong")),
    )?;
    assert_eq!(status, 401);

    let browser = Browser::start(&http).await?;
    browser.login(Some(VIEWER)).await?;

    // The lists show what the viewer may describe, and nothing else.
    browser.open("/console/topics").await?;
    check_page(&browser, "the viewer's topics").await?;
    let l = links(&browser).await?;
    assert!(l.contains(&format!("/console/topics/{topic_a}")), "{l:?}");
    assert!(!l.iter().any(|h| h.contains(&topic_b)), "{l:?}");
    assert!(!browser.text("main").await?.contains(&topic_b));
    browser.open("/console/groups").await?;
    check_page(&browser, "the viewer's groups").await?;
    let l = links(&browser).await?;
    assert!(l.contains(&format!("/console/groups/{group_a}")), "{l:?}");
    assert!(!browser.text("main").await?.contains(&group_b));

    // Topic A's page: no config or delete form; its messages: no produce form.
    browser.open(&format!("/console/topics/{topic_a}")).await?;
    check_page(&browser, "the viewer's topic A").await?;
    assert!(browser
        .find_all("#alter-config, #delete-topic")
        .await?
        .is_empty());
    browser
        .open(&format!("/console/topics/{topic_a}/messages"))
        .await?;
    check_page(&browser, "the viewer's messages of A").await?;
    assert!(browser.find_all("#produce").await?.is_empty());
    let rows = browser.table("#messages").await?;
    assert!(!rows.is_empty(), "the viewer reads topic A: {rows:?}");

    // Topic B's page and messages: the same refusal as a topic that does not exist (Kafka:
    // an unauthorized topic must not be told apart from a missing one).
    let missing = format!("/console/topics/{topic_b}-nope");
    browser.open(&missing).await?;
    check_refusal_page(&browser, &missing).await?;
    let denied = refusal(&browser).await?;
    assert_eq!(denied.0, "403 Forbidden", "{denied:?}");
    assert!(denied.1.contains("not authorized"), "{denied:?}");
    assert!(!denied.1.contains(&topic_b), "{denied:?}");
    for path in [
        format!("/console/topics/{topic_b}"),
        format!("/console/topics/{topic_b}/messages"),
        format!("/console/topics/{topic_b}/compaction"),
    ] {
        browser.open(&path).await?;
        check_refusal_page(&browser, &path).await?;
        assert_eq!(refusal(&browser).await?, denied, "{path}");
        let auth = {
            use base64::Engine;
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("viewer:viewer-secret")
            )
        };
        let r = common::http::request(&http, "GET", &path, Some(&auth))?;
        assert_eq!(r.status, 403, "{path}");
    }
    browser.open(&format!("/console/topics/{topic_b}")).await?;
    check_refusal_page(&browser, "topic B again").await?;
    browser.screenshot("access-denied").await?;
    // Group B: the group refusal, the same as for a group that does not exist.
    browser.open(&format!("/console/groups/{group_b}")).await?;
    check_refusal_page(&browser, "the viewer's group B").await?;
    let group_denied = refusal(&browser).await?;
    assert_eq!(group_denied.0, "403 Forbidden", "{group_denied:?}");
    assert!(
        group_denied.1.contains("AUTHORIZATION_FAILED"),
        "{group_denied:?}"
    );
    browser
        .open(&format!("/console/groups/{group_b}-nope"))
        .await?;
    check_refusal_page(&browser, "a missing group").await?;
    // The same refusal, naming the group asked for (as Kafka's error does).
    let (h1, msg) = refusal(&browser).await?;
    assert_eq!(
        (h1, msg.replace(&format!("{group_b}-nope"), &group_b)),
        group_denied
    );

    // The viewer's actions: refused with the Kafka error shown, and nothing changes.
    let highs_before = highs(&plain, &topic_a, 2)?;
    let made = unique_topic("console-access-viewer-made");
    browser.open("/console/topics").await?;
    browser.fill("#create-topic", "name", &made).await?;
    browser.submit("#create-topic").await?;
    check_refusal_page(&browser, "the viewer's create").await?;
    let (h1, msg) = refusal(&browser).await?;
    assert_eq!(h1, "403 Forbidden", "{msg}");
    assert!(msg.contains("AUTHORIZATION_FAILED"), "{msg}");
    let (h1, msg) = submit_as_viewer(
        &browser,
        &format!("/console/topics/{topic_a}"),
        "#alter-config",
        &[("key", "retention.ms"), ("value", "1234")],
    )
    .await?;
    assert!(h1.starts_with("403"), "{h1}: {msg}");
    assert!(msg.contains("AUTHORIZATION_FAILED"), "{msg}");
    let (h1, msg) = submit_as_viewer(
        &browser,
        &format!("/console/topics/{topic_a}/messages"),
        "#produce",
        &[("key", "from-viewer"), ("value", "refused")],
    )
    .await?;
    assert!(h1.starts_with("403"), "{h1}: {msg}");
    assert!(msg.contains("TOPIC_AUTHORIZATION_FAILED"), "{msg}");
    let (h1, msg) = submit_as_viewer(
        &browser,
        &format!("/console/groups/{group_b}"),
        "#reset-offsets",
        &[("to", "latest")],
    )
    .await?;
    assert!(h1.starts_with("403"), "{h1}: {msg}");
    assert!(msg.contains("AUTHORIZATION_FAILED"), "{msg}");
    let (h1, msg) = submit_as_viewer(
        &browser,
        &format!("/console/topics/{topic_a}"),
        "#delete-topic",
        &[],
    )
    .await?;
    assert!(h1.starts_with("403"), "{h1}: {msg}");
    assert!(msg.contains("AUTHORIZATION_FAILED"), "{msg}");
    let names = topic_names(&plain)?;
    assert!(names.contains(&topic_a), "{names:?}");
    assert!(!names.contains(&made), "{names:?}");
    assert_ne!(
        config_value(&su, &topic_a, "retention.ms")
            .await?
            .as_deref(),
        Some("1234")
    );
    assert_eq!(highs(&plain, &topic_a, 2)?, highs_before);
    assert_eq!(committed(&plain, &group_b, &topic_b, 2)?, vec![3, 4]);

    // The admin may do all of it.
    browser.login(Some(ADMIN)).await?;
    let made = unique_topic("console-access-admin-made");
    browser.open("/console/topics").await?;
    browser.fill("#create-topic", "name", &made).await?;
    browser.fill("#create-topic", "partitions", "3").await?;
    browser.submit("#create-topic").await?;
    assert_eq!(
        browser.path().await?.split('?').next(),
        Some(format!("/console/topics/{made}").as_str())
    );
    check_page(&browser, "the admin's new topic").await?;
    assert!(browser.text("[role=status]").await?.contains(&made));
    assert!(topic_names(&plain)?.contains(&made));

    browser.fill("#alter-config", "key", "retention.ms").await?;
    browser.fill("#alter-config", "value", "4321").await?;
    browser.submit("#alter-config").await?;
    check_page(&browser, "the admin's config change").await?;
    assert_eq!(
        config_value(&su, &made, "retention.ms").await?.as_deref(),
        Some("4321")
    );

    browser
        .open(&format!("/console/topics/{topic_a}/messages"))
        .await?;
    browser.fill("#produce", "partition", "1").await?;
    browser.fill("#produce", "key", "from-admin").await?;
    browser.fill("#produce", "value", "accepted").await?;
    browser.submit("#produce").await?;
    check_page(&browser, "the admin's produce").await?;
    assert_eq!(
        highs(&plain, &topic_a, 2)?,
        vec![highs_before[0], highs_before[1] + 1]
    );

    browser.open(&format!("/console/groups/{group_b}")).await?;
    browser.fill("#reset-offsets", "to", "latest").await?;
    browser.submit("#reset-offsets").await?;
    check_page(&browser, "the admin's reset").await?;
    assert_eq!(
        committed(&plain, &group_b, &topic_b, 2)?,
        highs(&plain, &topic_b, 2)?
    );

    browser.open(&format!("/console/topics/{made}")).await?;
    browser.submit("#delete-topic").await?;
    check_page(&browser, "the admin's delete").await?;
    assert_eq!(
        browser.path().await?.split('?').next(),
        Some("/console/topics")
    );
    let deadline = std::time::Instant::now() + T;
    while topic_names(&plain)?.contains(&made) {
        anyhow::ensure!(std::time::Instant::now() < deadline, "{made} still listed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("access with ACLs: {:?}", started.elapsed());
    browser.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_console_shows_no_form_and_refuses_every_action() -> Result<()> {
    let started = std::time::Instant::now();
    let (b, http) = start(&[("skiff.console.read.only", "true")]);
    let plain = unique_topic("console-ro-plain");
    let table = unique_topic("console-ro-table");
    let su = admin(&b)?;
    create_topic(&su, &plain, 2, &[]).await?;
    create_topic(&su, &table, 1, &[("cleanup.policy", "compact")]).await?;
    write(&b, &plain, 40, 8).await;
    write(&b, &table, 40, 4).await;
    let group = format!("{plain}-group");
    commit(&b.bootstrap(), &group, &plain, &[(0, 2), (1, 5)])?;

    let browser = Browser::start(&http).await?;
    let visits = crawl(&browser, "/console", MAX_PAGES).await?;
    let with_forms: Vec<&str> = visits
        .iter()
        .filter(|v| v.post_forms > 0)
        .map(|v| v.path.as_str())
        .collect();
    assert!(
        with_forms.is_empty(),
        "pages with a POST form: {with_forms:?}"
    );
    let visited: Vec<String> = visits.into_iter().map(|v| v.path).collect();
    assert_reached(&visited, &plain, &table, &group)?;
    assert!(browser.text("header").await?.contains("read-only"));
    browser.close().await?;

    // Every action, sent as a same-origin form would be: 403, and nothing changes.
    let highs_before = highs(&b.bootstrap(), &plain, 2)?;
    let made = unique_topic("console-ro-made");
    for (path, fields) in [
        (
            "/console/topics".to_string(),
            vec![("name", made.as_str()), ("partitions", "1")],
        ),
        (
            format!("/console/topics/{plain}/config"),
            vec![("key", "retention.ms"), ("value", "1234"), ("op", "set")],
        ),
        (
            format!("/console/topics/{plain}/produce"),
            vec![("key", "k"), ("value", "v")],
        ),
        (
            format!("/console/groups/{group}/reset"),
            vec![("to", "latest")],
        ),
        (format!("/console/topics/{table}/compaction"), vec![]),
        (format!("/console/topics/{plain}/delete"), vec![]),
    ] {
        let (status, body) = post_form(&http, &path, &fields, None)?;
        assert_eq!(status, 403, "{path}: {body}");
        assert!(body.contains("read-only"), "{path}: {body}");
    }
    let names = topic_names(&b.bootstrap())?;
    assert!(
        names.contains(&plain) && !names.contains(&made),
        "{names:?}"
    );
    assert_ne!(
        config_value(&su, &plain, "retention.ms").await?.as_deref(),
        Some("1234")
    );
    assert_eq!(highs(&b.bootstrap(), &plain, 2)?, highs_before);
    assert_eq!(committed(&b.bootstrap(), &group, &plain, 2)?, vec![2, 5]);
    eprintln!("read-only: {:?}", started.elapsed());
    Ok(())
}
