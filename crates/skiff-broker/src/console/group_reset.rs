//! Resetting an empty group's committed offsets, as `kafka-consumer-groups --reset-offsets
//! --execute` does: to the earliest or latest offset, to the first offset at or after a
//! timestamp (the log end when no record is that recent), or to a given offset (kept inside
//! the log's range); over every partition the group has committed, or one topic's.
//!
//! Only while the group has no active member (state Empty or Dead), else 409: a running
//! consumer would overwrite the reset with its next commit. The targets come from
//! ListOffsets and are committed with OffsetCommit v9 (generation −1, no member id: the
//! standalone commit the coordinator accepts for an empty group), both as the caller, so
//! TOPIC DESCRIBE, GROUP READ and TOPIC READ apply as they do to the Kafka tool. The form
//! (on the group's page) is left out in read-only mode and without READ on the group.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Form;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{ApiKey, GroupId, OffsetCommitRequest, RequestKind, TopicName};
use serde::Deserialize;

use super::super::call::{expect_response, Caller};
use super::super::forms::{self, Action};
use super::super::page::{esc, url, PageError};
use super::group_page::{describe_classic, find_group};
use super::{committed, error_name, list_offsets, resettable, sb, EARLIEST, LATEST};
use crate::authz::{AclOperation, ResourceType};

/// The reset form's fields.
#[derive(Deserialize)]
pub(super) struct ResetForm {
    /// `earliest`, `latest`, `timestamp` or `offset`.
    to: Option<String>,
    timestamp: Option<String>,
    offset: Option<String>,
    /// Empty: every topic with committed offsets.
    topic: Option<String>,
}

/// Where to move the offsets.
enum Target {
    Earliest,
    Latest,
    Timestamp(i64),
    Offset(i64),
}

impl Target {
    fn parse(form: &ResetForm) -> Result<Target, PageError> {
        let number = |v: &Option<String>, name: &str| -> Result<i64, PageError> {
            forms::required(v, name)?
                .parse::<i64>()
                .ok()
                .filter(|n| *n >= 0)
                .ok_or_else(|| PageError::bad_request(format!("{name} must be a whole number ≥ 0")))
        };
        match forms::required(&form.to, "reset to")? {
            "earliest" => Ok(Target::Earliest),
            "latest" => Ok(Target::Latest),
            "timestamp" => Ok(Target::Timestamp(number(&form.timestamp, "timestamp")?)),
            "offset" => Ok(Target::Offset(number(&form.offset, "offset")?)),
            other => Err(PageError::bad_request(format!(
                "unknown reset target \"{other}\" (earliest, latest, timestamp or offset)"
            ))),
        }
    }

    fn describe(&self) -> String {
        match self {
            Target::Earliest => "the earliest offset".to_string(),
            Target::Latest => "the latest offset".to_string(),
            Target::Timestamp(ts) => format!("timestamp {ts}"),
            Target::Offset(o) => format!("offset {o}"),
        }
    }
}

/// A refusal carrying a Kafka error code: authorization failures are 403, the rest 409 (the
/// broker's state does not allow the change now).
fn refused(code: i16, what: &str) -> PageError {
    let status = if matches!(code, 29..=31) {
        StatusCode::FORBIDDEN
    } else {
        StatusCode::CONFLICT
    };
    PageError::new(status, format!("{what}: {}", error_name(code)))
}

