//! Share sessions (KIP-932), as Kafka's `ShareSessionCache` keeps them: one per (group id,
//! member id), holding the partitions the member fetches from and the epoch of its next
//! request.
//!
//! - ShareFetch with epoch 0 opens a session with the request's partitions, replacing the
//!   member's previous one; acknowledgements in it are INVALID_REQUEST (nothing is held
//!   yet); no room (`group.share.max.share.sessions`, 2000) is SHARE_SESSION_LIMIT_REACHED.
//! - A later epoch must equal the session's (else INVALID_SHARE_SESSION_EPOCH; no session is
//!   SHARE_SESSION_NOT_FOUND); the request's partitions are added, its forgotten ones
//!   removed, and the epoch moves on (wrapping from `i32::MAX` to 1, never to 0 or -1).
//! - Epoch -1 closes it: its acknowledgements are applied, nothing is fetched, and the caller
//!   releases what the member held ([`ShareSessions::remove`]).
//! - ShareAcknowledge uses the session without changing its partitions: epoch 0 is
//!   INVALID_SHARE_SESSION_EPOCH, -1 closes.
//! - Each session remembers the connection that opened it; when that connection ends, the
//!   session goes and the member's records are released ([`ShareSessions::connection_closed`]).
//!
//! Thread safety: none inside; the manager holds it behind one std `Mutex`, taken only for
//! these in-memory updates.

use std::collections::{BTreeSet, HashMap};

/// Kafka's `group.share.max.share.sessions` default: share sessions per broker.
pub const MAX_SHARE_SESSIONS: usize = 2000;

/// The epoch that opens a session.
pub const INITIAL_EPOCH: i32 = 0;
/// The epoch that closes a session.
pub const FINAL_EPOCH: i32 = -1;

/// One share partition as a session names it.
pub type TopicIdPartition = (uuid::Uuid, i32);

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey {
    pub group: String,
    pub member: String,
}

/// Why a session request is refused (the whole request fails with this code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionError {
    NotFound,
    InvalidEpoch,
    LimitReached,
    /// An opening ShareFetch carried acknowledgements.
    AcksOnInitial,
}

/// What a ShareFetch works on once its session is settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchContext {
    /// A new session (epoch 0): fetch the request's partitions; every one is answered.
    Opened(Vec<TopicIdPartition>),
    /// An existing session: fetch all of its partitions; only those with something to say
    /// are answered (Kafka prunes the others).
    Continued(Vec<TopicIdPartition>),
    /// Epoch -1: apply the acknowledgements, fetch nothing, then close the session.
    Closing,
}

#[derive(Debug)]
struct Session {
    epoch: i32,
    partitions: BTreeSet<TopicIdPartition>,
    connection: Option<u64>,
}

/// The broker's share sessions; see the module documentation.
#[derive(Debug)]
pub struct ShareSessions {
    max: usize,
    sessions: HashMap<SessionKey, Session>,
}

impl Default for ShareSessions {
    fn default() -> Self {
        ShareSessions::new(MAX_SHARE_SESSIONS)
    }
}

