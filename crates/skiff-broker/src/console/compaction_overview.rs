//! `GET /console/compaction`: the log cleaner at a glance (threads, backlog, uncleanable
//! partitions, tombstones held for consumers) and one row per compacted partition of the
//! topics the caller may DESCRIBE. The topics come from a Metadata request run as the caller,
//! so the page lists exactly what a Kafka client of that principal would see; the figures
//! are the cleaner's statuses (`Broker::compaction_statuses`), counted over those partitions
//! only, so the page says nothing about topics the caller may not see.

use std::fmt::Write as _;

use axum::response::Response;
use kafka_protocol::messages::{ApiKey, MetadataRequest, RequestKind};

use super::super::call::{expect_response, Caller};
use super::super::format;
use super::super::page::{esc, table, Page, PageError, Section};
use super::{
    held_text, is_compacted, last_pass_text, limit_cell, partition_states, ratio_cell, state_cell,
    topic_path, waiting_to_clean, PartitionState,
};
use crate::metrics::render::uncleanable_reason;

pub(super) async fn page(caller: Caller) -> Result<Response, PageError> {
    let broker = caller.broker().clone();
    let names = describable_topics(&caller).await?;
    let statuses = broker.compaction_statuses();
    let (mut rows, mut internal): (Vec<PartitionState>, Vec<PartitionState>) = (vec![], vec![]);
    for name in &names {
        if let Some(topic) = broker.topics.get(name).filter(|t| is_compacted(t)) {
            let states = partition_states(&topic, &statuses);
            if topic.is_internal() {
                internal.extend(states);
            } else {
                rows.extend(states);
            }
        }
    }
    let now = broker.clock.now_ms();
    let mut page = Page::new(Section::Compaction, "Compaction");
    let all: Vec<&PartitionState> = rows.iter().chain(&internal).collect();
    page.push(&cleaner_cards(&caller, &all));
    page.push(&uncleanable_list(&all));
    page.push("<h2>Compacted partitions</h2>");
    if rows.is_empty() {
        page.push(
            "<p class=\"muted\">No compacted topic you may describe. A topic is compacted when \
             its cleanup.policy contains compact.</p>",
        );
    }
    page.push(&partitions_table(
        "compaction",
        "Every compacted partition of the topics you may describe",
        &rows,
        now,
    ));
    if !internal.is_empty() {
        // The broker's own compacted topics (__consumer_offsets has 50 partitions by
        // default): folded away so they do not bury the user's topics.
        let busy = internal
            .iter()
            .filter(|p| p.status.as_ref().is_some_and(|s| s.cleanable_bytes > 0))
            .count();
        let _ = write!(
            page.body,
            "<details id=\"internal\"><summary>Internal topics: {} partitions, {} with \
             something to clean</summary>{}</details>",
            internal.len(),
            busy,
            partitions_table(
                "compaction-internal",
                "Compacted partitions of the broker's internal topics",
                &internal,
                now
            )
        );
    }
    Ok(page.render(&caller))
}

/// One row per partition, in a table with `id`.
fn partitions_table(id: &str, caption: &str, rows: &[PartitionState], now: i64) -> String {
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|p| {
            let s = p.status.as_ref();
            vec![
                format!("<a href=\"{}\">{}</a>", topic_path(&p.topic), esc(&p.topic)),
                p.partition.index.to_string(),
                state_cell(s, now),
                s.map_or_else(
                    || "-".into(),
                    |s| ratio_cell(None, s.dirty_ratio, s.min_cleanable_ratio),
                ),
                s.map_or_else(
                    || "-".into(),
                    |s| super::bytes_cell(None, s.cleanable_bytes),
                ),
                s.map_or_else(|| "-".into(), |s| esc(&last_pass_text(s))),
                s.map_or_else(|| "-".into(), |s| limit_cell(None, p, s)),
                s.map_or_else(|| "-".into(), |s| esc(&held_text(s))),
            ]
        })
        .collect();
    let html = table(
        caption,
        &[
            "Topic",
            "Partition",
            "State",
            "Dirty ratio / threshold",
            "Cleanable",
            "Last pass",
            "First uncleanable offset and why",
            "Tombstones held for groups",
        ],
        &[false, true, false, false, true, false, false, false],
        &table_rows,
    );
    html.replacen("<table>", &format!("<table id=\"{id}\">"), 1)
}

