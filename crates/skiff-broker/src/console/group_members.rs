//! Who is in a group and what each member is assigned, whichever protocol the group runs:
//! DescribeGroups v6 (already sent by the page, for its DESCRIBE check) for classic groups,
//! whose consumer-protocol assignments are decoded here; ConsumerGroupDescribe v1 for
//! KIP-848 consumer groups; ShareGroupDescribe v1 for share groups. All as the caller.

use bytes::Buf;
use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, ConsumerProtocolAssignment, GroupId, RequestKind,
    ShareGroupDescribeRequest,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use super::super::call::{expect_response, Caller};
use super::super::page::{esc, table, PageError};
use super::{error_text, sb, Listed};

/// What a describe request says about the group, whichever kind it is.
#[derive(Default)]
pub(super) struct Described {
    pub(super) state: String,
    /// The classic protocol (assignor) in use, or the consumer/share group's assignor.
    pub(super) assignor: String,
    /// The consumer or share group's epoch.
    pub(super) epoch: Option<i32>,
    pub(super) members: Vec<MemberRow>,
    /// The describe request's error, as people read it.
    pub(super) error: Option<String>,
}

/// One member as the members table shows it.
pub(super) struct MemberRow {
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

/// The group described by the request its protocol answers to; `classic` is the page's
/// DescribeGroups answer, used as is for a classic group. A describe error (e.g. a member's
/// topic the caller may not DESCRIBE) is kept in [`Described::error`], not a failed page.
pub(super) async fn describe(
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

/// A group whose describe answered an error: the listed state and the error.
fn failed(state: &str, code: i16, message: Option<StrBytes>) -> Described {
    Described {
        state: state.to_string(),
        error: Some(error_text(code, message.as_deref())),
        ..Described::default()
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

/// The members table (`id="members"`).
pub(super) fn members_table(described: &Described) -> String {
    let rows: Vec<Vec<String>> = described
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
    table(
        "Members",
        &[
            "Member id",
            "Instance id",
            "Client id",
            "Host",
            "Assigned partitions",
        ],
        &[false; 5],
        &rows,
    )
    .replacen("<table>", "<table id=\"members\">", 1)
}
