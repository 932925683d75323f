//! The Topics pages: the list and a topic's page show the partition counts, record counts
//! and offsets librdkafka reports for the same topic; the create, config and delete forms
//! change what the Kafka API reports.

use rdkafka::admin::{ConfigSource, ResourceSpecifier};
use skiff_e2e::raw::RawClient;

use crate::console_support::*;

/// A figure as the console prints it (`1,234`) as a number.
fn figure(cell: &str) -> i64 {
    cell.replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("{cell:?} is not a figure"))
}

/// The row of `table` whose first cell is `first` (or starts with it and a space, as a
/// topic with a badge).
fn row_of(table: &[Vec<String>], first: &str) -> Option<Vec<String>> {
    table
        .iter()
        .find(|r| {
            r.first()
                .is_some_and(|c| c == first || c.starts_with(&format!("{first} ")))
        })
        .cloned()
}

/// The topic's config `name` as DescribeConfigs reports it to librdkafka: its value, and
/// whether it is set on the topic (source DYNAMIC_TOPIC_CONFIG).
async fn described(b: &Broker, topic: &str, name: &str) -> Result<(Option<String>, bool)> {
    let res = admin(b)?
        .describe_configs([&ResourceSpecifier::Topic(topic)], &common::admin_opts())
        .await?;
    let cfg = res
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("DescribeConfigs answered nothing"))?
        .map_err(|e| anyhow::anyhow!("DescribeConfigs {topic}: {e}"))?;
    let entry = cfg
        .get(name)
        .ok_or_else(|| anyhow::anyhow!("{topic}: {name} not described"))?;
    Ok((
        entry.value.clone(),
        entry.source == ConfigSource::DynamicTopic,
    ))
}

