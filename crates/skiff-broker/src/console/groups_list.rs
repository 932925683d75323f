//! The list of consumer groups: every group the caller may describe (ListGroups v5), its
//! type, state and members, and its total lag over the partitions it has committed. One
//! batched request of each kind for all the groups shown (at most [`MAX_GROUPS`]).

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use axum::extract::Query;
use axum::response::Response;
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, DescribeGroupsRequest, GroupId, RequestKind,
    ShareGroupDescribeRequest,
};

use super::super::call::{expect_response, Caller};
use super::super::format;
use super::super::page::{esc, notice, table, url, Page, PageError, Section};
use super::{
    committed, error_name, lag, list_groups, list_offsets, sb, DoneQuery, Listed, LATEST,
    MAX_GROUPS,
};

/// Members per group: DescribeGroups v5 for classic groups, ConsumerGroupDescribe for
/// consumer groups, ShareGroupDescribe for share groups (one request each).
async fn member_counts(
    caller: &Caller,
    groups: &[&Listed],
) -> Result<HashMap<String, usize>, PageError> {
    let ids = |kind: &str| -> Vec<GroupId> {
        groups
            .iter()
            .filter(|g| g.group_type == kind)
            .map(|g| GroupId(sb(&g.id)))
            .collect()
    };
    let mut out = HashMap::new();
    let classic = ids("classic");
    if !classic.is_empty() {
        let r = expect_response!(
            caller
                .kafka(
                    ApiKey::DescribeGroups,
                    5,
                    RequestKind::DescribeGroups(
                        DescribeGroupsRequest::default().with_groups(classic)
                    )
                )
                .await?,
            DescribeGroups
        )?;
        for g in r.groups.into_iter().filter(|g| g.error_code == 0) {
            out.insert(g.group_id.0.to_string(), g.members.len());
        }
    }
    let consumer = ids("consumer");
    if !consumer.is_empty() {
        let request = ConsumerGroupDescribeRequest::default().with_group_ids(consumer);
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
        for g in r.groups.into_iter().filter(|g| g.error_code == 0) {
            out.insert(g.group_id.0.to_string(), g.members.len());
        }
    }
    let share = ids("share");
    if !share.is_empty() {
        let request = ShareGroupDescribeRequest::default().with_group_ids(share);
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
        for g in r.groups.into_iter().filter(|g| g.error_code == 0) {
            out.insert(g.group_id.0.to_string(), g.members.len());
        }
    }
    Ok(out)
}

/// GET /console/groups: every group the caller may describe, with its total lag.
pub(super) async fn page(
    caller: Caller,
    Query(q): Query<DoneQuery>,
) -> Result<Response, PageError> {
    let mut page = Page::new(Section::Groups, "Consumer groups");
    let mut html = notice(q.done.as_deref());
    let all = list_groups(&caller).await?;
    let total = all.len();
    let shown: Vec<&Listed> = all.iter().take(MAX_GROUPS).collect();
    let members = member_counts(&caller, &shown).await?;
    let with_offsets: Vec<String> = shown
        .iter()
        .filter(|g| g.group_type != "share")
        .map(|g| g.id.clone())
        .collect();
    let committed = committed(&caller, &with_offsets).await?;
    let partitions: BTreeSet<(String, i32)> = committed
        .values()
        .flat_map(|(_, rows)| rows.iter())
        .filter(|r| r.error == 0 && r.offset >= 0)
        .map(|r| (r.topic.clone(), r.partition))
        .collect();
    let ends = list_offsets(&caller, &partitions, LATEST).await?;
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|g| {
            let lag_cell = match committed.get(&g.id) {
                Some((0, rows)) => {
                    let lags: Vec<i64> = rows
                        .iter()
                        .filter(|r| r.error == 0)
                        .filter_map(|r| lag(r.offset, ends.get(&(r.topic.clone(), r.partition))))
                        .collect();
                    if lags.is_empty() {
                        "-".to_string()
                    } else {
                        format::count(lags.iter().sum())
                    }
                }
                Some((code, _)) => esc(&error_name(*code)),
                None => "-".to_string(),
            };
            vec![
                format!(
                    "<a href=\"/console/groups/{}\">{}</a>",
                    url(&g.id),
                    esc(&g.id)
                ),
                esc(&g.group_type),
                esc(&g.protocol_type),
                esc(&g.state),
                members
                    .get(&g.id)
                    .map_or("-".to_string(), |n| format::count(*n as i64)),
                lag_cell,
            ]
        })
        .collect();
    html.push_str(
        "<p class=\"muted\">Groups you may describe. Lag is the log end offset (high \
         watermark) minus the committed offset, summed over the group's committed \
         partitions.</p>",
    );
    html.push_str(
        &table(
            "Consumer groups",
            &[
                "Group",
                "Type",
                "Protocol type",
                "State",
                "Members",
                "Total lag",
            ],
            &[false, false, false, false, true, true],
            &rows,
        )
        .replacen("<table>", "<table id=\"groups\">", 1),
    );
    if total > MAX_GROUPS {
        let _ = write!(
            html,
            "<p class=\"muted\">Showing the first {} of {} groups (by id).</p>",
            format::count(MAX_GROUPS as i64),
            format::count(total as i64)
        );
    }
    page.push(&html);
    Ok(page.render(&caller))
}
