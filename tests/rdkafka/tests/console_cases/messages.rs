//! The Messages page: the records of a partition from an offset are those a librdkafka
//! consumer reads from that offset (offsets, timestamps, keys, values), oldest or newest
//! first, as text, pretty-printed JSON or hex; a record and a tombstone produced with the
//! form are read back by librdkafka.

use rdkafka::message::Headers as _;
use rdkafka::Message as _;

use crate::common::{consume_n, Rec};
use crate::console_support::*;

/// Epoch milliseconds as the console prints them: `2026-12-04 18:46:01 UTC`.
fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn text(b: &Option<Vec<u8>>) -> String {
    String::from_utf8(b.clone().expect("not null")).expect("UTF-8")
}

/// The table row the page should show for a record librdkafka read (text format):
/// offset, timestamp, key, value.
fn expected(r: &Rec) -> Vec<String> {
    vec![
        r.offset.to_string(),
        utc(r.timestamp.expect("a timestamp")),
        text(&r.key),
        text(&r.value),
    ]
}

/// The first four cells (offset, timestamp, key, value) of each row.
fn shown(rows: &[Vec<String>]) -> Vec<Vec<String>> {
    rows.iter().map(|r| r[..4].to_vec()).collect()
}

/// The `offset` query value of a path.
fn query_offset(path: &str) -> Option<i64> {
    path.split_once('?')?
        .1
        .split('&')
        .find_map(|kv| kv.strip_prefix("offset="))?
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browse_shows_what_librdkafka_reads_in_each_order_and_format() -> Result<()> {
    let (b, http) = start(&[]);
    let topic = unique_topic("console-messages");
    create_topic(&admin(&b)?, &topic, 2, &[]).await?;
    write(&b, &topic, 80, 8).await;
    // The partition with more records, browsed from an offset inside it.
    let marks = [watermarks(&b, &topic, 0), watermarks(&b, &topic, 1)];
    let p = if marks[0].1 >= marks[1].1 { 0 } else { 1 };
    let (low, high) = marks[p as usize];
    anyhow::ensure!(high - low >= 12, "partition {p}: {low}..{high}");
    let from = low + 3;
    let c: BaseConsumer = consumer(&b, &[])?;
    let read = consume_n(&c, &topic, p, Offset::Offset(from), 6, OP_TIMEOUT)?;
    let want: Vec<Vec<String>> = read.iter().map(expected).collect();

    let browser = Browser::start(&http).await?;
    browser
        .open(&format!(
            "/console/topics/{topic}/messages?partition={p}&offset={from}&limit=6&order=asc"
        ))
        .await?;
    assert_eq!(browser.text("h1").await?, format!("Messages of {topic}"));
    let intro = browser.text("main p").await?;
    assert!(
        intro.contains(&format!("partition {p}: offsets {low} to {high}")),
        "{intro:?}"
    );
    let rows = browser.table("#messages").await?;
    assert_eq!(shown(&rows), want, "oldest first from offset {from}");
    check_page(&browser, "messages").await?;
    browser.screenshot("messages").await?;

    // Newest first, with the browse form (it keeps the partition, offset and limit).
    browser.fill("#browse", "order", "desc").await?;
    browser.submit("#browse").await?;
    let path = browser.path().await?;
    assert!(path.contains("order=desc"), "{path}");
    let rows = browser.table("#messages").await?;
    let mut newest_first = want.clone();
    newest_first.reverse();
    assert_eq!(
        shown(&rows),
        newest_first,
        "newest first from offset {from}"
    );

    // JSON: the same values, pretty-printed.
    browser.fill("#browse", "order", "asc").await?;
    browser.fill("#browse", "format", "json").await?;
    browser.submit("#browse").await?;
    let rows = browser.table("#messages").await?;
    assert_eq!(rows.len(), read.len());
    for (row, r) in rows.iter().zip(&read) {
        assert_eq!(row[0], r.offset.to_string());
        let page: serde_json::Value = serde_json::from_str(&row[3])
            .map_err(|e| anyhow::anyhow!("offset {}: {e}: {:?}", r.offset, row[3]))?;
        let sent: serde_json::Value = serde_json::from_slice(r.value.as_deref().unwrap())?;
        assert_eq!(page, sent, "offset {}", r.offset);
        assert!(
            row[3].starts_with("{\n  \""),
            "not pretty-printed: {:?}",
            row[3]
        );
    }
    check_page(&browser, "messages as JSON").await?;

    // Hex: the bytes of keys and values.
    browser.fill("#browse", "format", "hex").await?;
    browser.submit("#browse").await?;
    let rows = browser.table("#messages").await?;
    let hex = |b: &[u8]| {
        b.iter()
            .map(|x| format!("{x:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(rows.len(), read.len());
    for (row, r) in rows.iter().zip(&read) {
        assert_eq!(row[0], r.offset.to_string());
        assert_eq!(row[2], hex(r.key.as_deref().unwrap()), "key in hex");
        assert_eq!(row[3], hex(r.value.as_deref().unwrap()), "value in hex");
    }
    check_page(&browser, "messages as hex").await?;
    browser.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_and_a_tombstone_produced_with_the_form_reach_librdkafka() -> Result<()> {
    let (b, http) = start(&[]);
    let topic = unique_topic("console-produce");
    create_topic(&admin(&b)?, &topic, 2, &[]).await?;
    write(&b, &topic, 10, 2).await;
    let (_, high) = watermarks(&b, &topic, 1);

    let browser = Browser::start(&http).await?;
    browser
        .open(&format!("/console/topics/{topic}/messages?partition=1"))
        .await?;
    check_page(&browser, "messages").await?;
    browser.fill("#produce", "partition", "1").await?;
    browser.fill("#produce", "key", "order-42").await?;
    browser
        .fill("#produce", "value", "{\"total\":42,\"note\":\"<b>&</b>\"}")
        .await?;
    browser
        .fill("#produce", "headers", "trace=abc-123\nsource=console")
        .await?;
    browser.submit("#produce").await?;
    let path = browser.path().await?;
    let offset = query_offset(&path).ok_or_else(|| anyhow::anyhow!("no offset in {path}"))?;
    assert_eq!(offset, high, "the record goes to the end of partition 1");
    assert!(
        browser.text(".notice").await?.contains(&format!(
            "Produced a record to partition 1 at offset {high}"
        )),
        "the notice"
    );
    let c: BaseConsumer = consumer(&b, &[])?;
    let got = consume_n(&c, &topic, 1, Offset::Offset(offset), 1, OP_TIMEOUT)?;
    let r = &got[0];
    assert_eq!(r.offset, offset);
    assert_eq!(r.key.as_deref(), Some(&b"order-42"[..]));
    assert_eq!(
        r.value.as_deref(),
        Some(&b"{\"total\":42,\"note\":\"<b>&</b>\"}"[..])
    );
    assert_eq!(
        r.headers,
        vec![
            ("trace".to_string(), Some(b"abc-123".to_vec())),
            ("source".to_string(), Some(b"console".to_vec())),
        ]
    );
    // The page it lands on shows the record as librdkafka read it.
    let rows = browser.table("#messages").await?;
    assert_eq!(shown(&rows[..1]), vec![expected(r)]);
    assert!(
        rows[0][4].contains("trace") && rows[0][4].contains("abc-123"),
        "{:?}",
        rows[0]
    );
    check_page(&browser, "messages after produce").await?;

    // A tombstone: the checkbox sends a null value whatever the value field holds.
    browser.fill("#produce", "partition", "1").await?;
    browser.fill("#produce", "key", "order-42").await?;
    browser.fill("#produce", "value", "ignored").await?;
    browser
        .find("#produce input[name=\"tombstone\"]")
        .await?
        .click()
        .await?;
    browser.submit("#produce").await?;
    let path = browser.path().await?;
    let at = query_offset(&path).ok_or_else(|| anyhow::anyhow!("no offset in {path}"))?;
    assert_eq!(at, offset + 1);
    let c: BaseConsumer = consumer(&b, &[])?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&topic, 1, Offset::Offset(at))?;
    c.assign(&tpl)?;
    let deadline = std::time::Instant::now() + OP_TIMEOUT;
    let m = loop {
        if let Some(m) = c.poll(Duration::from_millis(200)) {
            break m?;
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "the tombstone never arrived"
        );
    };
    assert_eq!(m.offset(), at);
    assert_eq!(m.key(), Some(&b"order-42"[..]));
    assert!(m.payload().is_none(), "a tombstone has a null payload");
    assert!(m.headers().is_none_or(|h| h.count() == 0));
    let rows = browser.table("#messages").await?;
    assert_eq!(rows[0][0], at.to_string());
    assert_eq!(rows[0][3], "null (tombstone)");
    check_page(&browser, "messages after a tombstone").await?;
    browser.close().await
}
