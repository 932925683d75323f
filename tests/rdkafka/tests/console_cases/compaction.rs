//! The compaction pages: a compacted topic that librdkafka filled with many updates per key
//! (and a tombstone) is listed with its dirty figures, the dry run says what a pass would
//! remove (as the HTTP API's dry run does), compact now runs that pass and its ticket is
//! followed live; afterwards a librdkafka consumer reading from offset 0 sees fewer records
//! but the latest value of every key, and the key lookup shows the same latest values (the
//! tombstoned key as absent).

use std::collections::BTreeMap;
use std::time::Instant;

use rdkafka::message::Message;

use crate::console_support::*;

const KEYS: usize = 20;
const ROUNDS: usize = 30;
/// The key deleted with a tombstone after its updates.
const DELETED: &str = "key-7";

/// Writes ROUNDS updates of every key (in three waves, so the writes span several
/// `segment.ms` rolls), then a tombstone for [`DELETED`] and one more update of `key-0`.
/// Returns how many records were written and each key's latest value (None: tombstone).
async fn fill(b: &Broker, topic: &str) -> Result<(i64, BTreeMap<String, Option<String>>)> {
    let p: FutureProducer = producer(b, &[("linger.ms", "5")])?;
    let mut latest = BTreeMap::new();
    let mut written = 0;
    let mut send = |key: String, value: Option<String>| {
        let mut r = FutureRecord::<String, String>::to(topic).key(&key);
        if let Some(v) = &value {
            r = r.payload(v);
        }
        let d = p.send_result(r).map_err(|(e, _)| e);
        latest.insert(key, value);
        written += 1;
        d
    };
    for wave in 0..3 {
        let mut pending = Vec::new();
        for round in wave * ROUNDS / 3..(wave + 1) * ROUNDS / 3 {
            for k in 0..KEYS {
                pending.push(send(
                    format!("key-{k}"),
                    Some(format!("round {round} of key-{k}")),
                )?);
            }
        }
        for d in pending {
            d.await?.map_err(|(e, _)| e)?;
        }
        // Spread the waves over more than segment.ms: each lands in segments of its own.
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let tombstone = send(DELETED.to_string(), None)?;
    let last = send("key-0".to_string(), Some("the very last value".to_string()))?;
    tombstone.await?.map_err(|(e, _)| e)?;
    last.await?.map_err(|(e, _)| e)?;
    p.flush(T)?;
    Ok((written, latest))
}

/// Every record of partition 0 from offset 0 up to the high watermark, read by librdkafka:
/// (offset, key, value).
fn read_all(b: &Broker, topic: &str) -> Result<Vec<(i64, String, Option<String>)>> {
    let c: BaseConsumer = consumer(b, &[])?;
    let (_, high) = c.fetch_watermarks(topic, 0, OP_TIMEOUT)?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Offset(0))?;
    c.assign(&tpl)?;
    let mut out = Vec::new();
    let deadline = Instant::now() + T;
    while out
        .last()
        .is_none_or(|(o, _, _): &(i64, String, Option<String>)| *o < high - 1)
    {
        anyhow::ensure!(
            Instant::now() < deadline,
            "read {} records, up to offset {:?} of {high}",
            out.len(),
            out.last().map(|r| r.0)
        );
        match c.poll(Duration::from_millis(200)) {
            None => {}
            Some(Err(e)) => anyhow::bail!("consumer: {e}"),
            Some(Ok(m)) => out.push((
                m.offset(),
                String::from_utf8_lossy(m.key().unwrap_or_default()).into_owned(),
                m.payload().map(|v| String::from_utf8_lossy(v).into_owned()),
            )),
        }
    }
    Ok(out)
}

/// The text of `css`, or None when there is no such element now (no waiting).
async fn text_now(browser: &Browser, css: &str) -> Result<Option<String>> {
    match browser.find_all(css).await?.first() {
        Some(e) => Ok(Some(e.text().await?)),
        None => Ok(None),
    }
}

/// The `value` of the `<data>` element `css` (an exact byte count).
async fn data_value(browser: &Browser, css: &str) -> Result<u64> {
    let v = browser
        .find(css)
        .await?
        .attr("value")
        .await?
        .ok_or_else(|| anyhow::anyhow!("{css} has no value"))?;
    Ok(v.parse()?)
}