/// POST /console/groups/{group}/reset.
pub(super) async fn reset(
    Action(caller): Action,
    Path(group): Path<String>,
    Form(form): Form<ResetForm>,
) -> Result<Response, PageError> {
    let target = Target::parse(&form)?;
    // DESCRIBE first: the same 403 whether the group exists.
    describe_classic(&caller, &group).await?;
    let listed = find_group(&caller, &group).await?;
    if listed.group_type == "share" {
        return Err(PageError::bad_request(
            "share groups keep start offsets, not committed offsets: the console does not reset them",
        ));
    }
    if !resettable(&listed.state) {
        return Err(PageError::new(
            StatusCode::CONFLICT,
            format!(
                "consumer group \"{group}\" is {}: offsets can only be reset while the group is \
                 Empty (stop its consumers first), as kafka-consumer-groups --reset-offsets \
                 requires. Nothing was changed.",
                listed.state
            ),
        ));
    }
    let scope = form
        .topic
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let fetched = committed(&caller, std::slice::from_ref(&group)).await?;
    let (code, rows) = fetched
        .into_iter()
        .next()
        .map(|(_, v)| v)
        .unwrap_or_default();
    if code != 0 {
        return Err(refused(code, "reading the committed offsets failed"));
    }
    if let Some(bad) = rows.iter().find(|r| r.error != 0) {
        return Err(refused(
            bad.error,
            &format!(
                "reading the committed offset of {}-{} failed",
                bad.topic, bad.partition
            ),
        ));
    }
    let partitions: BTreeSet<(String, i32)> = rows
        .iter()
        .filter(|r| scope.is_none_or(|t| r.topic == t))
        .map(|r| (r.topic.clone(), r.partition))
        .collect();
    if partitions.is_empty() {
        return Err(PageError::bad_request(match scope {
            Some(t) => {
                format!("consumer group \"{group}\" has no committed offsets for topic \"{t}\"")
            }
            None => format!("consumer group \"{group}\" has no committed offsets to reset"),
        }));
    }
    let targets = targets(&caller, &partitions, &target).await?;
    commit(&caller, &group, &targets).await?;
    let message = format!(
        "Reset {} partition{} of consumer group {group} to {}.",
        targets.len(),
        if targets.len() == 1 { "" } else { "s" },
        target.describe()
    );
    Ok(forms::done(&format!("/console/groups/{}", url(&group)), &message).into_response())
}

/// The new offset of every partition, from ListOffsets as the caller; any partition's error
/// refuses the whole reset (nothing is committed).
async fn targets(
    caller: &Caller,
    partitions: &BTreeSet<(String, i32)>,
    target: &Target,
) -> Result<BTreeMap<(String, i32), i64>, PageError> {
    let lookup = |ts: i64| list_offsets(caller, partitions, ts);
    let one = |answers: &HashMap<(String, i32), Result<i64, i16>>,
               tp: &(String, i32)|
     -> Result<i64, PageError> {
        match answers.get(tp) {
            Some(Ok(o)) => Ok(*o),
            Some(Err(c)) => Err(refused(
                *c,
                &format!("looking up the offsets of {}-{} failed", tp.0, tp.1),
            )),
            None => Err(PageError::internal(format!(
                "ListOffsets did not answer for {}-{}",
                tp.0, tp.1
            ))),
        }
    };
    let mut out = BTreeMap::new();
    match *target {
        Target::Earliest | Target::Latest => {
            let ts = if matches!(target, Target::Earliest) {
                EARLIEST
            } else {
                LATEST
            };
            let answers = lookup(ts).await?;
            for tp in partitions {
                out.insert(tp.clone(), one(&answers, tp)?);
            }
        }
        Target::Timestamp(ts) => {
            let found = lookup(ts).await?;
            let latest = lookup(LATEST).await?;
            for tp in partitions {
                let o = one(&found, tp)?;
                // No record that recent: the log end, as the Kafka tool does.
                let o = if o < 0 { one(&latest, tp)? } else { o };
                out.insert(tp.clone(), o);
            }
        }
        Target::Offset(wanted) => {
            let earliest = lookup(EARLIEST).await?;
            let latest = lookup(LATEST).await?;
            for tp in partitions {
                let (lo, hi) = (one(&earliest, tp)?, one(&latest, tp)?);
                out.insert(tp.clone(), wanted.clamp(lo, hi.max(lo)));
            }
        }
    }
    Ok(out)
}

