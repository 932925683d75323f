//! The cleaner's controls from the console (docs/compaction.md §5.9), with the HTTP API's
//! ACL requirements:
//! - `GET /console/topics/{topic}/compaction/dry-run[?partition=N]` (DESCRIBE): what a pass
//!   would remove now, per partition; nothing is written;
//! - `POST /console/topics/{topic}/compaction` (ALTER; a same-origin console form, refused in
//!   read-only mode): queues a pass per partition and redirects to the topic's page with the
//!   tickets;
//! - `GET /console/compaction/tickets/{id}` (DESCRIBE on the ticket's topic): one ticket.

use std::fmt::Write as _;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use super::super::call::Caller;
use super::super::format;
use super::super::forms::Action;
use super::super::page::{esc, table, url, Page, PageError, Section};
use super::{
    bytes_cell, compacted_topic, compaction_error, percent, ratio_cell, require_describe,
    topic_path,
};
use crate::authz::{AclOperation, ResourceType};
use crate::compaction::{DryRun, PassFigures};

/// A partition from a form or query: empty means every partition.
fn partition_choice(value: Option<&str>) -> Result<Option<i32>, PageError> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(p) => p
            .parse()
            .map(Some)
            .map_err(|_| PageError::bad_request(format!("partition {p:?} is not a number"))),
    }
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct PartitionParam {
    partition: Option<String>,
}

pub(super) async fn dry_run(
    caller: Caller,
    Path(name): Path<String>,
    query: Result<Query<PartitionParam>, QueryRejection>,
) -> Result<Response, PageError> {
    compacted_topic(&caller, &name)?;
    let Query(q) = query.map_err(|e| PageError::bad_request(e.body_text()))?;
    let partition = partition_choice(q.partition.as_deref())?;
    let broker = caller.broker().clone();
    let topic = name.clone();
    // A dry run reads the partition's segments: a blocking thread, as the API's route does.
    let runs = tokio::task::spawn_blocking(move || broker.compaction_dry_run(&topic, partition))
        .await
        .map_err(|e| PageError::internal(format!("dry run task failed: {e}")))?
        .map_err(compaction_error)?;
    let mut page = Page::new(Section::Compaction, format!("Dry run of {name}"));
    let _ = write!(
        page.body,
        "<p>What a compaction pass would do now. Nothing was written. \
         <a href=\"{}\">Back to the compaction of {}</a></p>",
        topic_path(&name),
        esc(&name)
    );
    let rows: Vec<Vec<String>> = runs.iter().map(dry_run_row).collect();
    let html = table(
        "Per partition: the range a pass would clean and what it would remove",
        &[
            "Partition",
            "Range",
            "Limited by",
            "Dirty ratio / threshold",
            "Picked by the cleaner now",
            "Keys in dirty range",
            "Records read",
            "Records removed",
            "Bytes before → after",
            "Tombstones removed / kept / held",
            "Segments rewritten",
        ],
        &[
            true, false, false, false, false, true, true, true, false, false, true,
        ],
        &rows,
    );
    page.push(&html.replacen("<table>", "<table id=\"dry-run-results\">", 1));
    Ok(page.render(&caller))
}

fn dry_run_row(d: &DryRun) -> Vec<String> {
    let i = d.partition;
    let f = &d.figures;
    let partial = if f.partial {
        format!(
            " <span class=\"muted\">(partial: the offset map fills at offset {}; the pass \
             would end there)</span>",
            f.end_offset
        )
    } else {
        String::new()
    };
    let groups: Vec<String> = f
        .holding_groups
        .iter()
        .map(|(g, n)| format!("{g}: {n}"))
        .collect();
    let held = if groups.is_empty() {
        String::new()
    } else {
        format!(" (by {})", groups.join(", "))
    };
    vec![
        i.to_string(),
        format!(
            "<span id=\"d{i}-range\">{} → {}</span>{partial}",
            f.first_dirty_offset, f.first_uncleanable_offset
        ),
        esc(&d.limited_by.replace('_', " ")),
        ratio_cell(
            Some(format!("d{i}-dirty")),
            d.dirty_ratio,
            d.min_cleanable_dirty_ratio,
        ),
        if d.eligible_now { "yes" } else { "no" }.to_string(),
        format!("<span id=\"d{i}-keys\">{}</span>", d.keys_in_dirty_range),
        format!("<span id=\"d{i}-read\">{}</span>", f.records_read),
        format!("<span id=\"d{i}-removed\">{}</span>", f.records_removed),
        format!(
            "{} → {}",
            bytes_cell(Some(format!("d{i}-before")), f.bytes_before),
            bytes_cell(Some(format!("d{i}-after")), f.bytes_after)
        ),
        esc(&format!(
            "{} / {} / {}{held}",
            f.tombstones_removed, f.tombstones_kept, f.tombstones_held_for_consumers
        )),
        f.segments_rewritten.to_string(),
    ]
}

