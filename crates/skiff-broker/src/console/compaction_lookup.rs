//! The key lookup of a compacted topic's compaction page (`?key=&partition=&encoding=`):
//! the latest value of one key from the partition's key index, as the HTTP API's lookup
//! route answers it (`Broker::lookup_key_async`, READ and DESCRIBE on the topic), shown in
//! `#lookup-result` with the status the page answers with: 200 found, 404 not found (never
//! written, or a tombstone last), 409 no key index (and how to turn it on), 503 loading or
//! over budget, 403 without READ, 400 for a bad partition, encoding or base64 key.

use axum::http::StatusCode;
use bytes::Bytes;

use super::super::call::Caller;
use super::super::format;
use super::super::page::{esc, table};
use super::topic::{partition_select, TopicQuery};
use super::topic_path;
use crate::http::key_segment::{decode_key, KeyEncoding};
use crate::table_lookup::{LookupHit, LookupRequest, Partitioner};
use crate::table_snapshot::{encode, Encoding};
use crate::topics::Topic;

pub(super) fn lookup_form(name: &str, count: i32, may_read: bool, q: &TopicQuery) -> String {
    if !may_read {
        return "<h2>Key lookup</h2><p class=\"muted\">Key lookups need READ and DESCRIBE on \
                the topic, as a consumer does.</p>"
            .to_string();
    }
    let base64 = q.encoding.as_deref() == Some("base64");
    format!(
        "<h2>Key lookup</h2>\
         <form id=\"lookup\" method=\"get\" action=\"{path}\">\
         <label for=\"lookup-key\">Key</label> \
         <input id=\"lookup-key\" name=\"key\" required value=\"{key}\"> {partition} \
         <label for=\"lookup-encoding\">Encoding</label> \
         <select id=\"lookup-encoding\" name=\"encoding\">\
         <option value=\"text\"{text_sel}>text</option>\
         <option value=\"base64\"{b64_sel}>base64</option></select> \
         <button type=\"submit\">Look up</button></form>\
         <p class=\"muted\">The latest value from the partition's key index \
         (skiff.key.index.enable=true). Without a partition it is computed with murmur2, the \
         Java client's partitioner; pick the partition for keys written otherwise. With \
         base64, the key is given and the answer shown in base64.</p>",
        path = topic_path(name),
        key = esc(q.key.as_deref().unwrap_or("")),
        partition = partition_select(
            "lookup-partition",
            count,
            "from the key",
            q.partition.as_deref()
        ),
        text_sel = if base64 { "" } else { " selected" },
        b64_sel = if base64 { " selected" } else { "" },
    )
}

/// Looks `key` up as the HTTP API's lookup route does (READ and DESCRIBE, the key index),
/// and says what came of it, with the status the page answers with.
pub(super) async fn lookup(
    caller: &Caller,
    topic: &Topic,
    may_read: bool,
    key: &str,
    q: &TopicQuery,
) -> (StatusCode, String) {
    let block = |status: StatusCode, class: &str, html: String| {
        (
            status,
            format!("<div id=\"lookup-result\" class=\"{class}\" role=\"status\">{html}</div>"),
        )
    };
    if !may_read {
        return block(
            StatusCode::FORBIDDEN,
            "error",
            "Refused: not authorized to read this topic (a key lookup needs READ and DESCRIBE)."
                .into(),
        );
    }
    let (key_encoding, encoding) = match q.encoding.as_deref() {
        Some("base64") => (KeyEncoding::Base64, Encoding::Base64),
        None | Some("" | "text") => (KeyEncoding::Text, Encoding::Text),
        Some(other) => {
            return block(
                StatusCode::BAD_REQUEST,
                "error",
                format!("Unknown encoding {} (text or base64).", esc(other)),
            )
        }
    };
    let partition = match q.partition.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(p) => match p.parse::<i32>() {
            Ok(p) => Some(p),
            Err(_) => {
                return block(
                    StatusCode::BAD_REQUEST,
                    "error",
                    format!("Partition {} is not a number.", esc(p)),
                )
            }
        },
    };
    let key_bytes = match decode_key(key, key_encoding) {
        Ok(k) => Bytes::from(k),
        Err(e) => return block(StatusCode::BAD_REQUEST, "error", esc(&e.message)),
    };
    let looked_in =
        partition.or_else(|| Partitioner::default().partition(&key_bytes, topic.partition_count()));
    let request = LookupRequest {
        topic: topic.name.clone(),
        partition,
        key: key_bytes,
        partitioner: Partitioner::default(),
        read_committed: true,
    };
    match caller.broker().lookup_key_async(request).await {
        Ok(Some(hit)) => block(StatusCode::OK, "found", hit_html(&hit, encoding)),
        Ok(None) => block(
            StatusCode::NOT_FOUND,
            "error",
            format!(
                "Not found: key {} has no live value in partition {} (it was never written \
                 there, or its latest record is a tombstone).",
                esc(key),
                looked_in.map_or_else(|| "-".to_string(), |p| p.to_string())
            ),
        ),
        Err(e) => block(
            StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            "error",
            format!("{}: {}", esc(e.kind()), esc(&e.to_string())),
        ),
    }
}

/// A found record: where it is, when, its key, value (JSON pretty-printed) and headers.
fn hit_html(hit: &LookupHit, encoding: Encoding) -> String {
    let shown = |bytes: &[u8]| {
        let (text, flag) = encode(bytes, encoding);
        let pretty = match (encoding, flag) {
            (Encoding::Text, None) => serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .filter(|v| v.is_object() || v.is_array())
                .and_then(|v| serde_json::to_string_pretty(&v).ok()),
            _ => None,
        };
        let note = if flag.is_some() {
            " <span class=\"muted\">(base64: not UTF-8)</span>"
        } else {
            ""
        };
        format!("<pre>{}</pre>{note}", esc(&pretty.unwrap_or(text)))
    };
    let mut html = format!(
        "<dl class=\"record\"><dt>Partition</dt><dd id=\"lookup-partition-value\">{}</dd>\
         <dt>Offset</dt><dd id=\"lookup-offset\">{}</dd>\
         <dt>Timestamp</dt><dd>{} <span class=\"muted\">({})</span></dd>\
         <dt>Key</dt><dd>{}</dd><dt>Value</dt><dd id=\"lookup-value\">{}</dd></dl>",
        hit.partition,
        hit.offset,
        esc(&format::time_ms(hit.timestamp)),
        hit.timestamp,
        shown(&hit.key),
        shown(&hit.value)
    );
    let headers: Vec<Vec<String>> = hit
        .headers
        .iter()
        .map(|(k, v)| {
            vec![
                esc(k),
                v.as_ref().map_or_else(
                    || "<span class=\"muted\">null</span>".to_string(),
                    |v| shown(v),
                ),
            ]
        })
        .collect();
    html.push_str(&table("Headers", &["Key", "Value"], &[], &headers));
    html
}