/// The topic names in librdkafka's metadata of all topics.
fn topic_names(b: &Broker) -> Result<Vec<String>> {
    let c: BaseConsumer = consumer(b, &[])?;
    let md = c.fetch_metadata(None, OP_TIMEOUT)?;
    Ok(md.topics().iter().map(|t| t.name().to_string()).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_and_a_topic_show_the_offsets_librdkafka_sees() -> Result<()> {
    let (b, http) = start(&[]);
    let topic = unique_topic("console-topics");
    create_topic(&admin(&b)?, &topic, 3, &[]).await?;
    write(&b, &topic, 240, 24).await;
    // Partition 1 starts later than 0: records are end minus log start offsets, and the
    // page must show the start offset, not 0.
    let (low1, high1) = watermarks(&b, &topic, 1);
    anyhow::ensure!(high1 - low1 >= 4, "partition 1 got {low1}..{high1}");
    let (code, start) = RawClient::connect(&b.bootstrap())?.delete_records(&topic, 1, low1 + 3)?;
    anyhow::ensure!(
        code == 0 && start == low1 + 3,
        "DeleteRecords: {code}, {start}"
    );
    let marks: Vec<(i64, i64)> = (0..3).map(|p| watermarks(&b, &topic, p)).collect();
    assert_eq!(marks[1].0, low1 + 3, "librdkafka sees the new log start");
    let records: i64 = marks.iter().map(|(lo, hi)| hi - lo).sum();
    assert_eq!(records, 237);

    let browser = Browser::start(&http).await?;
    browser.open("/console/topics").await?;
    assert_eq!(browser.text("h1").await?, "Topics");
    let list = browser.table("#topics").await?;
    let cells = row_of(&list, &topic).ok_or_else(|| anyhow::anyhow!("{topic} not in {list:?}"))?;
    assert_eq!(figure(&cells[1]), 3, "partitions: {cells:?}");
    assert_eq!(figure(&cells[2]), records, "records: {cells:?}");
    assert_eq!(cells[5], "delete", "cleanup.policy: {cells:?}");
    // The topic links to its page.
    let link = browser
        .find(&format!("#topics a[href=\"/console/topics/{topic}\"]"))
        .await?;
    check_page(&browser, "topics").await?;
    browser.screenshot("topics").await?;

    link.click().await?;
    browser.wait_loaded().await?;
    assert_eq!(browser.path().await?, format!("/console/topics/{topic}"));
    assert_eq!(browser.text("h1").await?, format!("Topic {topic}"));
    let parts = browser.table("#partitions").await?;
    assert_eq!(parts.len(), 3, "{parts:?}");
    for (p, (lo, hi)) in marks.iter().enumerate() {
        let cells = &parts[p];
        assert_eq!(figure(&cells[0]), p as i64, "{parts:?}");
        assert_eq!(
            (figure(&cells[1]), figure(&cells[2])),
            (*lo, *hi),
            "partition {p}: the page's offsets are not librdkafka's watermarks: {cells:?}"
        );
    }
    let summary = browser.text("#topic-summary").await?;
    assert!(
        summary.contains(&format!("Records\n{records}")),
        "{summary:?}"
    );
    assert!(summary.contains("Partitions\n3"), "{summary:?}");
    check_page(&browser, "topic").await?;
    browser.screenshot("topic").await?;
    browser.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_alter_and_delete_a_topic_with_the_forms() -> Result<()> {
    let (b, http) = start(&[]);
    let topic = unique_topic("console-made");

    let browser = Browser::start(&http).await?;
    browser.open("/console/topics").await?;
    check_page(&browser, "topics").await?;
    browser.fill("#create-topic", "name", &topic).await?;
    browser.fill("#create-topic", "partitions", "4").await?;
    browser
        .fill("#create-topic", "cleanup.policy", "compact")
        .await?;
    browser.submit("#create-topic").await?;
    let path = browser.path().await?;
    assert!(
        path.starts_with(&format!("/console/topics/{topic}?done=")),
        "{path}"
    );
    assert!(
        browser
            .text(".notice")
            .await?
            .contains(&format!("Created topic {topic} with 4 partition(s)")),
        "the notice"
    );
    check_page(&browser, "topic").await?;
    // The Kafka API sees the topic as the form made it.
    let c: BaseConsumer = consumer(&b, &[])?;
    common::wait_topic_partitions(&c, &topic, 4)?;
    assert_eq!(
        described(&b, &topic, "cleanup.policy").await?,
        (Some("compact".to_string()), true)
    );
    let summary = browser.text("#topic-summary").await?;
    assert!(summary.contains("cleanup.policy\ncompact"), "{summary:?}");

    // Change retention.ms on the topic's page.
    let (before, _) = described(&b, &topic, "retention.ms").await?;
    assert_ne!(before.as_deref(), Some("3600000"));
    browser.fill("#alter-config", "key", "retention.ms").await?;
    browser.fill("#alter-config", "value", "3600000").await?;
    browser.fill("#alter-config", "op", "set").await?;
    browser.submit("#alter-config").await?;
    assert!(
        browser
            .text(".notice")
            .await?
            .contains("Set retention.ms=3600000"),
        "the notice"
    );
    assert_eq!(
        described(&b, &topic, "retention.ms").await?,
        (Some("3600000".to_string()), true)
    );
    let configs = browser.table("#configs").await?;
    let cells = row_of(&configs, "retention.ms")
        .ok_or_else(|| anyhow::anyhow!("no retention.ms in {configs:?}"))?;
    assert_eq!(cells[1], "3600000", "{cells:?}");
    check_page(&browser, "topic").await?;

    // Delete: dismissing the confirmation keeps the topic, accepting it deletes.
    browser
        .find("#delete-topic button[type=\"submit\"]")
        .await?
        .click()
        .await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        match browser.client.get_alert_text().await {
            Ok(text) => {
                assert!(text.contains(&format!("Delete topic {topic}")), "{text}");
                browser.client.dismiss_alert().await?;
                break;
            }
            Err(e) => anyhow::ensure!(
                std::time::Instant::now() < deadline,
                "no confirmation dialog: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        browser.path().await?.split('?').next(),
        Some(format!("/console/topics/{topic}").as_str())
    );
    assert!(topic_names(&b)?.contains(&topic), "dismissed, yet deleted");

    browser.submit("#delete-topic").await?;
    let path = browser.path().await?;
    assert!(path.starts_with("/console/topics?done="), "{path}");
    assert!(browser
        .text(".notice")
        .await?
        .contains(&format!("Deleted topic {topic}")));
    assert!(
        row_of(&browser.table("#topics").await?, &topic).is_none(),
        "still listed"
    );
    let deadline = std::time::Instant::now() + OP_TIMEOUT;
    while topic_names(&b)?.contains(&topic) {
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "{topic} is still in librdkafka's metadata"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    check_page(&browser, "topics").await?;
    browser.close().await
}
