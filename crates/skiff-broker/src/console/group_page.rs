//! One consumer group's page: its state, protocol and members (DescribeGroups v6 for classic
//! groups, ConsumerGroupDescribe for KIP-848 consumer groups, ShareGroupDescribe for share
//! groups), its committed offsets with the log end offsets and lag (OffsetFetch and
//! ListOffsets as the caller), its lag over the last minutes, and the reset offsets form.
//!
//! A caller without DESCRIBE on the group gets the same 403 whether the group exists or not:
//! DescribeGroups checks the ACL before it looks the group up.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::Response;
use bytes::Buf;
use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, ConsumerProtocolAssignment, DescribeGroupsRequest,
    GroupId, RequestKind, ShareGroupDescribeRequest,
};
use kafka_protocol::protocol::Decodable;

use super::super::call::{expect_response, Caller};
use super::super::chart::{line_chart, Line};
use super::super::format;
use super::super::history::{group_lag_series, INTERVAL, KEEP};
use super::super::page::{esc, html_response, notice, table, url, Page, PageError, Section};
use super::{
    committed, denied, error_name, error_text, lag, list_groups, list_offsets, resettable, sb,
    DoneQuery, Listed, GROUP_DENIED, LATEST,
};
use crate::authz::{AclOperation, ResourceType};

/// DescribeGroups v6 of one group as the caller; a refused DESCRIBE is the 403 of [`denied`].
pub(super) async fn describe_classic(
    caller: &Caller,
    group: &str,
) -> Result<DescribedGroup, PageError> {
    let request = DescribeGroupsRequest::default().with_groups(vec![GroupId(sb(group))]);
    let response = expect_response!(
        caller
            .kafka(
                ApiKey::DescribeGroups,
                6,
                RequestKind::DescribeGroups(request)
            )
            .await?,
        DescribeGroups
    )?;
    let d = response
        .groups
        .into_iter()
        .next()
        .ok_or_else(|| PageError::internal("DescribeGroups answered no group"))?;
    if d.error_code == GROUP_DENIED {
        return Err(denied(group));
    }
    Ok(d)
}

/// The group as ListGroups lists it to the caller, or a 404 (after [`describe_classic`]
/// has ruled out a refused DESCRIBE).
pub(super) async fn find_group(caller: &Caller, group: &str) -> Result<Listed, PageError> {
    list_groups(caller)
        .await?
        .into_iter()
        .find(|g| g.id == group)
        .ok_or_else(|| PageError::not_found(format!("there is no consumer group \"{group}\"")))
}

/// What a describe request says about the group, whichever kind it is.
#[derive(Default)]
struct Described {
    state: String,
    /// The classic protocol (assignor) in use, or the consumer/share group's assignor.
    assignor: String,
    epoch: Option<i32>,
    members: Vec<MemberRow>,
    error: Option<String>,
}

struct MemberRow {
    id: String,
    instance: Option<String>,
    client_id: String,
    host: String,
    /// (topic, partitions); `None` when the assignment is not known (a classic group that is
    /// not Stable, or an assignment that is not the consumer protocol's).
    assigned: Option<Vec<(String, Vec<i32>)>>,
}

/// A classic member's assignment in the consumer protocol's format (version, then the body).
fn decode_assignment(bytes: &[u8]) -> Option<Vec<(String, Vec<i32>)>> {
    let mut buf = bytes::Bytes::copy_from_slice(bytes);
    if buf.remaining() < 2 {
        return None;
    }
    let version = buf.get_i16().clamp(0, 3);
    let a = ConsumerProtocolAssignment::decode(&mut buf, version).ok()?;
    Some(
        a.assigned_partitions
            .into_iter()
            .map(|tp| (tp.topic.0.to_string(), tp.partitions))
            .collect(),
    )
}