/// The first whole number in a cell (`612 active segment: …` → 612).
fn leading_number(cell: &str) -> Result<i64> {
    let digits: String = cell
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .map_err(|e| anyhow::anyhow!("no number at the start of {cell:?}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_pages_dry_run_compact_now_and_key_lookup() -> Result<()> {
    let (b, http) = start(&[]);
    let topic = unique_topic("console-compaction");
    // min.cleanable.dirty.ratio=1.0: the cleaner plans the partition but never cleans it by
    // itself (a dirty ratio is never above 1), so the pass is the one compact now asks for.
    create_topic(
        &admin(&b)?,
        &topic,
        1,
        &[
            ("cleanup.policy", "compact"),
            ("segment.bytes", "1048576"),
            ("segment.ms", "100"),
            ("min.cleanable.dirty.ratio", "1.0"),
            ("skiff.key.index.enable", "true"),
        ],
    )
    .await?;
    let (written, latest) = fill(&b, &topic).await?;
    let (low, high) = watermarks(&b, &topic, 0);
    assert_eq!((low, high), (0, written));
    // Each key's latest record stays (the tombstone too: delete.retention.ms is a day).
    let removable = written - KEYS as i64;

    // The topic's page, once the cleaner has planned the partition with every segment
    // rolled (Skiff rolls idle segments on the wall clock): all of it is cleanable.
    let browser = Browser::start(&http).await?;
    let page = format!("/console/topics/{topic}/compaction");
    let deadline = Instant::now() + T;
    loop {
        browser.open(&page).await?;
        let limit = text_now(&browser, "#p0-uncleanable").await?;
        if limit.as_deref() == Some(high.to_string().as_str()) {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "first uncleanable offset {limit:?}, not the high watermark {high}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(browser.text("h1").await?, format!("Compaction of {topic}"));
    assert_eq!(browser.text("#p0-first-dirty").await?, "0");
    // Nothing cleaned yet: every byte is dirty.
    assert_eq!(browser.text("#p0-dirty").await?, "100.0%");
    assert_eq!(data_value(&browser, "#p0-clean").await?, 0);
    let cleanable = data_value(&browser, "#p0-cleanable").await?;
    assert!(cleanable > 0);
    let cleanable_text = browser.text("#p0-cleanable").await?;
    let partitions = browser.table("#partitions").await?;
    assert!(
        partitions[0][6].contains("active segment"),
        "{partitions:?}"
    );
    check_page(&browser, "topic-compaction").await?;
    browser.screenshot("topic-compaction").await?;

    // The overview lists the partition with the same figures.
    browser.open("/console/compaction").await?;
    assert_eq!(browser.text("h1").await?, "Compaction");
    let rows = browser.table("#compaction").await?;
    let row = rows
        .iter()
        .find(|r| r[0] == topic)
        .ok_or_else(|| anyhow::anyhow!("{topic} not listed: {rows:?}"))?;
    assert_eq!(row[1], "0", "{row:?}");
    assert!(row[3].starts_with("100.0%"), "{row:?}");
    assert_eq!(row[4], cleanable_text, "{row:?}");
    assert_eq!(row[5], "none since the broker started", "{row:?}");
    assert_eq!(leading_number(&row[6])?, high, "{row:?}");
    check_page(&browser, "compaction").await?;
    browser.screenshot("compaction").await?;

    // The dry run, from the topic's page: what the HTTP API's dry run says, changing nothing.
    browser
        .find(&format!("#compaction a[href=\"{page}\"]"))
        .await?
        .click()
        .await?;
    browser.wait_loaded().await?;
    browser.fill("#dry-run", "partition", "").await?;
    browser.submit("#dry-run").await?;
    assert!(
        browser
            .path()
            .await?
            .starts_with(&format!("{page}/dry-run")),
        "{}",
        browser.path().await?
    );
    let api = common::http::get(&http, &format!("/v1/topics/{topic}/compaction/dry-run")).json();
    let api = api.get("partitions").at(0);
    let figures = api.get("figures");
    assert_eq!(figures.get("records_removed").as_i64(), Some(removable));
    assert_eq!(browser.text("#d0-removed").await?, removable.to_string());
    assert_eq!(
        browser.text("#d0-read").await?,
        figures.get("records_read").as_i64().unwrap().to_string()
    );
    assert_eq!(browser.text("#d0-read").await?, written.to_string());
    assert_eq!(browser.text("#d0-keys").await?, KEYS.to_string());
    assert_eq!(api.get("keys_in_dirty_range").as_i64(), Some(KEYS as i64));
    assert_eq!(browser.text("#d0-range").await?, format!("0 → {high}"));
    check_page(&browser, "dry run").await?;
    assert_eq!(read_all(&b, &topic)?.len() as i64, written);

    // Compact now: the ticket is followed on the page (its box reloads itself) until done.
    browser.open(&page).await?;
    browser.fill("#compact-now", "partition", "0").await?;
    browser.submit("#compact-now").await?;
    let path = browser.path().await?;
    let id: u64 = path
        .strip_prefix(&format!("{page}?tickets="))
        .and_then(|rest| rest.split('&').next())
        .and_then(|id| id.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no ticket in {path}"))?;
    let notice = browser.text("p.notice").await?;
    assert!(
        notice.contains(&format!("Compaction asked for partition 0 of {topic}")),
        "{notice}"
    );
    let state_css = format!("#ticket-{id}-state");
    let deadline = Instant::now() + T;
    loop {
        let state = browser.text(&state_css).await?;
        if state == "done" {
            break;
        }
        assert!(matches!(state.as_str(), "queued" | "running"), "{state}");
        anyhow::ensure!(Instant::now() < deadline, "ticket {id} still {state}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let tickets = browser.table("#tickets").await?;
    assert_eq!(tickets[0][5], removable.to_string(), "{tickets:?}");
    check_page(&browser, "topic-compaction with tickets").await?;
    browser
        .find(&format!(
            "#tickets a[href=\"/console/compaction/tickets/{id}\"]"
        ))
        .await?
        .click()
        .await?;
    browser.wait_loaded().await?;
    assert_eq!(browser.text("#ticket-state").await?, "done");
    assert_eq!(
        browser.text("#ticket-removed").await?,
        removable.to_string()
    );
    check_page(&browser, "ticket").await?;

    // A consumer from offset 0: fewer records, the latest value of every key.
    let records = read_all(&b, &topic)?;
    assert!((records.len() as i64) < written);
    assert_eq!(records.len() as i64, written - removable);
    let mut seen: BTreeMap<String, (i64, Option<String>)> = BTreeMap::new();
    for (offset, key, value) in records {
        seen.insert(key, (offset, value));
    }
    let seen_values: BTreeMap<String, Option<String>> = seen
        .iter()
        .map(|(k, (_, v))| (k.clone(), v.clone()))
        .collect();
    assert_eq!(seen_values, latest);

    // The pass on the pages.
    browser.open(&page).await?;
    assert_eq!(browser.text("#p0-removed").await?, removable.to_string());
    browser.open("/console/compaction").await?;
    let rows = browser.table("#compaction").await?;
    let row = rows.iter().find(|r| r[0] == topic).unwrap();
    assert!(
        row[5].ends_with(&format!("{removable} records removed")),
        "{row:?}"
    );

    // The key lookup: what the consumer saw last for a key; the deleted key is absent.
    for key in ["key-3", "key-0"] {
        let (offset, value) = seen[key].clone();
        let shown = lookup(&browser, &page, key).await?;
        assert_eq!(shown.as_deref(), value.as_deref(), "{key}");
        assert_eq!(browser.text("#lookup-offset").await?, offset.to_string());
        assert_eq!(browser.text("#lookup-partition-value").await?, "0");
        check_page(&browser, "key lookup").await?;
    }
    assert_eq!(lookup(&browser, &page, DELETED).await?, None);
    let result = browser.text("#lookup-result").await?;
    assert!(
        result.starts_with(&format!(
            "Not found: key {DELETED} has no live value in partition 0"
        )),
        "{result}"
    );
    // The page answers 404 for a key that is not found: the browser logs that status.
    let errors = browser.console_errors().await?;
    assert!(errors.iter().all(|e| e.contains("404")), "{errors:#?}");
    check_page(&browser, "key lookup not found").await?;
    browser.close().await
}

/// Looks `key` up with the page's form (retrying while the key index loads); the value
/// shown, or None when the page says the key is not found.
async fn lookup(browser: &Browser, page: &str, key: &str) -> Result<Option<String>> {
    let deadline = Instant::now() + T;
    loop {
        browser.open(page).await?;
        browser.fill("#lookup", "key", key).await?;
        browser.fill("#lookup", "partition", "").await?;
        browser.fill("#lookup", "encoding", "text").await?;
        browser.submit("#lookup").await?;
        let result = browser.text("#lookup-result").await?;
        if let Some(value) = text_now(browser, "#lookup-value").await? {
            return Ok(Some(value));
        }
        if result.starts_with("Not found") {
            return Ok(None);
        }
        anyhow::ensure!(
            result.starts_with("loading") && Instant::now() < deadline,
            "lookup of {key}: {result}"
        );
        browser.console_errors().await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
