//! The Messages page of a topic: browse one partition from an offset, a timestamp, the
//! oldest or the newest records, oldest or newest first, with keys, values and headers shown
//! as text, pretty-printed JSON or hex; and produce a test record.
//!
//! Reading is a Fetch (v12, topic names, read_uncommitted) run as the caller, so it needs
//! READ on the topic as a consumer does; the batches are decoded (and decompressed) with
//! skiff_records. Producing is a Produce (acks=all) of one batch built with
//! skiff_records::BatchBuilder, so it needs WRITE as a producer does; the handlers' error
//! codes are shown as they come.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Path, Query};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiKey, BrokerId, FetchRequest, ProduceRequest, RequestKind};
use serde::Deserialize;
use skiff_records::{BatchBuilder, Compression};

use super::call::{expect_response, Caller};
use super::format;
use super::forms::Action;
use super::page::{esc, notice, url, Page, PageError, Section};
use super::topics::{
    kafka_failure, list_offsets, parse_pairs, partition_count, table_with_id, topic_name, EARLIEST,
    LATEST,
};
use crate::authz::{AclOperation, ResourceType};
use crate::http::HttpApi;
use crate::partitioner::Partitioner;

/// Records shown by default and at most.
const DEFAULT_LIMIT: i64 = 50;
const MAX_LIMIT: i64 = 500;
/// Bytes one Fetch may answer.
const FETCH_BYTES: i32 = 1024 * 1024;
/// Cap of a decompressed batch (a larger one is reported, not shown).
const MAX_DECOMPRESSED: usize = 64 * 1024 * 1024;
/// Fetches one page may make (a bound against a partition of empty or skipped batches).
const MAX_FETCHES: usize = 64;

pub fn routes() -> Router<Arc<HttpApi>> {
    Router::new()
        .route("/console/topics/{topic}/messages", get(browse))
        .route("/console/topics/{topic}/produce", post(produce))
}

#[derive(Deserialize, Default)]
struct BrowseQuery {
    partition: Option<String>,
    offset: Option<String>,
    timestamp: Option<String>,
    from: Option<String>,
    limit: Option<String>,
    format: Option<String>,
    order: Option<String>,
    done: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shown {
    Text,
    Json,
    Hex,
}

/// One decoded record.
struct Shelf {
    offset: i64,
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
    headers: Vec<(Bytes, Option<Bytes>)>,
}

/// An optional whole-number query value; empty is absent, anything else not a number a 400.
fn number(value: &Option<String>, name: &str) -> Result<Option<i64>, PageError> {
    match value.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v
            .parse::<i64>()
            .map(Some)
            .map_err(|_| PageError::bad_request(format!("{name}: {v:?} is not a whole number"))),
    }
}