async fn describe(
    caller: &Caller,
    listed: &Listed,
    classic: DescribedGroup,
) -> Result<Described, PageError> {
    let id = GroupId(sb(&listed.id));
    match listed.group_type.as_str() {
        "consumer" => {
            let request = ConsumerGroupDescribeRequest::default().with_group_ids(vec![id]);
            let r = expect_response!(
                caller
                    .kafka(
                        ApiKey::ConsumerGroupDescribe,
                        1,
                        RequestKind::ConsumerGroupDescribe(request)
                    )
                    .await?,
                ConsumerGroupDescribe
            )?;
            let Some(g) = r.groups.into_iter().next() else {
                return Err(PageError::internal(
                    "ConsumerGroupDescribe answered no group",
                ));
            };
            if g.error_code != 0 {
                return Ok(failed(&listed.state, g.error_code, g.error_message));
            }
            Ok(Described {
                state: g.group_state.to_string(),
                assignor: g.assignor_name.to_string(),
                epoch: Some(g.group_epoch),
                members: g
                    .members
                    .into_iter()
                    .map(|m| MemberRow {
                        id: m.member_id.to_string(),
                        instance: m.instance_id.map(|s| s.to_string()),
                        client_id: m.client_id.to_string(),
                        host: m.client_host.to_string(),
                        assigned: Some(
                            m.assignment
                                .topic_partitions
                                .into_iter()
                                .map(|t| (t.topic_name.0.to_string(), t.partitions))
                                .collect(),
                        ),
                    })
                    .collect(),
                error: None,
            })
        }
        "share" => {
            let request = ShareGroupDescribeRequest::default().with_group_ids(vec![id]);
            let r = expect_response!(
                caller
                    .kafka(
                        ApiKey::ShareGroupDescribe,
                        1,
                        RequestKind::ShareGroupDescribe(request)
                    )
                    .await?,
                ShareGroupDescribe
            )?;
            let Some(g) = r.groups.into_iter().next() else {
                return Err(PageError::internal("ShareGroupDescribe answered no group"));
            };
            if g.error_code != 0 {
                return Ok(failed(&listed.state, g.error_code, g.error_message));
            }
            Ok(Described {
                state: g.group_state.to_string(),
                assignor: g.assignor_name.to_string(),
                epoch: Some(g.group_epoch),
                members: g
                    .members
                    .into_iter()
                    .map(|m| MemberRow {
                        id: m.member_id.to_string(),
                        instance: None,
                        client_id: m.client_id.to_string(),
                        host: m.client_host.to_string(),
                        assigned: Some(
                            m.assignment
                                .topic_partitions
                                .into_iter()
                                .map(|t| (t.topic_name.0.to_string(), t.partitions))
                                .collect(),
                        ),
                    })
                    .collect(),
                error: None,
            })
        }
        _ => {
            if classic.error_code != 0 {
                return Ok(failed(
                    &listed.state,
                    classic.error_code,
                    classic.error_message,
                ));
            }
            let consumer_protocol = classic.protocol_type.as_str() == "consumer";
            Ok(Described {
                state: classic.group_state.to_string(),
                assignor: classic.protocol_data.to_string(),
                epoch: None,
                members: classic
                    .members
                    .into_iter()
                    .map(|m| MemberRow {
                        id: m.member_id.to_string(),
                        instance: m.group_instance_id.map(|s| s.to_string()),
                        client_id: m.client_id.to_string(),
                        host: m.client_host.to_string(),
                        assigned: if consumer_protocol && !m.member_assignment.is_empty() {
                            decode_assignment(&m.member_assignment)
                        } else {
                            None
                        },
                    })
                    .collect(),
                error: None,
            })
        }
    }
}

fn failed(
    state: &str,
    code: i16,
    message: Option<kafka_protocol::protocol::StrBytes>,
) -> Described {
    Described {
        state: state.to_string(),
        error: Some(error_text(code, message.as_deref())),
        ..Described::default()
    }
}

/// `s` escaped, or `-` when empty.
fn or_dash(s: &str) -> String {
    if s.is_empty() {
        "-".to_string()
    } else {
        esc(s)
    }
}

