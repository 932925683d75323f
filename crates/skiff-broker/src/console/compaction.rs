//! The compaction pages: what no other Kafka console can show, because only Skiff's cleaner
//! says why a compacted partition is or is not being cleaned (docs/compaction.md §5.6).
//!
//! - `GET /console/compaction`: the cleaner (threads, backlog, uncleanable partitions) and
//!   every compacted partition of the topics the caller may DESCRIBE (listed by a Metadata
//!   request run as the caller, so the ACL filtering is Kafka's).
//! - `GET /console/topics/{topic}/compaction`: one topic's partitions in detail, the dry run
//!   and compact-now buttons, the tickets of a compact-now, a key lookup and the snapshot link.
//! - `GET /console/topics/{topic}/compaction/dry-run`, `POST /console/topics/{topic}/compaction`,
//!   `GET /console/compaction/tickets/{id}`: the cleaner's controls.
//!
//! The Kafka protocol has no request for compaction state, the cleaner's controls or the key
//! index, so these pages read the broker directly (the same functions the HTTP API's routes
//! call: `Broker::compaction_status(es)`, `Broker::compaction_dry_run`, `Broker::compact_now`,
//! `Broker::lookup_key_async`) behind the HTTP API's ACL checks: DESCRIBE on the topic to see
//! it and dry-run it, ALTER to compact now, READ and DESCRIBE to look up a key or download a
//! snapshot. A topic the caller may not DESCRIBE gets the same 403 whether or not it exists.
//!
//! Modules: this one holds the routes and what the pages share (access checks, the figure
//! cells); [`overview`], [`topic`] (with its key lookup, [`lookup`]) and [`actions`] are the
//! pages.

#[path = "compaction_actions.rs"]
mod actions;
#[path = "compaction_lookup.rs"]
mod lookup;
#[path = "compaction_overview.rs"]
mod overview;
#[path = "compaction_topic.rs"]
mod topic;

use std::fmt::Write as _;
use std::sync::Arc;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use skiff_cleaner::{CompactionStatus, UncleanableReason};
use skiff_log::LogConfig;

use super::call::Caller;
use super::format;
use super::page::{esc, url, PageError};
use crate::authz::AclOperation;
use crate::compaction::CompactionError;
use crate::http::HttpApi;
use crate::metrics::render::waiting_to_clean;
use crate::partition::Partition;
use crate::topics::Topic;

/// The compaction pages' routes (merged by `console::routes`).
pub fn routes() -> Router<Arc<HttpApi>> {
    Router::new()
        .route("/console/compaction", get(overview::page))
        .route(
            "/console/compaction/tickets/{id}",
            get(actions::ticket_page),
        )
        .route(
            "/console/topics/{topic}/compaction",
            get(topic::page).post(actions::compact_now),
        )
        .route(
            "/console/topics/{topic}/compaction/dry-run",
            get(actions::dry_run),
        )
        .route(
            "/console/topics/{topic}/compaction/tickets",
            get(topic::tickets_fragment),
        )
}

/// 403 unless the caller may DESCRIBE `topic` (checked before the topic is looked up, so
/// the refusal is the same whether or not it exists).
fn require_describe(caller: &Caller, topic: &str) -> Result<(), PageError> {
    super::topics::require_topic(caller, AclOperation::Describe, topic)
}

/// The topic, once the caller may DESCRIBE it: 404 when it does not exist, 409 when its
/// `cleanup.policy` has no `compact` (it has no compaction to show).
fn compacted_topic(caller: &Caller, name: &str) -> Result<Arc<Topic>, PageError> {
    require_describe(caller, name)?;
    let topic = caller
        .broker()
        .topics
        .get(name)
        .ok_or_else(|| PageError::not_found(format!("topic {name} does not exist")))?;
    if !is_compacted(&topic) {
        return Err(PageError::new(
            StatusCode::CONFLICT,
            format!(
                "topic {name} is not compacted: its cleanup.policy has no compact, so the log \
                 cleaner never looks at it (set cleanup.policy=compact or compact,delete)"
            ),
        ));
    }
    Ok(topic)
}