/// GET /console/topics/{topic}/messages.
async fn browse(
    caller: Caller,
    Path(topic): Path<String>,
    Query(q): Query<BrowseQuery>,
) -> Result<Response, PageError> {
    let read_only = caller.console()?.read_only;
    let count = partition_count(&caller, &topic).await?;
    let partition = number(&q.partition, "partition")?.unwrap_or(0);
    let partition = i32::try_from(partition)
        .ok()
        .filter(|p| (0..count).contains(p))
        .ok_or_else(|| {
            PageError::not_found(format!(
                "UNKNOWN_TOPIC_OR_PARTITION: {topic} has partitions 0 to {}",
                count - 1
            ))
        })?;
    let limit = number(&q.limit, "limit")?
        .unwrap_or(DEFAULT_LIMIT)
        .clamp(1, MAX_LIMIT);
    let shown = match q.format.as_deref().unwrap_or("text") {
        "text" | "" => Shown::Text,
        "json" => Shown::Json,
        "hex" => Shown::Hex,
        other => {
            return Err(PageError::bad_request(format!(
                "format: {other:?} is not text, json or hex"
            )))
        }
    };
    let offset = number(&q.offset, "offset")?;
    let timestamp = number(&q.timestamp, "timestamp")?;
    let from = q.from.as_deref().filter(|f| !f.is_empty());
    if let Some(f) = from.filter(|f| !matches!(*f, "oldest" | "newest")) {
        return Err(PageError::bad_request(format!(
            "from: {f:?} is neither oldest nor newest"
        )));
    }
    // Without a start, the newest records, newest first.
    let newest = offset.is_none() && timestamp.is_none() && from != Some("oldest");
    let descending = match q.order.as_deref().filter(|o| !o.is_empty()) {
        Some("asc") => false,
        Some("desc") => true,
        Some(other) => {
            return Err(PageError::bad_request(format!(
                "order: {other:?} is neither asc nor desc"
            )))
        }
        None => newest,
    };

    let key = vec![(topic.clone(), partition)];
    let one = |m: std::collections::HashMap<(String, i32), Result<i64, i16>>| match m
        .get(&key[0])
        .copied()
    {
        Some(Ok(o)) => Ok(o),
        Some(Err(code)) => Err(kafka_failure(code, None)),
        None => Err(PageError::internal("ListOffsets answered no partition")),
    };
    let start_offset = one(list_offsets(&caller, &key, EARLIEST).await?)?;
    let end_offset = one(list_offsets(&caller, &key, LATEST).await?)?;
    let start = if let Some(o) = offset {
        Some(o.max(start_offset))
    } else if let Some(t) = timestamp {
        // The first offset whose timestamp is at or after t; -1 when there is none.
        Some(one(list_offsets(&caller, &key, t).await?)?).filter(|o| *o >= 0)
    } else if newest {
        Some((end_offset - limit).max(start_offset))
    } else {
        Some(start_offset)
    };
    let mut records = match start {
        Some(s) => fetch(&caller, &topic, partition, s, end_offset, limit).await?,
        None => Vec::new(),
    };
    if descending {
        records.reverse();
    }

    let mut page = Page::new(Section::Topics, format!("Messages of {topic}"));
    page.push(&notice(q.done.as_deref()));
    let _ = write!(
        page.body,
        "<p><a href=\"/console/topics/{u}\">Topic {e}</a> · partition {partition}: \
         offsets {} to {} (log start offset to end offset)</p>",
        format::count(start_offset),
        format::count(end_offset),
        u = url(&topic),
        e = esc(&topic),
    );
    page.push(&browse_form(&topic, count, partition, &q, shown, limit));
    let rows: Vec<Vec<String>> = records.iter().map(|r| row(r, shown)).collect();
    let what = match (offset, timestamp) {
        (Some(o), _) => format!("from offset {o}"),
        (None, Some(t)) => format!("from timestamp {}", format::time_ms(t)),
        _ if newest => "the newest".to_string(),
        _ => "from the oldest".to_string(),
    };
    page.push(&table_with_id(
        "messages",
        &format!(
            "{} record(s) of partition {partition} {what}, {} first",
            records.len(),
            if descending { "newest" } else { "oldest" }
        ),
        &["Offset", "Timestamp", "Key", "Value", "Headers"],
        &[true, false, false, false, false],
        &rows,
    ));
    page.push(&pager(
        &topic, partition, &records, descending, limit, shown,
    ));
    if !read_only && caller.may(AclOperation::Write, ResourceType::Topic, &topic) {
        page.push(&produce_form(&topic, partition));
    }
    Ok(page.render(&caller))
}

