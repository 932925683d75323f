//! The consumer groups pages: the list and a group's page show the member a librdkafka
//! consumer is, and the committed offsets, log end offsets and lag librdkafka reports for the
//! same group; the reset offsets form is refused while the consumer runs and, once it has
//! left, moves the committed offsets to the earliest and the latest offsets librdkafka sees.

use std::time::Instant;

use rdkafka::consumer::CommitMode;
use rdkafka::message::Message;

use crate::common::groups::{group_consumer, Counting, BROKER_PROPS};
use crate::console_support::*;

/// Records written to partitions 0 and 1, and how many of each the consumer processes and
/// commits before the pages are read.
const WRITTEN: [usize; 2] = [30, 20];
const CONSUMED: [i64; 2] = [12, 7];

/// A broker, a 2-partition topic holding [`WRITTEN`] records (partition 0 with its first
/// `delete_below` records deleted) and a librdkafka group member of `group` that has
/// processed and committed the first [`CONSUMED`] records of each partition. The member is
/// still in the group (Stable) when this returns.
async fn group_with_member(
    client_id: &str,
) -> Result<(Broker, String, String, String, BaseConsumer<Counting>)> {
    let (b, http) = start(BROKER_PROPS);
    let topic = unique_topic("console-groups");
    let group = unique_topic("console-group");
    create_topic(&admin(&b)?, &topic, 2, &[]).await?;
    let p = producer(&b, &[])?;
    for (partition, n) in WRITTEN.iter().enumerate() {
        common::produce_n(&p, &topic, partition as i32, *n, |i| {
            (
                format!("k{i}").into_bytes(),
                format!("p{partition}-v{i}").into_bytes(),
            )
        })
        .await?;
    }
    let c = group_consumer(&b, &group, &[("client.id", client_id)])?;
    c.subscribe(&[&topic])?;
    // Process records below CONSUMED only (more are fetched: they are not processed).
    let mut processed = [0i64; 2];
    let deadline = Instant::now() + T;
    while processed != CONSUMED {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the group consumer processed only {processed:?} of {CONSUMED:?}"
        );
        match c.poll(Duration::from_millis(200)) {
            None => {}
            Some(Err(e)) => anyhow::bail!("group consumer: {e}"),
            Some(Ok(m)) => {
                let p = m.partition() as usize;
                if m.offset() == processed[p] && processed[p] < CONSUMED[p] {
                    processed[p] += 1;
                }
            }
        }
    }
    let mut tpl = TopicPartitionList::new();
    for (partition, offset) in processed.iter().enumerate() {
        tpl.add_partition_offset(&topic, partition as i32, Offset::Offset(*offset))?;
    }
    c.commit(&tpl, CommitMode::Sync)?;
    Ok((b, http, topic, group, c))
}

/// The committed offsets of `group` on partitions 0 and 1 of `topic`, as librdkafka's
/// OffsetFetch (`committed_offsets`) reports them.
fn committed(b: &Broker, group: &str, topic: &str) -> Result<Vec<i64>> {
    let c: BaseConsumer = consumer(b, &[("group.id", group)])?;
    let mut tpl = TopicPartitionList::new();
    for p in 0..2 {
        tpl.add_partition(topic, p);
    }
    let got = c.committed_offsets(tpl, OP_TIMEOUT)?;
    (0..2)
        .map(|p| match got.find_partition(topic, p).map(|e| e.offset()) {
            Some(Offset::Offset(o)) => Ok(o),
            other => anyhow::bail!("{group} {topic}-{p}: committed {other:?}"),
        })
        .collect()
}

/// A count as the console prints it (`1,234`) back to a number.
fn num(cell: &str) -> Result<i64> {
    cell.replace(',', "")
        .parse()
        .map_err(|e| anyhow::anyhow!("{cell:?} is not a count: {e}"))
}

/// The `<dt>`/`<dd>` pairs of the summary cards.
async fn cards(browser: &Browser) -> Result<Vec<(String, String)>> {
    let v = browser
        .client
        .execute(
            "return Array.from(document.querySelectorAll('#group-summary > div')).map(
                 d => [d.querySelector('dt').innerText.trim(), d.querySelector('dd').innerText.trim()]);",
            vec![],
        )
        .await?;
    Ok(serde_json::from_value(v)?)
}

