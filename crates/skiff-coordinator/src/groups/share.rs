//! Share groups (KIP-932) inside the group coordinator: ShareGroupHeartbeat and
//! ShareGroupDescribe over [`ShareGroups`], their records in `__consumer_offsets`, session
//! expiry on the coordinator's tick, and the [`ShareGroupListener`] told when a member or a
//! group is gone.
//!
//! Share groups and consumer/classic groups share one group-id namespace, as in Kafka: an id
//! is either in the groups map or in [`ShareGroups`], never both.
//!
//! Lock discipline: share groups live behind their own std `Mutex` ([`ShareState`]), taken
//! *after* the groups lock whenever both are needed (a request that may create a group of
//! one kind checks the other kind while holding both), and never the other way round.
//! Neither is held across `.await` or I/O; records are queued to the writer thread while the
//! share lock is held, so they are appended in the order the state changed. The listener is
//! called after both locks are released.

use std::sync::{Arc, MutexGuard};

use kafka_protocol::messages::share_group_describe_response::DescribedGroup;
use kafka_protocol::messages::{ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse};
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::group::Value;
use super::records::{self, Key};
use super::store::{self, Job, Msg};
use super::{Coordinator, Listed, Shared};
use crate::host::{ShareGroupListener, Storage};
use crate::share_group::{
    self, group_tombstones, HeartbeatContext, MemberRemoved, Persisted, RawRecord, ShareGroup,
    ShareGroups,
};

/// The share groups and what was last written for each (behind `Shared::share`).
#[derive(Default)]
pub(crate) struct ShareState {
    pub(crate) groups: ShareGroups,
    /// The last value queued for every key of each group, to write only what changed.
    persisted: std::collections::HashMap<String, Persisted>,
}

/// "share": the protocol type and group type ListGroups shows for share groups.
pub const SHARE_GROUP_TYPE: &str = "share";

impl<S: Storage> Coordinator<S> {
    /// Sets who is told when a share group member leaves or expires and when a share group
    /// is deleted. Called once, by the broker after start; a second call is ignored (and
    /// logged). Until then, nobody is told.
    pub fn set_share_listener(&self, listener: Arc<dyn ShareGroupListener>) {
        if self.shared.share_listener.set(listener).is_err() {
            tracing::warn!("the share group listener is already set; keeping the first one");
        }
    }

    /// ShareGroupHeartbeat v1 (join, heartbeat, leave), answered in full: a refusal is an
    /// error response. `Err` only while `__consumer_offsets` is loading.
    pub fn share_heartbeat(
        &self,
        request: &ShareGroupHeartbeatRequest,
        client_id: &str,
        client_host: &str,
    ) -> Result<ShareGroupHeartbeatResponse, ResponseError> {
        let group_id = request.group_id.0.to_string();
        let settings = self.shared.group_configs.share_group_settings(&group_id);
        let now = self.now();
        // Both locks are released at the end of this block, before the listener is told.
        let (response, removed) = {
            let groups = self.ready()?;
            let mut share = self.shared.share();
            let ctx = HeartbeatContext {
                client_id,
                client_host,
                topics: &*self.shared.topics,
                settings,
                foreign_group: groups.contains_key(&group_id),
                now,
            };
            let outcome = share.groups.heartbeat(request, &ctx);
            let gone: Vec<&str> = outcome
                .removed
                .iter()
                .map(|r| r.member_id.as_str())
                .collect();
            self.shared.persist_share(&mut share, &group_id, &gone);
            (outcome.response, outcome.removed)
        };
        if let Some(r) = removed {
            self.shared.tell_removed(&[r]);
        }
        Ok(response)
    }

    /// One ShareGroupDescribe entry (authorized operations left for the caller).
    pub fn share_describe(&self, group_id: &str) -> Result<DescribedGroup, ResponseError> {
        let groups = self.ready()?;
        let share = self.shared.share();
        Ok(share.groups.describe(
            group_id,
            groups.contains_key(group_id),
            &*self.shared.topics,
        ))
    }

    /// Whether `group_id` is a share group (false while loading).
    pub fn is_share_group(&self, group_id: &str) -> bool {
        self.is_loaded() && self.shared.share().groups.get(group_id).is_some()
    }

    /// May the share-partition state of `group_id` be reset or deleted now (Alter- and
    /// DeleteShareGroupOffsets)? Only for an empty share group, as Kafka: an id of a consumer
    /// or classic group is GROUP_ID_NOT_FOUND, a group with members NON_EMPTY_GROUP. A missing
    /// group is created (empty, and written) when `create`, as Kafka's alter does, else
    /// GROUP_ID_NOT_FOUND.
    pub fn share_offsets_writable(
        &self,
        group_id: &str,
        create: bool,
    ) -> Result<(), ResponseError> {
        let groups = self.ready()?;
        if groups.contains_key(group_id) {
            return Err(ResponseError::GroupIdNotFound);
        }
        let mut share = self.shared.share();
        match share.groups.get(group_id) {
            Some(g) if !g.members.is_empty() => Err(ResponseError::NonEmptyGroup),
            Some(_) => Ok(()),
            None if create => {
                share.groups.install(ShareGroup::new(group_id));
                self.shared.persist_share(&mut share, group_id, &[]);
                Ok(())
            }
            None => Err(ResponseError::GroupIdNotFound),
        }
    }