/// Fetches from `start` until `limit` records or the end offset `end`.
async fn fetch(
    caller: &Caller,
    topic: &str,
    partition: i32,
    start: i64,
    end: i64,
    limit: i64,
) -> Result<Vec<Shelf>, PageError> {
    let mut out: Vec<Shelf> = Vec::new();
    let mut next = start;
    let wanted = usize::try_from(limit).unwrap_or(0);
    for _ in 0..MAX_FETCHES {
        if out.len() >= wanted || next >= end {
            break;
        }
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(0)
            .with_max_bytes(FETCH_BYTES)
            .with_isolation_level(0)
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(topic_name(topic))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(partition)
                    .with_fetch_offset(next)
                    .with_partition_max_bytes(FETCH_BYTES)])]);
        let response = expect_response!(
            caller
                .kafka(ApiKey::Fetch, 12, RequestKind::Fetch(request))
                .await?,
            Fetch
        )?;
        if response.error_code != 0 {
            return Err(kafka_failure(response.error_code, None));
        }
        let data = response
            .responses
            .iter()
            .flat_map(|t| t.partitions.iter())
            .find(|p| p.partition_index == partition)
            .ok_or_else(|| PageError::internal("Fetch answered no partition"))?;
        match data.error_code {
            0 => {}
            29 => return Err(topic_denied_read()),
            code => return Err(kafka_failure(code, None)),
        }
        let Some(bytes) = data.records.as_ref().filter(|b| !b.is_empty()) else {
            break;
        };
        let before = next;
        for batch in skiff_records::Batches::new(bytes) {
            let (header, raw) = batch.map_err(|e| PageError::internal(format!("Fetch: {e}")))?;
            next = next.max(header.next_offset());
            if header.is_control() {
                continue;
            }
            let decoded = skiff_records::records(raw, MAX_DECOMPRESSED).map_err(|e| {
                PageError::internal(format!(
                    "the batch at offset {} cannot be decoded: {e}",
                    header.base_offset
                ))
            })?;
            for r in decoded {
                let offset = header.base_offset + i64::from(r.offset_delta);
                if offset < start || out.len() >= wanted {
                    continue;
                }
                out.push(Shelf {
                    offset,
                    timestamp: if header.timestamp_type()
                        == skiff_records::TimestampType::LogAppendTime
                    {
                        header.max_timestamp
                    } else {
                        header.base_timestamp + r.timestamp_delta
                    },
                    key: r.key,
                    value: r.value,
                    headers: r.headers,
                });
            }
        }
        if next == before {
            break;
        }
    }
    Ok(out)
}

/// Fetch's refusal: READ is what it needs (the page itself needed DESCRIBE).
fn topic_denied_read() -> PageError {
    PageError::forbidden("TOPIC_AUTHORIZATION_FAILED: reading records needs READ on the topic")
}

/// One table row: offset, time, key, value, headers.
fn row(r: &Shelf, shown: Shown) -> Vec<String> {
    let key = match &r.key {
        None => "<span class=\"muted\">null</span>".to_string(),
        Some(k) => bytes_html(k, shown),
    };
    let value = match &r.value {
        None => "<span class=\"tombstone\">null (tombstone)</span>".to_string(),
        Some(v) => bytes_html(v, shown),
    };
    let headers = if r.headers.is_empty() {
        String::new()
    } else {
        let mut h = String::from("<dl class=\"headers\">");
        for (k, v) in &r.headers {
            let v = match v {
                None => "<span class=\"muted\">null</span>".to_string(),
                Some(v) => bytes_html(
                    v,
                    if shown == Shown::Hex {
                        Shown::Hex
                    } else {
                        Shown::Text
                    },
                ),
            };
            let _ = write!(
                h,
                "<div><dt>{}</dt><dd>{v}</dd></div>",
                esc(&String::from_utf8_lossy(k))
            );
        }
        h.push_str("</dl>");
        h
    };
    vec![
        r.offset.to_string(),
        esc(&format::time_ms(r.timestamp)),
        key,
        value,
        headers,
    ]
}

/// Bytes as the chosen format shows them (already escaped).
fn bytes_html(b: &[u8], shown: Shown) -> String {
    match shown {
        Shown::Hex => {
            let mut s = String::with_capacity(b.len() * 3);
            for (i, byte) in b.iter().enumerate() {
                if i > 0 {
                    s.push(' ');
                }
                let _ = write!(s, "{byte:02x}");
            }
            format!("<code class=\"hex\">{s}</code>")
        }
        Shown::Json => match serde_json::from_slice::<serde_json::Value>(b) {
            Ok(v) => format!(
                "<pre class=\"json\">{}</pre>",
                esc(&serde_json::to_string_pretty(&v).unwrap_or_default())
            ),
            Err(_) => bytes_html(b, Shown::Text),
        },
        Shown::Text => match std::str::from_utf8(b) {
            Ok(s) => format!("<pre>{}</pre>", esc(s)),
            Err(_) => format!(
                "<pre>{}</pre><span class=\"lossy\">(not UTF-8: invalid bytes shown as \u{fffd})</span>",
                esc(&String::from_utf8_lossy(b))
            ),
        },
    }
}