/// Kafka's `ShareRequestMetadata.nextEpoch`: after `i32::MAX` comes 1.
fn next_epoch(epoch: i32) -> i32 {
    if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

impl ShareSessions {
    pub fn new(max: usize) -> ShareSessions {
        ShareSessions {
            max,
            sessions: HashMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Settles a ShareFetch's session: see the module documentation.
    pub fn fetch(
        &mut self,
        key: &SessionKey,
        epoch: i32,
        topics: &[TopicIdPartition],
        forgotten: &[TopicIdPartition],
        has_acks: bool,
        connection: Option<u64>,
    ) -> Result<FetchContext, SessionError> {
        match epoch {
            FINAL_EPOCH => {
                if !self.sessions.contains_key(key) {
                    return Err(SessionError::NotFound);
                }
                Ok(FetchContext::Closing)
            }
            INITIAL_EPOCH => {
                if has_acks {
                    return Err(SessionError::AcksOnInitial);
                }
                self.sessions.remove(key);
                if self.sessions.len() >= self.max {
                    return Err(SessionError::LimitReached);
                }
                let partitions: BTreeSet<TopicIdPartition> = topics.iter().copied().collect();
                self.sessions.insert(
                    key.clone(),
                    Session {
                        epoch: next_epoch(INITIAL_EPOCH),
                        partitions,
                        connection,
                    },
                );
                let mut wanted = Vec::new();
                for tp in topics {
                    if !wanted.contains(tp) {
                        wanted.push(*tp);
                    }
                }
                Ok(FetchContext::Opened(wanted))
            }
            _ => {
                let session = self.sessions.get_mut(key).ok_or(SessionError::NotFound)?;
                if session.epoch != epoch {
                    return Err(SessionError::InvalidEpoch);
                }
                session.partitions.extend(topics.iter().copied());
                for tp in forgotten {
                    session.partitions.remove(tp);
                }
                session.epoch = next_epoch(session.epoch);
                Ok(FetchContext::Continued(
                    session.partitions.iter().copied().collect(),
                ))
            }
        }
    }

    /// Settles a ShareAcknowledge's session; `Ok(true)` when the request closes it.
    pub fn acknowledge(&mut self, key: &SessionKey, epoch: i32) -> Result<bool, SessionError> {
        if epoch == INITIAL_EPOCH {
            return Err(SessionError::InvalidEpoch);
        }
        let session = self.sessions.get_mut(key).ok_or(SessionError::NotFound)?;
        if epoch == FINAL_EPOCH {
            return Ok(true);
        }
        if session.epoch != epoch {
            return Err(SessionError::InvalidEpoch);
        }
        session.epoch = next_epoch(session.epoch);
        Ok(false)
    }

    /// Closes a session; its partitions, or `None` when there was none.
    pub fn remove(&mut self, key: &SessionKey) -> Option<Vec<TopicIdPartition>> {
        self.sessions
            .remove(key)
            .map(|s| s.partitions.into_iter().collect())
    }

    /// Closes every session opened on `connection`; their keys and partitions.
    pub fn connection_closed(
        &mut self,
        connection: u64,
    ) -> Vec<(SessionKey, Vec<TopicIdPartition>)> {
        let keys: Vec<SessionKey> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.connection == Some(connection))
            .map(|(k, _)| k.clone())
            .collect();
        keys.into_iter()
            .filter_map(|k| {
                let partitions = self.remove(&k)?;
                Some((k, partitions))
            })
            .collect()
    }

    /// Closes every session of `group`.
    pub fn remove_group(&mut self, group: &str) {
        self.sessions.retain(|k, _| k.group != group);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn key(m: &str) -> SessionKey {
        SessionKey {
            group: "g".into(),
            member: m.into(),
        }
    }

    #[test]
    fn epochs_open_continue_and_close() {
        let mut s = ShareSessions::new(10);
        let t = Uuid::from_u64_pair(1, 2);
        let k = key("m");
        assert_eq!(
            s.fetch(&k, 1, &[], &[], false, None),
            Err(SessionError::NotFound)
        );
        assert_eq!(
            s.fetch(&k, 0, &[(t, 0)], &[], true, None),
            Err(SessionError::AcksOnInitial)
        );
        assert_eq!(
            s.fetch(&k, 0, &[(t, 0), (t, 0)], &[], false, Some(7)),
            Ok(FetchContext::Opened(vec![(t, 0)]))
        );
        assert_eq!(
            s.fetch(&k, 2, &[], &[], false, None),
            Err(SessionError::InvalidEpoch)
        );
        assert_eq!(
            s.fetch(&k, 1, &[(t, 1)], &[], false, None),
            Ok(FetchContext::Continued(vec![(t, 0), (t, 1)]))
        );
        assert_eq!(
            s.fetch(&k, 2, &[], &[(t, 0)], false, None),
            Ok(FetchContext::Continued(vec![(t, 1)]))
        );
        assert_eq!(s.acknowledge(&k, 0), Err(SessionError::InvalidEpoch));
        assert_eq!(s.acknowledge(&k, 2), Err(SessionError::InvalidEpoch));
        assert_eq!(s.acknowledge(&k, 3), Ok(false));
        assert_eq!(s.acknowledge(&k, -1), Ok(true));
        assert_eq!(
            s.fetch(&k, -1, &[], &[], true, None),
            Ok(FetchContext::Closing)
        );
        assert_eq!(s.connection_closed(7), vec![(k.clone(), vec![(t, 1)])]);
        assert_eq!(s.acknowledge(&k, -1), Err(SessionError::NotFound));
    }

    /// A member that reopened its session on a new connection keeps it when the old
    /// connection ends (Kafka marks the old mapping stale for the same reason).
    #[test]
    fn only_the_connection_that_opened_a_session_closes_it() {
        let mut s = ShareSessions::new(10);
        let k = key("m");
        assert!(s.fetch(&k, 0, &[], &[], false, Some(1)).is_ok());
        assert!(s.fetch(&k, 0, &[], &[], false, Some(2)).is_ok());
        assert!(s.connection_closed(1).is_empty());
        assert_eq!(s.len(), 1);
        assert_eq!(s.connection_closed(2).len(), 1);
        assert!(s.is_empty());
    }

    #[test]
    fn the_cache_is_bounded_and_reopening_replaces() {
        let mut s = ShareSessions::new(1);
        assert!(s.fetch(&key("a"), 0, &[], &[], false, None).is_ok());
        assert!(s.fetch(&key("a"), 0, &[], &[], false, None).is_ok());
        assert_eq!(
            s.fetch(&key("b"), 0, &[], &[], false, None),
            Err(SessionError::LimitReached)
        );
        assert_eq!(next_epoch(i32::MAX), 1);
    }
}
