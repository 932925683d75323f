//! Giving records back and forgetting state: a share session closing, a connection ending,
//! the group coordinator removing a member or deleting a group, and lock expiry (the timer's
//! work). Each release is written to `__share_group_state` under the share partition's lock,
//! like every other change (see `manager.rs`), and wakes the fetches waiting on it.
//!
//! Thread safety: every method here that takes a share partition's lock or writes is
//! blocking; `connection_closed` only takes the sessions' lock and hands the release to the
//! blocking pool.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use skiff_coordinator::share::{Released, SharePartition};
use skiff_coordinator::share_state::SharePartitionKey;
use tracing::warn;

use super::manager::{Pending, ShareManager, Slot, NO_DEADLINE};
use super::session::{SessionKey, TopicIdPartition};

impl ShareManager {
    /// Gives back everything `member` holds in `group` (in `only` when given), as Kafka does
    /// when a share session closes, and writes the new states. Blocking.
    pub fn release(&self, group: &str, member: &str, only: Option<&[TopicIdPartition]>) -> Pending {
        let mut pending = Pending::default();
        let now = self.now_ms();
        for (key, slot) in self.slots_of_group(group) {
            if only.is_some_and(|o| !o.contains(&(key.topic_id, key.partition))) {
                continue;
            }
            let mut guard = slot.lock();
            let Some(sp) = guard.as_mut() else { continue };
            let released = sp.release_member(member);
            if released == Released::default() {
                continue;
            }
            self.metrics.released(released);
            slot.counters.released(released);
            match self.persist(&key, sp, now) {
                Ok(a) => pending.push(a),
                Err(e) => {
                    warn!(group, member, error = %e, "share release not persisted; reloading");
                    *guard = None;
                }
            }
            slot.next_deadline.store(
                guard
                    .as_ref()
                    .and_then(SharePartition::next_lock_deadline)
                    .unwrap_or(NO_DEADLINE),
                Ordering::Relaxed,
            );
            drop(guard);
            slot.wake();
        }
        pending
    }

    /// Closes a member's share session and releases its records there. Blocking.
    pub fn close_session(&self, group: &str, member: &str) -> Pending {
        let key = SessionKey {
            group: group.to_string(),
            member: member.to_string(),
        };
        match self.sessions().remove(&key) {
            Some(partitions) => self.release(group, member, Some(&partitions)),
            None => Pending::default(),
        }
    }

    /// The group coordinator removed `member` from share group `group` (it left or its session
    /// timed out): its share session goes, and everything it holds in the group is released
    /// (its delivery counts kept), as Kafka's `ShareGroupListener.onMemberLeave` does.
    /// Blocking (appends): call it from a blocking thread. Durability is not awaited (nobody
    /// is answered); a crash before the flush redelivers, which is what a release does anyway.
    pub fn member_removed(&self, group: &str, member: &str) {
        let key = SessionKey {
            group: group.to_string(),
            member: member.to_string(),
        };
        self.sessions().remove(&key);
        let _ = self.release(group, member, None);
    }

    /// Share group `group` was deleted: its sessions and in-memory share partitions are dropped
    /// and its stored state deleted (tombstones in `__share_group_state`). Blocking.
    pub fn group_deleted(&self, group: &str) {
        self.sessions().remove_group(group);
        let _ = self.forget(|k| k.group == group);
    }

    /// The data topic `topic_id` was deleted: its share partitions, in every group, are
    /// dropped and their stored state deleted, so a topic re-created with a new id starts
    /// afresh and nothing is left to replay for the old one. Sessions keep naming it and
    /// answer UNKNOWN_TOPIC_ID for it, as Kafka's do. Blocking.
    pub fn topic_deleted(&self, topic_id: uuid::Uuid) {
        let _ = self.forget(|k| k.topic_id == topic_id);
    }

    /// Drops the loaded share partitions whose key matches and tombstones their stored state;
    /// returns the tombstones to wait for and how many share partitions had stored state.
    pub(super) fn forget(&self, matches: impl Fn(&SharePartitionKey) -> bool) -> (Pending, usize) {
        let slots = {
            let mut map = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
            let keys: Vec<SharePartitionKey> = map.keys().filter(|k| matches(k)).cloned().collect();
            keys.into_iter()
                .filter_map(|k| map.remove(&k))
                .collect::<Vec<_>>()
        };
        for slot in &slots {
            slot.wake();
        }
        // Without share state there is nothing to delete, and the topic must not be created.
        let mut pending = Pending::default();
        let Some(store) = self.store_if_exists() else {
            return (pending, 0);
        };
        let now = self.now_ms();
        let keys: Vec<SharePartitionKey> = store
            .snapshots()
            .into_keys()
            .filter(|k| matches(k))
            .collect();
        for key in &keys {
            match store.delete(key, now) {
                Ok(appended) => pending.push(appended),
                Err(e) => warn!(group = %key.group, partition = key.partition, error = %e,
                    "share state not deleted"),
            }
        }
        (pending, keys.len())
    }

    /// A client connection ended: the share sessions it opened close and their members'
    /// records are released (Kafka's connection disconnect listener). Cheap when the
    /// connection opened none; else the release runs on the blocking pool.
    pub fn connection_closed(self: &Arc<Self>, connection: u64) {
        let closed = self.sessions().connection_closed(connection);
        if closed.is_empty() {
            return;
        }
        let me = self.clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn_blocking(move || {
            for (key, partitions) in closed {
                let _ = me.release(&key.group, &key.member, Some(&partitions));
            }
        });
    }

    /// Expires every lapsed lock (the timer's job) and writes the changed states. Blocking.
    pub fn expire_locks(&self) -> Pending {
        let now = self.now_ms();
        let due: Vec<(SharePartitionKey, Arc<Slot>)> = {
            let map = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
            map.iter()
                .filter(|(_, s)| s.next_deadline.load(Ordering::Relaxed) <= now)
                .map(|(k, s)| (k.clone(), s.clone()))
                .collect()
        };
        let mut pending = Pending::default();
        for (key, slot) in due {
            let mut guard = slot.lock();
            let Some(sp) = guard.as_mut() else { continue };
            let expired = sp.expire(now);
            self.metrics.expired(expired);
            slot.counters.expired(expired);
            let next = sp.next_lock_deadline().unwrap_or(NO_DEADLINE);
            if expired != Released::default() {
                match self.persist(&key, sp, now) {
                    Ok(a) => pending.push(a),
                    Err(e) => {
                        warn!(group = %key.group, error = %e,
                            "lock expiry not persisted; reloading");
                        *guard = None;
                    }
                }
            }
            slot.next_deadline.store(next, Ordering::Relaxed);
            drop(guard);
            if expired.made_available > 0 {
                slot.wake();
            }
        }
        pending
    }
}