/// The topics the caller may DESCRIBE, by a Metadata request run as the caller.
async fn describable_topics(caller: &Caller) -> Result<Vec<String>, PageError> {
    let request = MetadataRequest::default()
        .with_topics(None)
        .with_allow_auto_topic_creation(false);
    let response = expect_response!(
        caller
            .kafka(ApiKey::Metadata, 12, RequestKind::Metadata(request))
            .await?,
        Metadata
    )?;
    let mut names: Vec<String> = response
        .topics
        .iter()
        .filter(|t| t.error_code == 0)
        .filter_map(|t| t.name.as_ref().map(|n| n.to_string()))
        .collect();
    names.sort();
    Ok(names)
}

/// The cleaner's figures: its threads, and over the listed partitions the backlog, what is
/// in progress, uncleanable, overdue, and the tombstones held for consumer groups.
fn cleaner_cards(caller: &Caller, rows: &[&PartitionState]) -> String {
    let broker = caller.broker();
    let live = broker.live_config();
    let statuses: Vec<_> = rows.iter().filter_map(|p| p.status.as_ref()).collect();
    let count = |n: usize| format::count(i64::try_from(n).unwrap_or(i64::MAX));
    let threads = if live.log_cleaner_enable {
        format!(
            "{} of {}",
            broker.cleaner_thread_count(),
            live.log_cleaner_threads
        )
    } else {
        "off (log.cleaner.enable=false)".to_string()
    };
    let held: u64 = statuses
        .iter()
        .map(|s| s.tombstones_held_for_consumers)
        .sum();
    let cards = [
        ("Cleaner threads", threads),
        (
            "Idle sleep",
            format::duration_ms(live.log_cleaner_backoff_ms),
        ),
        ("Compacted partitions", count(rows.len())),
        (
            "Backlog",
            count(statuses.iter().filter(|s| waiting_to_clean(s)).count()),
        ),
        (
            "In progress",
            count(statuses.iter().filter(|s| s.in_progress).count()),
        ),
        (
            "Uncleanable",
            count(
                statuses
                    .iter()
                    .filter(|s| uncleanable_reason(s).is_some())
                    .count(),
            ),
        ),
        (
            "Overdue (max.compaction.lag.ms)",
            count(
                statuses
                    .iter()
                    .filter(|s| s.max_compaction_delay_ms.is_some_and(|d| d > 0))
                    .count(),
            ),
        ),
        (
            "Tombstones held for groups",
            format::count(i64::try_from(held).unwrap_or(i64::MAX)),
        ),
    ];
    let mut html = String::from("<h2>Log cleaner</h2><dl class=\"cards\" id=\"cleaner\">");
    for (name, value) in cards {
        let _ = write!(
            html,
            "<div><dt>{}</dt><dd>{}</dd></div>",
            esc(name),
            esc(&value)
        );
    }
    html.push_str(
        "</dl><p class=\"muted\">Backlog: partitions dirty enough (or overdue) that no thread \
         is cleaning yet. Figures count the partitions listed below.</p>",
    );
    html
}

/// The partitions that cannot be cleaned now, each with its reason (a panicked pass, a
/// failing one, a blocked archive, too little disk space).
fn uncleanable_list(rows: &[&PartitionState]) -> String {
    let mut items = String::new();
    for p in rows {
        let Some(s) = &p.status else { continue };
        let Some(reason) = uncleanable_reason(s) else {
            continue;
        };
        let detail = s
            .uncleanable
            .as_deref()
            .or(s.last_error.as_deref())
            .or(s.archive_blocked.as_deref())
            .or(s.waiting_for.as_deref())
            .unwrap_or("");
        let _ = write!(
            items,
            "<li><a href=\"{}\">{}-{}</a>: {} <span class=\"muted\">{}</span></li>",
            topic_path(&p.topic),
            esc(&p.topic),
            p.partition.index,
            esc(&reason.replace('_', " ")),
            esc(detail)
        );
    }
    if items.is_empty() {
        String::new()
    } else {
        format!("<h2>Not cleanable now</h2><ul id=\"uncleanable\">{items}</ul>")
    }
}
