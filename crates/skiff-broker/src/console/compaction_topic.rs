//! `GET /console/topics/{topic}/compaction`: one compacted topic in detail. Per partition
//! what the cleaner last planned (dirty ratio against its threshold, clean and cleanable
//! bytes, the cleanable range and what ends it, the max-lag delay, tombstones) and its last
//! pass; the dry run and compact-now forms; the state of the tickets a compact-now returned
//! (`?tickets=`, reloaded by the script while one is pending); a key lookup (`?key=`,
//! answered from the key index with the page's status set to the lookup's: 404 not found,
//! 409 no index, 503 loading or over budget, 403 without READ); and the snapshot link.

use std::fmt::Write as _;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::super::call::Caller;
use super::super::format;
use super::super::page::{esc, html_response, notice, table, url, Page, PageError, Section};
use super::lookup::{lookup, lookup_form};
use super::{
    bytes_cell, compacted_topic, held_text, limit_cell, partition_states, ratio_cell, removed,
    require_describe, state_cell, topic_path, PartitionState,
};
use crate::authz::{AclOperation, ResourceType};
use crate::compaction::Ticket;

/// The page's query: the notice and tickets of a compact-now, and a key lookup.
#[derive(Debug, Default, Deserialize)]
pub(super) struct TopicQuery {
    done: Option<String>,
    tickets: Option<String>,
    pub(super) key: Option<String>,
    pub(super) partition: Option<String>,
    pub(super) encoding: Option<String>,
}

pub(super) async fn page(
    caller: Caller,
    Path(name): Path<String>,
    query: Result<Query<TopicQuery>, QueryRejection>,
) -> Result<Response, PageError> {
    let topic = compacted_topic(&caller, &name)?;
    let Query(q) = query.map_err(|e| PageError::bad_request(e.body_text()))?;
    let broker = caller.broker().clone();
    let rows = partition_states(&topic, &broker.compaction_statuses());
    let now = broker.clock.now_ms();
    let read_only = caller.console()?.read_only;
    let may_alter = caller.may(AclOperation::Alter, ResourceType::Topic, &name);
    let may_read = caller.may(AclOperation::Read, ResourceType::Topic, &name);

    let mut page = Page::new(Section::Compaction, format!("Compaction of {name}"));
    page.push(&notice(q.done.as_deref()));
    let _ = write!(
        page.body,
        "<p><a href=\"/console/topics/{u}\">Topic {e}</a> · \
         <a href=\"/console/topics/{u}/messages\">Browse messages</a> · \
         <a href=\"/console/compaction\">All compacted partitions</a></p>",
        u = url(&name),
        e = esc(&name)
    );
    let ids = ticket_ids(q.tickets.as_deref());
    if !ids.is_empty() {
        let (html, pending) = tickets_table(&caller, &name, &ids);
        let refresh = if pending {
            format!(
                " data-refresh=\"{}/tickets?ids={}\" data-interval=\"1000\"",
                topic_path(&name),
                url(&join(&ids))
            )
        } else {
            String::new()
        };
        let _ = write!(
            page.body,
            "<h2>Compact-now tickets</h2><div id=\"tickets-box\"{refresh}>{html}</div>\
             <p><a href=\"{}\">Reload the page</a> to see the partitions after the pass.</p>",
            topic_path(&name)
        );
    }
    page.push("<h2>Partitions</h2>");
    page.push(&with_id(&partitions_table(&rows, now), "partitions"));
    page.push("<h2>Last passes</h2>");
    page.push(&with_id(&passes_table(&rows), "passes"));
    page.push(&controls(
        &name,
        topic.partition_count(),
        read_only,
        may_alter,
    ));
    let (status, result) = match &q.key {
        Some(key) => lookup(&caller, &topic, may_read, key, &q).await,
        None => (StatusCode::OK, String::new()),
    };
    page.push(&lookup_form(&name, topic.partition_count(), may_read, &q));
    page.push(&result);
    page.push("<h2>Snapshot</h2>");
    if may_read {
        let _ = write!(
            page.body,
            "<p><a id=\"snapshot-link\" href=\"/v1/topics/{}/snapshot\" download=\"{}.ndjson\">\
             Download snapshot</a> <span class=\"muted\">(NDJSON: one line per live key with \
             its latest value, then the end offsets to consume from)</span></p>",
            url(&name),
            esc(&name)
        );
    } else {
        page.push(
            "<p class=\"muted\">A snapshot needs READ and DESCRIBE on the topic, as a \
             consumer does.</p>",
        );
    }
    let mut response = page.render(&caller);
    *response.status_mut() = status;
    Ok(response)
}