/// OffsetCommit v9 as the caller: generation −1 and no member id, a standalone commit.
async fn commit(
    caller: &Caller,
    group: &str,
    targets: &BTreeMap<(String, i32), i64>,
) -> Result<(), PageError> {
    let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
    for ((topic, partition), offset) in targets {
        if topics.last().is_none_or(|t| t.name.0.as_str() != topic) {
            topics.push(OffsetCommitRequestTopic::default().with_name(TopicName(sb(topic))));
        }
        if let Some(t) = topics.last_mut() {
            t.partitions.push(
                OffsetCommitRequestPartition::default()
                    .with_partition_index(*partition)
                    .with_committed_offset(*offset)
                    .with_committed_leader_epoch(-1)
                    .with_committed_metadata(Some(sb(""))),
            );
        }
    }
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(sb(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(sb(""))
        .with_group_instance_id(None)
        .with_topics(topics);
    let response = expect_response!(
        caller
            .kafka(ApiKey::OffsetCommit, 9, RequestKind::OffsetCommit(request))
            .await?,
        OffsetCommit
    )?;
    let mut failed = Vec::new();
    let mut first_code = 0;
    for t in &response.topics {
        for p in t.partitions.iter().filter(|p| p.error_code != 0) {
            if first_code == 0 {
                first_code = p.error_code;
            }
            failed.push(format!(
                "{}-{} {}",
                t.name.0.as_str(),
                p.partition_index,
                error_name(p.error_code)
            ));
        }
    }
    if failed.is_empty() {
        return Ok(());
    }
    let committed = targets.len().saturating_sub(failed.len());
    Err(refused(
        first_code,
        &format!(
            "the commit was refused for {} partition(s), {committed} committed ({})",
            failed.len(),
            failed.join(", ")
        ),
    ))
}

/// The reset offsets form, unless the console is read-only or the caller may not READ the
/// group (OffsetCommit needs it).
pub(super) fn reset_form(
    caller: &Caller,
    group: &str,
    state: &str,
    topics: &BTreeSet<String>,
) -> Result<String, PageError> {
    if caller.console()?.read_only {
        return Ok(String::new());
    }
    let mut out = String::from("<h2>Reset offsets</h2>");
    if !caller.may(AclOperation::Read, ResourceType::Group, group) {
        out.push_str("<p class=\"muted\">Resetting offsets needs READ on the group.</p>");
        return Ok(out);
    }
    let _ = write!(
        out,
        "<p class=\"muted\">As <code>kafka-consumer-groups --reset-offsets --execute</code>: \
         only while the group is Empty (stop its consumers first). State now: {}.{}</p>",
        esc(state),
        if resettable(state) {
            ""
        } else {
            " A reset will be refused."
        }
    );
    let mut topic_options = String::new();
    for t in topics {
        let _ = write!(
            topic_options,
            "<option value=\"{}\">{}</option>",
            esc(t),
            esc(t)
        );
    }
    let _ = write!(
        out,
        "<form id=\"reset-offsets\" class=\"reset-offsets\" method=\"post\" \
         action=\"/console/groups/{path}/reset\" \
         data-confirm=\"Reset the committed offsets of consumer group {name}?\">\
         <fieldset><legend>New committed offsets</legend>\
         <label for=\"reset-to\">Reset to</label>\
         <select id=\"reset-to\" name=\"to\">\
         <option value=\"earliest\">Earliest offset</option>\
         <option value=\"latest\">Latest offset (log end)</option>\
         <option value=\"timestamp\">First offset at or after a timestamp</option>\
         <option value=\"offset\">A specific offset</option></select>\
         <label for=\"reset-timestamp\">Timestamp (epoch ms, for a timestamp reset)</label>\
         <input id=\"reset-timestamp\" name=\"timestamp\" type=\"number\" min=\"0\" \
         inputmode=\"numeric\" placeholder=\"{now}\">\
         <label for=\"reset-offset\">Offset (for a specific offset)</label>\
         <input id=\"reset-offset\" name=\"offset\" type=\"number\" min=\"0\" \
         inputmode=\"numeric\">\
         <label for=\"reset-topic\">Topics</label>\
         <select id=\"reset-topic\" name=\"topic\">\
         <option value=\"\">All topics with committed offsets</option>{topic_options}</select>\
         </fieldset><button type=\"submit\" class=\"danger\">Reset offsets</button></form>",
        path = url(group),
        name = esc(group),
        now = caller.broker().clock.now_ms(),
    );
    Ok(out)
}