fn format_name(shown: Shown) -> &'static str {
    match shown {
        Shown::Text => "text",
        Shown::Json => "json",
        Shown::Hex => "hex",
    }
}

/// The navigation form (id="browse"): partition, where to start, how many, format, order.
fn browse_form(
    topic: &str,
    count: i32,
    partition: i32,
    q: &BrowseQuery,
    shown: Shown,
    limit: i64,
) -> String {
    let mut partitions = String::new();
    for p in 0..count {
        let selected = if p == partition { " selected" } else { "" };
        let _ = write!(partitions, "<option value=\"{p}\"{selected}>{p}</option>");
    }
    let select = |name: &str, current: Option<&str>, options: &[(&str, &str)]| {
        let mut s = String::new();
        for (value, label) in options {
            let selected = if current == Some(*value) {
                " selected"
            } else {
                ""
            };
            let _ = write!(s, "<option value=\"{value}\"{selected}>{label}</option>");
        }
        format!("<select id=\"browse-{name}\" name=\"{name}\">{s}</select>")
    };
    let value_of = |v: &Option<String>| esc(v.as_deref().unwrap_or(""));
    format!(
        "<form id=\"browse\" class=\"topic-form\" method=\"get\" action=\"/console/topics/{u}/messages\">\
         <label for=\"browse-partition\">Partition</label>\
         <select id=\"browse-partition\" name=\"partition\">{partitions}</select>\
         <label for=\"browse-from\">From</label>{from}\
         <label for=\"browse-offset\">or offset</label>\
         <input id=\"browse-offset\" name=\"offset\" type=\"number\" min=\"0\" value=\"{offset}\">\
         <label for=\"browse-timestamp\">or timestamp (ms)</label>\
         <input id=\"browse-timestamp\" name=\"timestamp\" type=\"number\" min=\"0\" value=\"{timestamp}\">\
         <label for=\"browse-limit\">Records</label>\
         <input id=\"browse-limit\" name=\"limit\" type=\"number\" min=\"1\" max=\"{MAX_LIMIT}\" value=\"{limit}\">\
         <label for=\"browse-format\">Format</label>{format}\
         <label for=\"browse-order\">Order</label>{order}\
         <button type=\"submit\">Show</button></form>",
        u = url(topic),
        from = select(
            "from",
            q.from.as_deref(),
            &[("newest", "newest"), ("oldest", "oldest")]
        ),
        offset = value_of(&q.offset),
        timestamp = value_of(&q.timestamp),
        format = select(
            "format",
            Some(format_name(shown)),
            &[("text", "text"), ("json", "JSON"), ("hex", "hex")]
        ),
        order = select(
            "order",
            q.order.as_deref(),
            &[("", "default"), ("asc", "oldest first"), ("desc", "newest first")]
        ),
    )
}

/// Links to the previous and next records of the partition.
fn pager(
    topic: &str,
    partition: i32,
    records: &[Shelf],
    descending: bool,
    limit: i64,
    shown: Shown,
) -> String {
    let (Some(lo), Some(hi)) = (
        records.iter().map(|r| r.offset).min(),
        records.iter().map(|r| r.offset).max(),
    ) else {
        return String::new();
    };
    let order = if descending { "desc" } else { "asc" };
    let link = |offset: i64, label: &str| {
        format!(
            "<a href=\"/console/topics/{}/messages?partition={partition}&amp;offset={offset}\
             &amp;limit={limit}&amp;format={}&amp;order={order}\">{label}</a>",
            url(topic),
            format_name(shown)
        )
    };
    format!(
        "<p class=\"pager\">{} · {}</p>",
        link((lo - limit).max(0), "Older records"),
        link(hi + 1, "Newer records")
    )
}