/// `GET …/compaction/tickets?ids=`: the tickets table alone, for the script's reload.
pub(super) async fn tickets_fragment(
    caller: Caller,
    Path(name): Path<String>,
    query: Result<Query<TicketsQuery>, QueryRejection>,
) -> Result<Response, PageError> {
    require_describe(&caller, &name)?;
    let Query(q) = query.map_err(|e| PageError::bad_request(e.body_text()))?;
    let (html, _) = tickets_table(&caller, &name, &ticket_ids(q.ids.as_deref()));
    Ok(html_response(StatusCode::OK, html).into_response())
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct TicketsQuery {
    ids: Option<String>,
}

/// Ticket ids from `1,2,3` (at most 1024, anything else ignored).
fn ticket_ids(list: Option<&str>) -> Vec<u64> {
    list.unwrap_or("")
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .take(1024)
        .collect()
}

fn join(ids: &[u64]) -> String {
    ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// Puts `id` on the table that `page::table` built.
fn with_id(html: &str, id: &str) -> String {
    html.replacen("<table>", &format!("<table id=\"{id}\">"), 1)
}

/// The tickets of `topic` among `ids` (others' are not shown: they need DESCRIBE on their own
/// topic), and whether one is still queued or running.
fn tickets_table(caller: &Caller, topic: &str, ids: &[u64]) -> (String, bool) {
    let mut pending = false;
    let rows: Vec<Vec<String>> = ids
        .iter()
        .filter_map(|id| caller.broker().compaction_ticket(*id).ok())
        .filter(|t| t.topic == topic)
        .map(|t| {
            pending |= matches!(t.state, "queued" | "running");
            ticket_row(&t)
        })
        .collect();
    let html = table(
        "Tickets of the compact-now (queued, running, done, nothing_to_clean or failed)",
        &[
            "Ticket",
            "Partition",
            "State",
            "Requested",
            "Finished",
            "Records removed",
            "Error",
        ],
        &[true, true, false, false, false, true, false],
        &rows,
    );
    (with_id(&html, "tickets"), pending)
}

fn ticket_row(t: &Ticket) -> Vec<String> {
    vec![
        format!(
            "<a href=\"/console/compaction/tickets/{id}\">{id}</a>",
            id = t.id
        ),
        t.partition.to_string(),
        format!(
            "<span class=\"state {}\" id=\"ticket-{}-state\">{}</span>",
            esc(t.state),
            t.id,
            esc(t.state)
        ),
        esc(&format::time_ms(t.requested_ms)),
        esc(&format::time_ms(t.finished_ms.unwrap_or(-1))),
        t.pass.as_ref().map_or_else(
            || "-".into(),
            |p| format::count(i64::try_from(p.records_removed).unwrap_or(i64::MAX)),
        ),
        esc(t.error.as_deref().unwrap_or("")),
    ]
}

/// One row per partition: what the cleaner planned and why the range ends where it does.
fn partitions_table(rows: &[PartitionState], now: i64) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|p| {
            let i = p.partition.index;
            let Some(s) = &p.status else {
                let mut row = vec![i.to_string(), state_cell(None, now)];
                row.extend((0..7).map(|_| "-".to_string()));
                return row;
            };
            let lag = if p.config.max_compaction_lag_ms == i64::MAX {
                "unlimited".to_string()
            } else {
                match s.max_compaction_delay_ms {
                    Some(d) if d > 0 => format!("overdue by {}", format::duration_ms(d)),
                    Some(d) => format!("due in {}", format::duration_ms(-d)),
                    None => "nothing dirty".into(),
                }
            };
            let horizon = s
                .next_delete_horizon_ms
                .map(|t| format!("; next delete horizon {}", format::time_ms(t)))
                .unwrap_or_default();
            vec![
                i.to_string(),
                state_cell(Some(s), now),
                ratio_cell(
                    Some(format!("p{i}-dirty")),
                    s.dirty_ratio,
                    s.min_cleanable_ratio,
                ),
                bytes_cell(Some(format!("p{i}-clean")), s.clean_bytes),
                bytes_cell(Some(format!("p{i}-cleanable")), s.cleanable_bytes),
                format!(
                    "<span id=\"p{i}-first-dirty\">{}</span>",
                    s.first_dirty_offset
                ),
                limit_cell(Some(format!("p{i}-uncleanable")), p, s),
                esc(&lag),
                format!(
                    "<span id=\"p{i}-held\">{}</span> <span class=\"muted\">held for groups; \
                     {} kept by the last pass{}</span>",
                    esc(&held_text(s)),
                    s.tombstones_seen,
                    esc(&horizon)
                ),
            ]
        })
        .collect();
    table(
        "Per partition: the dirty ratio against min.cleanable.dirty.ratio, and what may be cleaned now",
        &[
            "Partition",
            "State",
            "Dirty ratio / threshold",
            "Clean",
            "Cleanable",
            "First dirty offset",
            "First uncleanable offset and why",
            "max.compaction.lag.ms",
            "Tombstones",
        ],
        &[true, false, false, true, true, true, false, false, false],
        &cells,
    )
}