/// `orders: 0, 1; payments: 2`.
fn assigned_text(assigned: &Option<Vec<(String, Vec<i32>)>>) -> String {
    match assigned {
        None => "<span class=\"muted\">-</span>".to_string(),
        Some(topics) if topics.is_empty() => "<span class=\"muted\">none</span>".to_string(),
        Some(topics) => {
            let mut sorted = topics.clone();
            sorted.sort();
            sorted
                .iter()
                .map(|(t, ps)| {
                    let mut ps = ps.clone();
                    ps.sort_unstable();
                    let ps: Vec<String> = ps.iter().map(i32::to_string).collect();
                    format!("{}: {}", esc(t), ps.join(", "))
                })
                .collect::<Vec<_>>()
                .join("; ")
        }
    }
}

/// GET /console/groups/{group}.
pub(super) async fn page(
    caller: Caller,
    Path(group): Path<String>,
    Query(q): Query<DoneQuery>,
) -> Result<Response, PageError> {
    let classic = describe_classic(&caller, &group).await?;
    let listed = find_group(&caller, &group).await?;
    let described = describe(&caller, &listed, classic).await?;
    let is_share = listed.group_type == "share";
    let mut page = Page::new(Section::Groups, format!("Consumer group {group}"));
    let mut html = notice(q.done.as_deref());
    html.push_str("<p><a href=\"/console/groups\">All consumer groups</a></p>");
    if let Some(e) = &described.error {
        let _ = write!(html, "<p class=\"error\" role=\"alert\">{}</p>", esc(e));
    }

    // Committed offsets, log end offsets and lag.
    let mut offsets_html = String::new();
    let mut total_lag: Option<i64> = None;
    let mut topics: BTreeSet<String> = BTreeSet::new();
    if is_share {
        offsets_html.push_str(
            "<p class=\"muted\">Share groups keep per-partition start offsets, not committed \
             offsets: there is no consumer lag to show.</p>",
        );
    } else {
        let fetched = committed(&caller, std::slice::from_ref(&group)).await?;
        let (code, rows) = fetched
            .into_iter()
            .next()
            .map(|(_, v)| v)
            .unwrap_or_default();
        if code != 0 {
            let _ = write!(
                offsets_html,
                "<p class=\"error\" role=\"alert\">Committed offsets: {}</p>",
                esc(&error_name(code))
            );
        }
        let partitions: BTreeSet<(String, i32)> = rows
            .iter()
            .filter(|r| r.error == 0 && r.offset >= 0)
            .map(|r| (r.topic.clone(), r.partition))
            .collect();
        let ends = list_offsets(&caller, &partitions, LATEST).await?;
        let mut cells = Vec::with_capacity(rows.len());
        for r in &rows {
            topics.insert(r.topic.clone());
            let end = ends.get(&(r.topic.clone(), r.partition));
            let (committed_cell, end_cell, lag_cell) = if r.error != 0 {
                (esc(&error_name(r.error)), "-".to_string(), "-".to_string())
            } else {
                let end_cell = match end {
                    Some(Ok(e)) => format::count(*e),
                    Some(Err(c)) => esc(&error_name(*c)),
                    None => "-".to_string(),
                };
                let lag = lag(r.offset, end);
                if let Some(l) = lag {
                    total_lag = Some(total_lag.unwrap_or(0) + l);
                }
                (
                    if r.offset >= 0 {
                        format::count(r.offset)
                    } else {
                        "-".to_string()
                    },
                    end_cell,
                    lag.map_or("-".to_string(), format::count),
                )
            };
            cells.push(vec![
                format!(
                    "<a href=\"/console/topics/{}\">{}</a>",
                    url(&r.topic),
                    esc(&r.topic)
                ),
                r.partition.to_string(),
                committed_cell,
                end_cell,
                lag_cell,
                esc(&r.metadata),
            ]);
        }
        offsets_html.push_str(
            &table(
                "Committed offsets",
                &[
                    "Topic",
                    "Partition",
                    "Committed offset",
                    "Log end offset",
                    "Lag",
                    "Metadata",
                ],
                &[false, true, true, true, true, false],
                &cells,
            )
            .replacen("<table>", "<table id=\"offsets\">", 1),
        );
    }

    // Summary cards.
    let mut cards = vec![
        ("Type", esc(&listed.group_type)),
        ("State", esc(&described.state)),
        ("Protocol type", or_dash(&listed.protocol_type)),
        (
            if listed.group_type == "classic" {
                "Protocol (assignor)"
            } else {
                "Assignor"
            },
            or_dash(&described.assignor),
        ),
        ("Members", format::count(described.members.len() as i64)),
    ];
    if let Some(epoch) = described.epoch {
        cards.push(("Group epoch", epoch.to_string()));
    }
    if !is_share {
        cards.push((
            "Total lag",
            total_lag.map_or("-".to_string(), format::count),
        ));
    }
    html.push_str("<dl class=\"cards\" id=\"group-summary\">");
    for (name, value) in cards {
        let _ = write!(html, "<div><dt>{name}</dt><dd>{value}</dd></div>");
    }
    html.push_str("</dl>");

    // Members.
    html.push_str("<h2>Members</h2>");
    let member_rows: Vec<Vec<String>> = described
        .members
        .iter()
        .map(|m| {
            vec![
                format!("<span class=\"mono\">{}</span>", esc(&m.id)),
                m.instance.as_deref().map_or("-".to_string(), esc),
                esc(&m.client_id),
                esc(&m.host),
                assigned_text(&m.assigned),
            ]
        })
        .collect();
    html.push_str(
        &table(
            "Members",
            &[
                "Member id",
                "Instance id",
                "Client id",
                "Host",
                "Assigned partitions",
            ],
            &[false; 5],
            &member_rows,
        )
        .replacen("<table>", "<table id=\"members\">", 1),
    );

    html.push_str("<h2>Committed offsets</h2>");
    html.push_str(&offsets_html);

    if !is_share {
        html.push_str("<h2>Lag over the last minutes</h2>");
        html.push_str(&lag_chart(&caller, &group)?);
        html.push_str(&reset_form(&caller, &group, &listed.state, &topics)?);
    }
    page.push(&html);
    Ok(page.render(&caller))
}