/// The test-record form (id="produce").
fn produce_form(topic: &str, partition: i32) -> String {
    format!(
        "<h2>Produce a test record</h2>\
         <form id=\"produce\" class=\"topic-form\" method=\"post\" action=\"/console/topics/{u}/produce\">\
         <label for=\"produce-partition\">Partition (empty: by key)</label>\
         <input id=\"produce-partition\" name=\"partition\" type=\"number\" min=\"0\" placeholder=\"{partition}\">\
         <label for=\"produce-key\">Key (empty: null)</label>\
         <input id=\"produce-key\" name=\"key\" autocomplete=\"off\">\
         <label for=\"produce-value\">Value</label>\
         <textarea id=\"produce-value\" name=\"value\" rows=\"3\" cols=\"40\"></textarea>\
         <label><input type=\"checkbox\" name=\"tombstone\" value=\"on\"> null value (tombstone)</label>\
         <label for=\"produce-headers\">Headers (one <code>key=value</code> a line)</label>\
         <textarea id=\"produce-headers\" name=\"headers\" rows=\"2\" cols=\"30\"></textarea>\
         <button type=\"submit\">Produce</button></form>",
        u = url(topic),
    )
}

#[derive(Deserialize)]
struct ProduceForm {
    partition: Option<String>,
    key: Option<String>,
    value: Option<String>,
    tombstone: Option<String>,
    headers: Option<String>,
}

/// POST /console/topics/{topic}/produce: one record in one batch, Produce acks=all as the
/// caller; then the messages page at its offset.
async fn produce(
    Action(caller): Action,
    Path(topic): Path<String>,
    Form(f): Form<ProduceForm>,
) -> Result<Response, PageError> {
    let count = partition_count(&caller, &topic).await?;
    let key = f
        .key
        .as_deref()
        .filter(|k| !k.is_empty())
        .map(str::as_bytes);
    let partition = match number(&f.partition, "partition")? {
        Some(p) => {
            i32::try_from(p).map_err(|_| PageError::bad_request("partition out of range"))?
        }
        // The Java client's default partitioner for a key; partition 0 for a null key.
        None => match key {
            Some(k) => Partitioner::Murmur2.partition(k, count).unwrap_or(0),
            None => 0,
        },
    };
    let value = if f.tombstone.is_some() {
        None
    } else {
        Some(f.value.as_deref().unwrap_or("").as_bytes())
    };
    let headers = parse_pairs(f.headers.as_deref().unwrap_or(""), "headers")?;
    let header_refs: Vec<(&[u8], Option<&[u8]>)> = headers
        .iter()
        .map(|(k, v)| (k.as_bytes(), Some(v.as_bytes())))
        .collect();
    let mut builder = BatchBuilder::new(0, Compression::None);
    builder.push(caller.broker().clock.now_ms(), key, value, &header_refs);
    let batch = builder
        .build()
        .map_err(|e| PageError::bad_request(format!("the record cannot be built: {e}")))?;
    let request = ProduceRequest::default()
        .with_transactional_id(None)
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic_name(&topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(Bytes::from(batch)))])]);
    let response = expect_response!(
        caller
            .kafka(ApiKey::Produce, 11, RequestKind::Produce(request))
            .await?,
        Produce
    )?;
    let result = response
        .responses
        .iter()
        .flat_map(|t| t.partition_responses.iter())
        .next()
        .ok_or_else(|| PageError::internal("Produce answered no partition"))?;
    if result.error_code != 0 {
        return Err(kafka_failure(
            result.error_code,
            result.error_message.as_deref(),
        ));
    }
    let done = format!(
        "Produced a record to partition {partition} at offset {}",
        result.base_offset
    );
    // Not forms::done: the redirect carries the partition and offset too.
    Ok(Redirect::to(&format!(
        "/console/topics/{}/messages?partition={partition}&offset={}&order=asc&done={}",
        url(&topic),
        result.base_offset,
        url(&done)
    ))
    .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_escape_and_fall_back() {
        assert_eq!(bytes_html(b"<a>", Shown::Text), "<pre>&lt;a&gt;</pre>");
        assert_eq!(
            bytes_html(b"\x00\xff", Shown::Hex),
            "<code class=\"hex\">00 ff</code>"
        );
        assert!(bytes_html(b"{\"a\":1}", Shown::Json).contains("&quot;a&quot;: 1"));
        assert_eq!(
            bytes_html(b"not json", Shown::Json),
            bytes_html(b"not json", Shown::Text)
        );
        assert!(bytes_html(b"\xff", Shown::Text).contains("not UTF-8"));
    }
}