async fn card(browser: &Browser, name: &str) -> Result<String> {
    cards(browser)
        .await?
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
        .ok_or_else(|| anyhow::anyhow!("no {name} card"))
}

/// Checks the `#offsets` table against librdkafka: one row per partition whose committed
/// offset, log end offset and lag are what `committed_offsets` and the watermarks say.
/// Returns the total lag.
async fn offsets_match(browser: &Browser, b: &Broker, group: &str, topic: &str) -> Result<i64> {
    let committed = committed(b, group, topic)?;
    let mut rows = browser.table("#offsets").await?;
    rows.sort();
    anyhow::ensure!(rows.len() == 2, "{rows:?}");
    let mut total = 0;
    for (p, row) in rows.iter().enumerate() {
        let (_, high) = watermarks(b, topic, p as i32);
        let lag = high - committed[p];
        total += lag;
        assert_eq!(row[0], topic, "{row:?}");
        assert_eq!(row[1], p.to_string(), "{row:?}");
        assert_eq!(
            num(&row[2])?,
            committed[p],
            "committed offset of {p}: {row:?}"
        );
        assert_eq!(num(&row[3])?, high, "log end offset of {p}: {row:?}");
        assert_eq!(num(&row[4])?, lag, "lag of {p}: {row:?}");
    }
    Ok(total)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_pages_show_the_member_and_the_offsets_librdkafka_reports() -> Result<()> {
    let (b, http, topic, group, c) = group_with_member("console-groups-case").await?;
    assert_eq!(committed(&b, &group, &topic)?, CONSUMED.to_vec());
    let lag: i64 = (0..2)
        .map(|p| watermarks(&b, &topic, p).1 - CONSUMED[p as usize])
        .sum();
    assert_eq!(lag, (30 - 12) + (20 - 7));

    let browser = Browser::start(&http).await?;
    browser.open("/console/groups").await?;
    assert_eq!(browser.text("h1").await?, "Consumer groups");
    let rows = browser.table("#groups").await?;
    let row = rows
        .iter()
        .find(|r| r[0] == group)
        .ok_or_else(|| anyhow::anyhow!("{group} not listed: {rows:?}"))?;
    assert_eq!(
        row[1..],
        [
            "classic".to_string(),
            "consumer".into(),
            "Stable".into(),
            "1".into(),
            lag.to_string()
        ],
        "{row:?}"
    );
    check_page(&browser, "groups").await?;
    browser.screenshot("groups").await?;

    // The group's page, reached by its link.
    browser
        .find(&format!("#groups a[href=\"/console/groups/{group}\"]"))
        .await?
        .click()
        .await?;
    browser.wait_loaded().await?;
    assert_eq!(browser.path().await?, format!("/console/groups/{group}"));
    assert_eq!(browser.text("h1").await?, format!("Consumer group {group}"));
    assert_eq!(card(&browser, "State").await?, "Stable");
    assert_eq!(card(&browser, "Members").await?, "1");
    assert_eq!(card(&browser, "Protocol type").await?, "consumer");
    assert_eq!(num(&card(&browser, "Total lag").await?)?, lag);
    let members = browser.table("#members").await?;
    assert_eq!(members.len(), 1, "{members:?}");
    let m = &members[0];
    assert!(!m[0].is_empty(), "{m:?}");
    assert_eq!(
        m[2..],
        [
            "console-groups-case".to_string(),
            "/127.0.0.1".into(),
            format!("{topic}: 0, 1")
        ],
        "{m:?}"
    );
    assert_eq!(offsets_match(&browser, &b, &group, &topic).await?, lag);
    check_page(&browser, "group").await?;
    browser.screenshot("group").await?;
    drop(c);
    browser.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_offsets_is_refused_while_the_consumer_runs_then_moves_them() -> Result<()> {
    let (b, http, topic, group, c) = group_with_member("console-reset-case").await?;
    let page = format!("/console/groups/{group}");
    let browser = Browser::start(&http).await?;
    browser.open(&page).await?;
    assert_eq!(card(&browser, "State").await?, "Stable");
    check_page(&browser, "group with a member").await?;

    // Running: the form says a reset will be refused, and it is, visibly; nothing changes.
    let note = browser.text("#main").await?;
    assert!(note.contains("A reset will be refused."), "{note}");
    browser.fill("#reset-offsets", "to", "earliest").await?;
    browser.submit("#reset-offsets").await?;
    assert_eq!(browser.text("h1").await?, "409 Conflict");
    let error = browser.text("p.error[role=alert]").await?;
    assert!(error.contains("is Stable"), "{error}");
    assert!(error.contains("Nothing was changed."), "{error}");
    // The only browser console entry is the refused POST's status.
    let errors = browser.console_errors().await?;
    assert!(errors.iter().all(|e| e.contains("409")), "{errors:#?}");
    check_page(&browser, "refused reset").await?;
    assert_eq!(committed(&b, &group, &topic)?, CONSUMED.to_vec());

    // The consumer leaves: the group is Empty (the page says so once the coordinator has
    // removed the member).
    c.unsubscribe();
    drop(c);
    let deadline = Instant::now() + T;
    loop {
        browser.open(&page).await?;
        let state = card(&browser, "State").await?;
        if state == "Empty" {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the group is still {state} after its consumer left"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        browser.table("#members").await?,
        vec![vec!["None.".to_string()]]
    );

    // Records below 5 of partition 0 are deleted: its earliest offset is 5, not 0.
    let mut below = TopicPartitionList::new();
    below.add_partition_offset(&topic, 0, Offset::Offset(5))?;
    admin(&b)?
        .delete_records(&below, &common::admin_opts())
        .await?;
    let low: Vec<i64> = (0..2).map(|p| watermarks(&b, &topic, p).0).collect();
    let high: Vec<i64> = (0..2).map(|p| watermarks(&b, &topic, p).1).collect();
    assert_eq!((low.clone(), high.clone()), (vec![5, 0], vec![30, 20]));

    // To the earliest offsets, every topic.
    browser.open(&page).await?;
    assert!(!browser
        .text("#main")
        .await?
        .contains("A reset will be refused."));
    check_page(&browser, "empty group").await?;
    browser.fill("#reset-offsets", "to", "earliest").await?;
    browser.fill("#reset-offsets", "topic", "").await?;
    browser.submit("#reset-offsets").await?;
    assert!(
        browser.path().await?.starts_with(&format!("{page}?done=")),
        "{}",
        browser.path().await?
    );
    assert_eq!(
        browser.text("p.notice").await?,
        format!("Reset 2 partitions of consumer group {group} to the earliest offset.")
    );
    assert_eq!(committed(&b, &group, &topic)?, low);
    let lag = offsets_match(&browser, &b, &group, &topic).await?;
    assert_eq!(lag, (30 - 5) + 20);
    assert_eq!(num(&card(&browser, "Total lag").await?)?, lag);
    check_page(&browser, "group after reset").await?;

    // To the latest offsets, the one topic chosen.
    browser.fill("#reset-offsets", "to", "latest").await?;
    browser.fill("#reset-offsets", "topic", &topic).await?;
    browser.submit("#reset-offsets").await?;
    assert_eq!(
        browser.text("p.notice").await?,
        format!("Reset 2 partitions of consumer group {group} to the latest offset.")
    );
    assert_eq!(committed(&b, &group, &topic)?, high);
    assert_eq!(offsets_match(&browser, &b, &group, &topic).await?, 0);
    browser.open("/console/groups").await?;
    let rows = browser.table("#groups").await?;
    let row = rows
        .iter()
        .find(|r| r[0] == group)
        .ok_or_else(|| anyhow::anyhow!("{group} not listed: {rows:?}"))?;
    assert_eq!(
        row[3..],
        ["Empty".to_string(), "0".into(), "0".into()],
        "{row:?}"
    );
    check_page(&browser, "groups after reset").await?;
    browser.close().await
}