fn is_compacted(topic: &Topic) -> bool {
    topic
        .partition(0)
        .is_some_and(|p| p.log.config().cleanup_policy.compact)
}

/// A compaction control's refusal as a page.
fn compaction_error(e: CompactionError) -> PageError {
    let status = match &e {
        CompactionError::UnknownTopicOrPartition(_) | CompactionError::UnknownTicket(_) => {
            StatusCode::NOT_FOUND
        }
        CompactionError::NotCompacted(_) => StatusCode::CONFLICT,
        CompactionError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        CompactionError::Failed(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    PageError::new(status, e.to_string())
}

/// A partition with what the cleaner last planned for it (None: not planned yet).
struct PartitionState {
    topic: String,
    partition: Arc<Partition>,
    config: LogConfig,
    status: Option<CompactionStatus>,
}

/// The partitions of `topic` in order, with their statuses from `statuses`.
fn partition_states(
    topic: &Topic,
    statuses: &[(String, i32, CompactionStatus)],
) -> Vec<PartitionState> {
    let mut parts = topic.partitions();
    parts.sort_by_key(|p| p.index);
    parts
        .into_iter()
        .map(|p| PartitionState {
            topic: topic.name.clone(),
            config: p.log.config(),
            status: statuses
                .iter()
                .find(|(t, i, _)| *t == topic.name && *i == p.index)
                .map(|(_, _, s)| s.clone()),
            partition: p,
        })
        .collect()
}

/// The path of a topic's compaction page.
fn topic_path(topic: &str) -> String {
    format!("/console/topics/{}/compaction", url(topic))
}

/// A byte count for people, with the exact figure in the `<data>` element's value.
fn bytes_cell(id: Option<String>, n: u64) -> String {
    format!(
        "<data{} value=\"{n}\">{}</data>",
        id_attr(id),
        esc(&format::bytes(n))
    )
}

/// ` id="…"` for an element tests and browser tests find, or nothing.
fn id_attr(id: Option<String>) -> String {
    id.map(|i| format!(" id=\"{}\"", esc(&i)))
        .unwrap_or_default()
}

/// A ratio (0..=1) as a percentage with one decimal.
fn percent(r: f64) -> String {
    format!("{:.1}%", r * 100.0)
}

/// The dirty ratio against its threshold: a bar (a CSS class per 10% step, as inline styles
/// are blocked by the CSP) with a mark at the threshold, and the figures as text.
fn ratio_cell(id: Option<String>, ratio: f64, threshold: f64) -> String {
    let step = |r: f64| (r.clamp(0.0, 1.0) * 10.0).round() as u8;
    let over = if ratio > threshold { " over" } else { "" };
    let id = id_attr(id);
    format!(
        "<span class=\"bar ratio\" role=\"img\" aria-label=\"dirty ratio {r} of threshold {t}\">\
         <span class=\"w{w}{over}\"></span><i class=\"t{tw}\"></i></span> \
         <span{id}>{r}</span> <span class=\"muted\">of {t}</span>",
        r = percent(ratio),
        t = percent(threshold),
        w = step(ratio),
        tw = step(threshold),
    )
}

/// What the partition is doing, as a short state and a detail: the first that applies of
/// uncleanable (a pass panicked), in progress, archive blocked, failed (retried with
/// back-off), waiting (e.g. for disk space), overdue, dirty enough (backlog), idle.
fn state(s: Option<&CompactionStatus>, now_ms: i64) -> (&'static str, String) {
    let Some(s) = s else {
        return (
            "not planned",
            "the cleaner has not looked at this partition yet".to_string(),
        );
    };
    if let Some(why) = &s.uncleanable {
        return (
            "uncleanable",
            format!(
                "a pass panicked: {why}; skipped until the topic is deleted or the broker restarts"
            ),
        );
    }
    if s.in_progress {
        return ("in progress", "a cleaner thread is cleaning it now".into());
    }
    if let Some(why) = &s.archive_blocked {
        return (
            "archive blocked",
            format!("nothing is removed until the archive topic can take records: {why}"),
        );
    }
    if s.consecutive_failures > 0 {
        let error = s.last_error.as_deref().unwrap_or("unknown error");
        let retry = s
            .retry_at_ms
            .map(|t| format!("; retried in {}", format::duration_ms(t - now_ms)))
            .unwrap_or_default();
        return (
            "failed",
            format!("{} failure(s): {error}{retry}", s.consecutive_failures),
        );
    }
    if let Some(why) = &s.waiting_for {
        return ("waiting", why.clone());
    }
    if waiting_to_clean(s) {
        if s.max_compaction_delay_ms.is_some_and(|d| d > 0) {
            return (
                "overdue",
                "dirty data older than max.compaction.lag.ms: cleaned first".into(),
            );
        }
        return (
            "backlog",
            "dirty enough to clean: waiting for a cleaner thread".into(),
        );
    }
    if s.cleanable_bytes == 0 {
        return ("idle", "nothing cleanable now".into());
    }
    ("idle", "not above its min.cleanable.dirty.ratio".into())
}

/// The state as a cell: a tag and the detail.
fn state_cell(s: Option<&CompactionStatus>, now_ms: i64) -> String {
    let (name, detail) = state(s, now_ms);
    format!(
        "<span class=\"state {}\">{}</span> <span class=\"muted\">{}</span>",
        name.replace(' ', "-"),
        esc(name),
        esc(&detail)
    )
}

/// Why the cleanable range ends where it does (docs/compaction.md §2.2), in words.
fn limit_text(p: &PartitionState, s: &CompactionStatus) -> String {
    let log = &p.partition.log;
    match s.uncleanable_reason {
        None => "not planned yet".into(),
        Some(UncleanableReason::ActiveSegment) => format!(
            "active segment: it is never cleaned; it rolls after segment.ms ({}) or at \
             segment.bytes ({})",
            format::duration_ms(p.config.segment_ms),
            format::bytes(u64::try_from(p.config.segment_bytes).unwrap_or(0))
        ),
        Some(UncleanableReason::MinCompactionLag) => format!(
            "min.compaction.lag.ms ({}): the next segment holds records younger than that",
            format::duration_ms(p.config.min_compaction_lag_ms)
        ),
        Some(UncleanableReason::LastStableOffset) => {
            let (lso, hw) = (log.last_stable_offset(), log.high_watermark());
            if lso < hw {
                format!(
                    "open transaction: the last stable offset is {lso} (high watermark {hw}); \
                     cleaning never passes an undecided transaction"
                )
            } else {
                format!("last stable offset (the high watermark, {hw})")
            }
        }
    }
}

/// The first uncleanable offset and why, as a cell.
fn limit_cell(id: Option<String>, p: &PartitionState, s: &CompactionStatus) -> String {
    format!(
        "<span{}>{}</span> <span class=\"muted\">{}</span>",
        id_attr(id),
        s.first_uncleanable_offset,
        esc(&limit_text(p, s))
    )
}

/// The last pass: when it ended, how long it took, what it removed.
fn last_pass_text(s: &CompactionStatus) -> String {
    match (&s.last_pass, s.last_pass_end_ms) {
        (Some(pass), end) => format!(
            "{}, {}, {} records removed",
            end.map_or_else(|| "-".to_string(), format::time_ms),
            format::duration_ms(i64::try_from(pass.duration.as_millis()).unwrap_or(i64::MAX)),
            format::count(removed(pass))
        ),
        (None, _) => "none since the broker started".into(),
    }
}

/// Records a pass removed.
fn removed(pass: &skiff_cleaner::PassStats) -> i64 {
    i64::try_from(pass.records_read.saturating_sub(pass.records_kept)).unwrap_or(i64::MAX)
}

/// Tombstones held back for consumer groups and by which groups.
fn held_text(s: &CompactionStatus) -> String {
    if s.tombstones_held_for_consumers == 0 {
        return "0".into();
    }
    let mut out = format::count(i64::try_from(s.tombstones_held_for_consumers).unwrap_or(0));
    if !s.holding_groups.is_empty() {
        let groups: Vec<String> = s
            .holding_groups
            .iter()
            .map(|(g, n)| format!("{g}: {n}"))
            .collect();
        let _ = write!(out, " (by {})", groups.join(", "));
    }
    out
}