pub(super) async fn compact_now(
    Action(caller): Action,
    Path(name): Path<String>,
    Form(form): Form<PartitionParam>,
) -> Result<Response, PageError> {
    require_describe(&caller, &name)?;
    if !caller.may(AclOperation::Alter, ResourceType::Topic, &name) {
        return Err(PageError::forbidden(
            "not authorized to compact this topic: compact now needs ALTER on it",
        ));
    }
    compacted_topic(&caller, &name)?;
    let partition = partition_choice(form.partition.as_deref())?;
    let tickets = caller
        .broker()
        .compact_now(&name, partition)
        .map_err(compaction_error)?;
    let ids: Vec<String> = tickets.iter().map(|t| t.id.to_string()).collect();
    let parts: Vec<String> = tickets.iter().map(|t| t.partition.to_string()).collect();
    let message = format!(
        "Compaction asked for partition {} of {name}: ticket {} (state below).",
        parts.join(", "),
        ids.join(", ")
    );
    Ok(Redirect::to(&format!(
        "{}?tickets={}&done={}",
        topic_path(&name),
        url(&ids.join(",")),
        url(&message)
    ))
    .into_response())
}

pub(super) async fn ticket_page(
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, PageError> {
    let id: u64 = id
        .parse()
        .map_err(|_| PageError::bad_request(format!("ticket id {id:?} is not a number")))?;
    let ticket = caller
        .broker()
        .compaction_ticket(id)
        .map_err(compaction_error)?;
    require_describe(&caller, &ticket.topic)?;
    let mut page = Page::new(Section::Compaction, format!("Compaction ticket {id}"));
    let mut items = vec![
        (
            "Topic",
            format!(
                "<a href=\"{}\">{}</a>",
                topic_path(&ticket.topic),
                esc(&ticket.topic)
            ),
        ),
        ("Partition", ticket.partition.to_string()),
        (
            "State",
            format!("<span id=\"ticket-state\">{}</span>", esc(ticket.state)),
        ),
        ("Requested", esc(&format::time_ms(ticket.requested_ms))),
        (
            "Finished",
            esc(&format::time_ms(ticket.finished_ms.unwrap_or(-1))),
        ),
    ];
    if let Some(e) = &ticket.error {
        items.push(("Error", esc(e)));
    }
    if let Some(p) = &ticket.pass {
        items.extend(pass_items(p));
    }
    let mut html = String::from("<dl class=\"cards\" id=\"ticket\">");
    for (name, value) in items {
        let _ = write!(html, "<div><dt>{name}</dt><dd>{value}</dd></div>");
    }
    html.push_str("</dl>");
    if matches!(ticket.state, "queued" | "running") {
        let _ = write!(
            html,
            "<p><a href=\"/console/compaction/tickets/{id}\">Reload</a> to follow the pass.</p>"
        );
    }
    page.push(&html);
    Ok(page.render(&caller))
}

/// The figures of a finished pass, as cards.
fn pass_items(p: &PassFigures) -> Vec<(&'static str, String)> {
    vec![
        (
            "Range cleaned",
            format!("{} → {}", p.first_dirty_offset, p.end_offset),
        ),
        ("Records read", p.records_read.to_string()),
        (
            "Records removed",
            format!("<span id=\"ticket-removed\">{}</span>", p.records_removed),
        ),
        (
            "Bytes before → after",
            format!(
                "{} → {}",
                bytes_cell(None, p.bytes_before),
                bytes_cell(None, p.bytes_after)
            ),
        ),
        (
            "Saved",
            if p.bytes_before > 0 {
                percent(1.0 - p.bytes_after as f64 / p.bytes_before as f64)
            } else {
                "-".into()
            },
        ),
        ("Tombstones removed", p.tombstones_removed.to_string()),
        ("Tombstones kept", p.tombstones_kept.to_string()),
        (
            "Held for groups",
            p.tombstones_held_for_consumers.to_string(),
        ),
        ("Segments rewritten", p.segments_rewritten.to_string()),
        ("Segments unchanged", p.segments_unchanged.to_string()),
        (
            "Segments skipped unread",
            format!("{} ({} bytes)", p.segments_skipped, p.bytes_skipped),
        ),
        (
            "Took",
            esc(&format::duration_ms(
                i64::try_from(p.duration_ms).unwrap_or(i64::MAX),
            )),
        ),
    ]
}