/// The group's total lag as the history sampled it, reloaded by the script every sample.
fn lag_chart(caller: &Caller, group: &str) -> Result<String, PageError> {
    Ok(format!(
        "<div class=\"charts\" id=\"lag-chart\" data-refresh=\"/console/groups/{}/lag-chart\" \
         data-interval=\"{}\">{}</div>",
        url(group),
        INTERVAL.as_millis(),
        lag_chart_inner(caller, group)?
    ))
}

fn lag_chart_inner(caller: &Caller, group: &str) -> Result<String, PageError> {
    let console = caller.console()?;
    let points = console.history.series(&group_lag_series(group));
    let span = i64::try_from(INTERVAL.as_millis()).unwrap_or(5000) * KEEP as i64;
    let mut out = line_chart(
        "Total lag",
        &[Line {
            name: "total lag",
            points: &points,
        }],
        caller.broker().clock.now_ms(),
        span,
        |v| format::count(v.round() as i64),
    );
    if points.is_empty() {
        out.push_str("<p class=\"muted\">The chart fills in as samples are taken (every 5 s).</p>");
    }
    Ok(out)
}

/// GET /console/groups/{group}/lag-chart: the chart alone, for the script's reload; the same
/// DESCRIBE check as the page.
pub(super) async fn lag_fragment(
    caller: Caller,
    Path(group): Path<String>,
) -> Result<Response, PageError> {
    describe_classic(&caller, &group).await?;
    Ok(html_response(
        StatusCode::OK,
        lag_chart_inner(&caller, &group)?,
    ))
}

/// The reset offsets form, unless the console is read-only or the caller may not READ the
/// group (OffsetCommit needs it).
fn reset_form(
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