    /// Whether `member_id` is a member of the share group `group_id` (false while loading).
    pub fn share_member_exists(&self, group_id: &str, member_id: &str) -> bool {
        self.is_loaded()
            && self
                .shared
                .share()
                .groups
                .get(group_id)
                .is_some_and(|g| g.members.contains_key(member_id))
    }

    /// The ListGroups rows of the share groups (the caller holds the groups lock).
    pub(super) fn list_share(&self) -> Vec<Listed> {
        self.shared
            .share()
            .groups
            .iter()
            .map(|g| Listed {
                id: g.id.clone(),
                protocol_type: SHARE_GROUP_TYPE.to_string(),
                state: g.state().name(),
                group_type: SHARE_GROUP_TYPE,
            })
            .collect()
    }

    /// DeleteGroups of a share group (the caller holds the groups lock): `None` if `group_id`
    /// is not a share group, else the result and, when deleted, the wait for its tombstones.
    #[allow(clippy::type_complexity)]
    pub(super) fn delete_share(
        &self,
        group_id: &str,
    ) -> Option<Result<oneshot::Receiver<store::WriteResult<S::Partition>>, ResponseError>> {
        let mut share = self.shared.share();
        share.groups.get(group_id)?;
        let group = match share.groups.delete(group_id) {
            Ok(g) => g,
            Err(e) => return Some(Err(e.response_error())),
        };
        let persisted = share.persisted.remove(group_id).unwrap_or_default();
        let (tx, rx) = oneshot::channel();
        self.shared
            .queue_share(group_id, group_tombstones(&group, &persisted), Some(tx));
        tracing::info!(group = %group_id, "share group deleted");
        Some(Ok(rx))
    }
}

impl<S: Storage> Shared<S> {
    pub(crate) fn share(&self) -> MutexGuard<'_, ShareState> {
        self.share.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queue what changed in share group `group_id` (after a heartbeat, leave or expiry of
    /// the members `removed`). A group the request did not create (a refused join) writes
    /// nothing.
    fn persist_share(&self, share: &mut ShareState, group_id: &str, removed: &[&str]) {
        let ShareState { groups, persisted } = share;
        let Some(group) = groups.get(group_id) else {
            return;
        };
        let records = persisted
            .entry(group_id.to_string())
            .or_default()
            .changes(group, removed);
        self.queue_share(group_id, records, None);
    }

    /// Hand share group records to the writer thread, on the group's partition.
    fn queue_share(
        &self,
        group_id: &str,
        raw: Vec<RawRecord>,
        done: Option<oneshot::Sender<store::WriteResult<S::Partition>>>,
    ) {
        if raw.is_empty() {
            return;
        }
        let mut records = Vec::with_capacity(raw.len());
        for (key, value) in raw {
            match share_group::decode_key(&key) {
                Ok(Some(k)) => records.push((Key::Share(k), value.map(Value::Share))),
                // Keys come from `share_group::records`, which always decodes its own keys.
                _ => tracing::error!(group = %group_id, "unencodable share group key; not written"),
            }
        }
        let job = Job {
            partition: records::partition_for(group_id, self.offsets.partition_count()),
            records,
            done,
        };
        if self.jobs.send(Msg::Write(job)).is_err() {
            tracing::error!(group = %group_id, "group coordinator thread is gone; share group records not written");
        }
    }

    /// Session expiry of share group members (the coordinator thread's tick).
    pub(crate) fn tick_share(&self) {
        let now = self.clock.now_ms();
        let removed = {
            let mut share = self.share();
            if share.groups.next_deadline().is_none_or(|d| d > now) {
                return;
            }
            let removed = share.groups.expire(&*self.topics, now);
            let mut by_group: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
            for r in &removed {
                by_group
                    .entry(r.group_id.as_str())
                    .or_default()
                    .push(r.member_id.as_str());
            }
            for (group_id, members) in by_group {
                self.persist_share(&mut share, group_id, &members);
            }
            removed
        };
        self.tell_removed(&removed);
    }

    /// Rebuild the share groups of the replay (called before the coordinator opens). An id
    /// that is also a consumer or classic group keeps that group; the share group is dropped.
    pub(crate) fn install_share(&self, id: &str, replay: share_group::ShareReplay, classic: bool) {
        let session_timeout_ms = self
            .group_configs
            .share_group_settings(id)
            .session_timeout_ms;
        let now = self.clock.now_ms();
        let rebuilt = replay.finish(&*self.topics, session_timeout_ms, now);
        let mut share = self.share();
        for (gid, group) in rebuilt {
            if classic {
                tracing::warn!(group = %gid, "group id is both a share group and a consumer group in {}; keeping the consumer group", store::OFFSETS_TOPIC);
                continue;
            }
            share.persisted.insert(gid.clone(), Persisted::of(&group));
            share.groups.install(group);
        }
    }

    /// Tell the listener, if any, which members are gone (no lock held).
    fn tell_removed(&self, removed: &[MemberRemoved]) {
        if let Some(l) = self.share_listener.get() {
            for r in removed {
                l.member_removed(&r.group_id, &r.member_id);
            }
        }
    }

    /// Tell the listener, if any, that a share group was deleted (no lock held).
    pub(crate) fn tell_deleted(&self, group_id: &str) {
        if let Some(l) = self.share_listener.get() {
            l.group_deleted(group_id);
        }
    }
}
