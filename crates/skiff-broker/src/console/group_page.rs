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
use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::{ApiKey, DescribeGroupsRequest, GroupId, RequestKind};

use super::super::call::{expect_response, Caller};
use super::super::chart::{line_chart, Line};
use super::super::format;
use super::super::history::{group_lag_series, INTERVAL, KEEP};
use super::super::page::{esc, html_response, notice, table, url, Page, PageError, Section};
use super::group_members::{describe, members_table};
use super::group_reset::reset_form;
use super::{
    committed, denied, error_name, lag, list_groups, list_offsets, sb, DoneQuery, Listed,
    GROUP_DENIED, LATEST,
};

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

/// `s` escaped, or `-` when empty.
fn or_dash(s: &str) -> String {
    if s.is_empty() {
        "-".to_string()
    } else {
        esc(s)
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

    let offsets = if is_share {
        Offsets {
            html: "<p class=\"muted\">Share groups keep per-partition start offsets, not \
                   committed offsets: there is no consumer lag to show.</p>"
                .to_string(),
            ..Offsets::default()
        }
    } else {
        offsets_section(&caller, &group).await?
    };

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
            offsets.total_lag.map_or("-".to_string(), format::count),
        ));
    }
    html.push_str("<dl class=\"cards\" id=\"group-summary\">");
    for (name, value) in cards {
        let _ = write!(html, "<div><dt>{name}</dt><dd>{value}</dd></div>");
    }
    html.push_str("</dl>");

    html.push_str("<h2>Members</h2>");
    html.push_str(&members_table(&described));

    html.push_str("<h2>Committed offsets</h2>");
    html.push_str(&offsets.html);

    if !is_share {
        html.push_str("<h2>Lag over the last minutes</h2>");
        html.push_str(&lag_chart(&caller, &group)?);
        html.push_str(&reset_form(
            &caller,
            &group,
            &listed.state,
            &offsets.topics,
        )?);
    }
    page.push(&html);
    Ok(page.render(&caller))
}

/// The committed offsets table (`id="offsets"`), the total lag and the committed topics.
#[derive(Default)]
struct Offsets {
    html: String,
    total_lag: Option<i64>,
    topics: BTreeSet<String>,
}

/// Committed offsets (OffsetFetch v9) beside the log end offsets (ListOffsets latest), as the
/// caller: lag = log end − committed, the figures `kafka-consumer-groups --describe` prints.
async fn offsets_section(caller: &Caller, group: &str) -> Result<Offsets, PageError> {
    let mut html = String::new();
    let mut total_lag: Option<i64> = None;
    let mut topics: BTreeSet<String> = BTreeSet::new();
    let fetched = committed(caller, &[group.to_string()]).await?;
    let (code, rows) = fetched
        .into_iter()
        .next()
        .map(|(_, v)| v)
        .unwrap_or_default();
    if code != 0 {
        let _ = write!(
            html,
            "<p class=\"error\" role=\"alert\">Committed offsets: {}</p>",
            esc(&error_name(code))
        );
    }
    let partitions: BTreeSet<(String, i32)> = rows
        .iter()
        .filter(|r| r.error == 0 && r.offset >= 0)
        .map(|r| (r.topic.clone(), r.partition))
        .collect();
    let ends = list_offsets(caller, &partitions, LATEST).await?;
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
    html.push_str(
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
    Ok(Offsets {
        html,
        total_lag,
        topics,
    })
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