/// One row per partition: the last successful pass, the totals since start, the last error.
fn passes_table(rows: &[PartitionState]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|p| {
            let i = p.partition.index;
            let mut row = vec![i.to_string()];
            let Some(s) = &p.status else {
                row.extend((0..7).map(|_| "-".to_string()));
                return row;
            };
            match &s.last_pass {
                Some(pass) => row.extend([
                    esc(&format::time_ms(s.last_pass_end_ms.unwrap_or(-1))),
                    esc(&format::duration_ms(
                        i64::try_from(pass.duration.as_millis()).unwrap_or(i64::MAX),
                    )),
                    format!(
                        "<span id=\"p{i}-removed\">{}</span>",
                        format::count(removed(pass))
                    ),
                    format::count(i64::try_from(pass.tombstones_removed).unwrap_or(0)),
                    format!(
                        "{} → {}",
                        bytes_cell(None, pass.bytes_before),
                        bytes_cell(None, pass.bytes_written)
                    ),
                ]),
                None => {
                    row.push("never".into());
                    row.extend((0..4).map(|_| "-".to_string()));
                }
            }
            let t = &s.totals;
            row.push(format!(
                "passes: {}, records removed: {}, failures: {}",
                t.passes, t.records_removed, t.failures
            ));
            row.push(esc(s.last_error.as_deref().unwrap_or("")));
            row
        })
        .collect();
    table(
        "Per partition: the last successful pass since the broker started",
        &[
            "Partition",
            "Ended",
            "Took",
            "Records removed",
            "Tombstones removed",
            "Bytes before → after",
            "Since start",
            "Last error",
        ],
        &[true, false, true, true, true, false, false, false],
        &cells,
    )
}

/// A partition choice: every partition (or, for a lookup, computed from the key) or one.
pub(super) fn partition_select(
    id: &str,
    count: i32,
    first: &str,
    selected: Option<&str>,
) -> String {
    let mut html = format!(
        "<label for=\"{id}\">Partition</label> <select id=\"{id}\" name=\"partition\">\
         <option value=\"\">{}</option>",
        esc(first)
    );
    for p in 0..count {
        let chosen = if selected == Some(p.to_string().as_str()) {
            " selected"
        } else {
            ""
        };
        let _ = write!(html, "<option value=\"{p}\"{chosen}>{p}</option>");
    }
    html.push_str("</select>");
    html
}

/// The dry run and compact-now forms (compact-now only when the caller may ALTER the topic
/// and the console is not read-only).
fn controls(name: &str, count: i32, read_only: bool, may_alter: bool) -> String {
    let path = topic_path(name);
    let mut html = format!(
        "<h2>Dry run and compact now</h2>\
         <form id=\"dry-run\" class=\"inline\" method=\"get\" action=\"{path}/dry-run\">{} \
         <button type=\"submit\">Dry run</button></form> ",
        partition_select("dry-run-partition", count, "all", None)
    );
    if read_only {
        html.push_str("<p class=\"muted\">The console is read-only: no compact now.</p>");
    } else if !may_alter {
        html.push_str(
            "<p class=\"muted\">Compact now needs ALTER on the topic (you may only look).</p>",
        );
    } else {
        let _ = write!(
            html,
            "<form id=\"compact-now\" class=\"inline\" method=\"post\" action=\"{path}\" \
             data-confirm=\"Compact {} now? Superseded records are removed for good.\">{} \
             <button type=\"submit\">Compact now</button></form>",
            esc(name),
            partition_select("compact-now-partition", count, "all", None)
        );
    }
    html.push_str(
        "<p class=\"muted\">A dry run shows what a pass would remove now and changes nothing. \
         Compact now runs a pass whatever the dirty ratio; min.compaction.lag.ms, open \
         transactions, the active segment and delete.retention.ms still apply.</p>",
    );
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticket_ids_ignore_garbage() {
        assert_eq!(ticket_ids(Some("3, 4,x,,5")), vec![3, 4, 5]);
        assert!(ticket_ids(None).is_empty());
    }
}
