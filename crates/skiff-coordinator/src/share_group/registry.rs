//! Every share group by id, and the request-level rules that sit above one group: which id
//! may be created, which is not a share group, and turning each outcome into its response.

use std::collections::BTreeMap;

use kafka_protocol::messages::share_group_describe_response::DescribedGroup;
use kafka_protocol::messages::{ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse};

use super::describe::{described, described_error};
use super::error::ShareGroupError;
use super::group::ShareGroup;
use super::heartbeat::{error_response, leave_response, response, validate, Request};
use super::member::MemberRemoved;
use super::settings::ShareGroupSettings;
use crate::host::TopicCatalog;

/// What a ShareGroupHeartbeat needs besides the request.
pub struct HeartbeatContext<'a> {
    pub client_id: &'a str,
    pub client_host: &'a str,
    pub topics: &'a dyn TopicCatalog,
    /// This group's limits (broker config and group overrides, resolved by the caller).
    pub settings: ShareGroupSettings,
    /// The group id already belongs to a consumer or classic group: Kafka answers
    /// GROUP_ID_NOT_FOUND rather than create a share group beside it.
    pub foreign_group: bool,
    pub now: i64,
}

/// The response, and the member that left, if one did.
pub struct HeartbeatOutcome {
    pub response: ShareGroupHeartbeatResponse,
    pub removed: Option<MemberRemoved>,
}

#[derive(Clone, Debug, Default)]
pub struct ShareGroups {
    groups: BTreeMap<String, ShareGroup>,
}

impl ShareGroups {
    pub fn get(&self, group_id: &str) -> Option<&ShareGroup> {
        self.groups.get(group_id)
    }

    pub fn ids(&self) -> impl Iterator<Item = &String> {
        self.groups.keys()
    }

    /// Every group, by id.
    pub fn iter(&self) -> impl Iterator<Item = &ShareGroup> {
        self.groups.values()
    }

    /// Adds a group rebuilt from its records at load, replacing any of the same id.
    pub fn install(&mut self, group: ShareGroup) {
        self.groups.insert(group.id.clone(), group);
    }

    /// Handle one ShareGroupHeartbeat. Never fails: a refusal is an error response.
    pub fn heartbeat(
        &mut self,
        req: &ShareGroupHeartbeatRequest,
        ctx: &HeartbeatContext<'_>,
    ) -> HeartbeatOutcome {
        match self.try_heartbeat(req, ctx) {
            Ok(outcome) => outcome,
            Err(e) => HeartbeatOutcome {
                response: error_response(&e),
                removed: None,
            },
        }
    }

    fn try_heartbeat(
        &mut self,
        req: &ShareGroupHeartbeatRequest,
        ctx: &HeartbeatContext<'_>,
    ) -> Result<HeartbeatOutcome, ShareGroupError> {
        let request = validate(req, ctx.client_id, ctx.client_host)?;
        let group_id = req.group_id.0.to_string();
        if ctx.foreign_group {
            return Err(ShareGroupError::NotShareGroup(group_id));
        }
        match request {
            Request::Leave { member_id } => {
                let group = self
                    .groups
                    .get_mut(&group_id)
                    .ok_or_else(|| ShareGroupError::GroupNotFound(group_id.clone()))?;
                let removed = group.leave(&member_id, ctx.topics)?;
                Ok(HeartbeatOutcome {
                    response: leave_response(&member_id),
                    removed: Some(removed),
                })
            }
            Request::Beat(hb) => {
                let joining = hb.member_epoch == 0;
                // A group is created by its first join, and kept only if the join succeeds.
                let mut fresh = None;
                let group = match self.groups.get_mut(&group_id) {
                    Some(g) => g,
                    None if joining => fresh.insert(ShareGroup::new(&group_id)),
                    None => return Err(ShareGroupError::GroupNotFound(group_id)),
                };
                let result = group.heartbeat(hb, ctx.topics, &ctx.settings, ctx.now)?;
                if let Some(g) = fresh {
                    self.groups.insert(group_id, g);
                }
                Ok(HeartbeatOutcome {
                    response: response(result, ctx.settings.heartbeat_interval_ms),
                    removed: None,
                })
            }
        }
    }

    /// Session expiry over every group (each member's deadline was set from its group's
    /// session timeout when it last heartbeated).
    pub fn expire(&mut self, topics: &dyn TopicCatalog, now: i64) -> Vec<MemberRemoved> {
        self.groups
            .values_mut()
            .flat_map(|g| g.expire(topics, now))
            .collect()
    }

    /// The earliest session deadline of any group.
    pub fn next_deadline(&self) -> Option<i64> {
        self.groups
            .values()
            .filter_map(ShareGroup::next_deadline)
            .min()
    }

    /// One ShareGroupDescribe entry. `foreign_group` as for the heartbeat.
    pub fn describe(
        &self,
        group_id: &str,
        foreign_group: bool,
        topics: &dyn TopicCatalog,
    ) -> DescribedGroup {
        if foreign_group {
            let e = ShareGroupError::NotShareGroup(group_id.to_string());
            return described_error(group_id, &e.to_string(), &e);
        }
        match self.groups.get(group_id) {
            Some(g) => described(g, topics),
            // Kafka's describe words it differently from the heartbeat.
            None => described_error(
                group_id,
                &format!("Group {group_id} not found."),
                &ShareGroupError::GroupNotFound(group_id.to_string()),
            ),
        }
    }

    /// DeleteGroups of a share group: only an empty one. Returns it, in state Dead.
    pub fn delete(&mut self, group_id: &str) -> Result<ShareGroup, ShareGroupError> {
        let group = self
            .groups
            .get(group_id)
            .ok_or_else(|| ShareGroupError::GroupNotFound(group_id.to_string()))?;
        if !group.members.is_empty() {
            return Err(ShareGroupError::NotEmpty);
        }
        let mut group = self
            .groups
            .remove(group_id)
            .ok_or_else(|| ShareGroupError::GroupNotFound(group_id.to_string()))?;
        group.mark_deleted();
        Ok(group)
    }
}
