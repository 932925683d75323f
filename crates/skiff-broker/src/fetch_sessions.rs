//! The broker's fetch sessions (KIP-227), as Kafka keeps them: a consumer that opens a
//! session with a full fetch (epoch 0) then sends only what changed (new or updated
//! partitions, and `forgotten_topics_data`), and is answered only the partitions with
//! something to say: records, an error, or a high watermark, last stable offset or log start
//! offset other than the one last sent.
//!
//! What is cached per partition is what the client asked (fetch offset, partition max
//! bytes, current leader epoch) and what it was last told (the three offsets), nothing more;
//! at most `max.incremental.fetch.session.cache.slots` sessions are held.
//!
//! - Ids are random positive `i32`s, never 0 (the "no session" id) and never one a live
//!   session holds.
//! - A session expects the epoch after the one it last served: 1 after the full fetch that
//!   made it, then +1 per incremental fetch, wrapping from `i32::MAX` to 1.
//! - Eviction (Kafka's rule, followers aside since Skiff has none): when every slot is
//!   taken, a new session replaces the least recently used one if that was unused for
//!   [`STALE_MS`]; else the session with the fewest partitions among those that were at
//!   least [`STALE_MS`] old when last used, if the new one has more partitions; else no
//!   session is made and the fetch is served without one. Finding the victim scans the
//!   sessions, which happens only when the cache is full.
//! - Sessions belong to no connection: a client may use its session from any connection,
//!   as with Kafka.
//!
//! Thread safety: none inside; the broker holds the cache behind one std `Mutex`, taken for
//! these in-memory updates only (never across a read of the log or an `.await`). An
//! incremental fetch takes it twice: [`FetchSessions::begin`] before reading, and
//! [`FetchSessions::finish`] after, which answers INVALID_FETCH_SESSION_EPOCH when another
//! request used the session in between (Kafka's check for duplicate requests).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use uuid::Uuid;

/// How long a session must go unused before any new session may replace it, and how old a
/// session must be before a larger one may replace it: Kafka hardcodes 120 s
/// (`MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS`) and so do we.
pub const STALE_MS: i64 = 120_000;

/// The epoch of a full fetch that opens a session.
pub const INITIAL_EPOCH: i32 = 0;
/// The epoch of a full fetch that closes its session and opens none.
pub const FINAL_EPOCH: i32 = -1;

/// The epoch after `epoch` (Kafka's `FetchMetadata.nextEpoch`): 0 and -1 are never reached
/// again once a session runs.
pub fn next_epoch(epoch: i32) -> i32 {
    match epoch {
        e if e < 0 => FINAL_EPOCH,
        i32::MAX => 1,
        e => e + 1,
    }
}

/// How a session names a partition's topic: by id from Fetch v13 on, by name before.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TopicRef {
    Id(Uuid),
    Name(Arc<str>),
}

/// A partition of a session.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PartitionKey {
    pub topic: TopicRef,
    pub partition: i32,
}

/// What the client last asked of a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wants {
    pub fetch_offset: i64,
    pub max_bytes: i32,
    pub leader_epoch: i32,
}

/// What the client was last told of a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sent {
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
}

impl Sent {
    /// Nothing sent yet: differs from any real answer, so the partition is answered.
    pub const NOTHING: Sent = Sent {
        high_watermark: -1,
        last_stable_offset: -1,
        log_start_offset: -1,
    };
}

/// One partition as a session holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionPartition {
    pub key: PartitionKey,
    /// In a session by ids, the topic's name once its id was known (Kafka keeps the name it
    /// first resolved); unused in a session by names.
    pub resolved_name: Option<Arc<str>>,
    pub wants: Wants,
    pub sent: Sent,
}

impl SessionPartition {
    /// A partition the client just added: nothing was sent for it yet.
    pub fn new(key: PartitionKey, wants: Wants) -> SessionPartition {
        SessionPartition {
            key,
            resolved_name: None,
            wants,
            sent: Sent::NOTHING,
        }
    }

    /// The topic's name, when known.
    pub fn name(&self) -> Option<&Arc<str>> {
        match &self.key.topic {
            TopicRef::Name(name) => Some(name),
            TopicRef::Id(_) => self.resolved_name.as_ref(),
        }
    }
}

/// How one partition of an incremental fetch was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub sent: Sent,
    pub has_records: bool,
    pub error: bool,
}

/// Why an incremental fetch is refused as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionError {
    /// FETCH_SESSION_ID_NOT_FOUND.
    NotFound,
    /// INVALID_FETCH_SESSION_EPOCH.
    InvalidEpoch,
    /// FETCH_SESSION_TOPIC_ID_ERROR: the request's version names topics the other way.
    TopicIdMismatch,
}

/// Identifies the use of a session between [`FetchSessions::begin`] and
/// [`FetchSessions::finish`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    pub id: i32,
    generation: u64,
    /// The epoch the session expects next, if nobody used it in between.
    expected: i32,
}

/// What an incremental fetch does once its session is updated.
#[derive(Debug, PartialEq, Eq)]
pub enum Begun {
    /// Read these partitions, in this order, then call [`FetchSessions::finish`].
    Incremental(Ticket, Vec<SessionPartition>),
    /// The request forgot the session's last partitions: the session is closed and the
    /// fetch is served without one (Kafka's answer).
    Closed,
}

/// A change an incremental request makes to one partition (added or updated).
pub struct Upsert {
    pub key: PartitionKey,
    pub wants: Wants,
}

/// What an incremental request says of its session.
pub struct Incremental {
    pub id: i32,
    pub epoch: i32,
    /// The request names topics by id (v13+).
    pub uses_topic_ids: bool,
    /// Partitions added or updated, in request order.
    pub upserts: Vec<Upsert>,
    /// Partitions removed (`forgotten_topics_data`).
    pub forgotten: Vec<PartitionKey>,
}

#[derive(Debug)]
struct Session {
    /// Unique over the cache's life, so a session made later under the same id is not
    /// mistaken for this one.
    generation: u64,
    /// The epoch the next incremental fetch must carry.
    next_epoch: i32,
    uses_topic_ids: bool,
    created_ms: i64,
    last_used_ms: i64,
    /// In fetch order: a partition that got records moves to the end.
    partitions: Vec<SessionPartition>,
}

impl Session {
    /// Whether a larger session may replace this one: it was at least [`STALE_MS`] old
    /// when last used (Kafka decides this when a session is used).
    fn replaceable_by_size(&self) -> bool {
        self.last_used_ms - self.created_ms > STALE_MS
    }
}

/// The broker's fetch sessions; see the module documentation.
#[derive(Debug)]
pub struct FetchSessions {
    slots: usize,
    sessions: HashMap<i32, Session>,
    generations: u64,
}

impl FetchSessions {
    /// A cache of `slots` sessions (0: never any session).
    pub fn new(slots: usize) -> FetchSessions {
        FetchSessions {
            slots,
            sessions: HashMap::new(),
            generations: 0,
        }
    }

    /// Sessions held.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Whether `id` is a live session.
    pub fn contains(&self, id: i32) -> bool {
        self.sessions.contains_key(&id)
    }

    /// Partitions held over all sessions.
    pub fn partitions(&self) -> usize {
        self.sessions.values().map(|s| s.partitions.len()).sum()
    }

    /// Closes session `id`; false when there was none.
    pub fn remove(&mut self, id: i32) -> bool {
        self.sessions.remove(&id).is_some()
    }

    /// A new session holding `partitions` (the full fetch's, as answered), or 0 when no slot
    /// can be had. A partition listed twice is held once, at its first place, with its last
    /// values.
    pub fn create(
        &mut self,
        now_ms: i64,
        uses_topic_ids: bool,
        partitions: Vec<SessionPartition>,
    ) -> i32 {
        self.create_with(now_ms, uses_topic_ids, partitions, random_u32)
    }

    /// [`FetchSessions::create`] drawing candidate ids from `draw`.
    fn create_with(
        &mut self,
        now_ms: i64,
        uses_topic_ids: bool,
        partitions: Vec<SessionPartition>,
        mut draw: impl FnMut() -> u32,
    ) -> i32 {
        let partitions = dedup(partitions);
        if self.slots == 0
            || (self.sessions.len() >= self.slots && !self.evict_for(partitions.len(), now_ms))
        {
            return 0;
        }
        let id = loop {
            // The top bit cleared: a positive i32, or 0, which is skipped.
            let id = i32::try_from(draw() >> 1).unwrap_or(0);
            if id != 0 && !self.sessions.contains_key(&id) {
                break id;
            }
        };
        self.generations += 1;
        self.sessions.insert(
            id,
            Session {
                generation: self.generations,
                next_epoch: next_epoch(INITIAL_EPOCH),
                uses_topic_ids,
                created_ms: now_ms,
                last_used_ms: now_ms,
                partitions,
            },
        );
        id
    }

    /// Makes room for a session of `size` partitions by Kafka's rule (module docs).
    fn evict_for(&mut self, size: usize, now_ms: i64) -> bool {
        let least_recent = self
            .sessions
            .iter()
            .min_by_key(|(id, s)| (s.last_used_ms, **id))
            .map(|(id, s)| (*id, s.last_used_ms));
        let victim = match least_recent {
            None => return false,
            Some((id, last_used)) if now_ms - last_used > STALE_MS => id,
            Some(_) => {
                let smallest = self
                    .sessions
                    .iter()
                    .filter(|(_, s)| s.replaceable_by_size())
                    .min_by_key(|(id, s)| (s.partitions.len(), **id));
                match smallest {
                    Some((id, s)) if s.partitions.len() < size => *id,
                    _ => return false,
                }
            }
        };
        self.sessions.remove(&victim);
        true
    }

    /// An incremental fetch: checks the session's epoch and the way topics are named, adds
    /// or updates the request's partitions, removes its forgotten ones, marks the session
    /// used and moves its epoch on. `resolve` names a topic id (for partitions of a session
    /// by ids whose name is not known yet).
    pub fn begin(
        &mut self,
        request: Incremental,
        now_ms: i64,
        resolve: impl Fn(Uuid) -> Option<Arc<str>>,
    ) -> Result<Begun, SessionError> {
        let Incremental {
            id,
            epoch,
            uses_topic_ids,
            upserts,
            forgotten,
        } = request;
        let session = self.sessions.get_mut(&id).ok_or(SessionError::NotFound)?;
        if session.next_epoch != epoch {
            return Err(SessionError::InvalidEpoch);
        }
        if session.uses_topic_ids != uses_topic_ids {
            return Err(SessionError::TopicIdMismatch);
        }
        if !upserts.is_empty() {
            let mut at: HashMap<PartitionKey, usize> = session
                .partitions
                .iter()
                .enumerate()
                .map(|(i, p)| (p.key.clone(), i))
                .collect();
            for u in upserts {
                match at.get(&u.key) {
                    Some(&i) => {
                        if let Some(p) = session.partitions.get_mut(i) {
                            p.wants = u.wants;
                        }
                    }
                    None => {
                        at.insert(u.key.clone(), session.partitions.len());
                        session
                            .partitions
                            .push(SessionPartition::new(u.key, u.wants));
                    }
                }
            }
        }
        if !forgotten.is_empty() {
            let gone: HashSet<&PartitionKey> = forgotten.iter().collect();
            session.partitions.retain(|p| !gone.contains(&p.key));
        }
        if session.partitions.is_empty() {
            self.sessions.remove(&id);
            return Ok(Begun::Closed);
        }
        session.last_used_ms = now_ms;
        session.next_epoch = next_epoch(session.next_epoch);
        for p in &mut session.partitions {
            if let (TopicRef::Id(topic_id), None) = (&p.key.topic, &p.resolved_name) {
                p.resolved_name = resolve(*topic_id);
            }
        }
        Ok(Begun::Incremental(
            Ticket {
                id,
                generation: session.generation,
                expected: session.next_epoch,
            },
            session.partitions.clone(),
        ))
    }

    /// Whether `ticket`'s session is still there and unused since [`Self::begin`]: the
    /// answer to a throttled incremental fetch, which leaves the session's "last sent"
    /// figures as they were (Kafka's `getThrottledResponse`).
    pub fn check(&self, ticket: &Ticket) -> Result<(), SessionError> {
        let session = self
            .sessions
            .get(&ticket.id)
            .filter(|s| s.generation == ticket.generation)
            .ok_or(SessionError::NotFound)?;
        // Another request used the session since `begin` (its partitions may differ).
        if session.next_epoch != ticket.expected {
            return Err(SessionError::InvalidEpoch);
        }
        Ok(())
    }

    /// After the read of an incremental fetch: `outcomes` are its partitions' answers, in
    /// the order [`FetchSessions::begin`] gave them. Returns which to send: those with
    /// records, an error, or offsets other than last sent (which become the last sent). The
    /// partitions that got records move to the end of the session's order, so that the
    /// others come first under the byte budget of the next fetch.
    pub fn finish(
        &mut self,
        ticket: &Ticket,
        outcomes: &[Outcome],
    ) -> Result<Vec<bool>, SessionError> {
        self.check(ticket)?;
        let session = self
            .sessions
            .get_mut(&ticket.id)
            .ok_or(SessionError::NotFound)?;
        if session.partitions.len() != outcomes.len() {
            return Err(SessionError::InvalidEpoch);
        }
        let mut send = Vec::with_capacity(outcomes.len());
        for (p, o) in session.partitions.iter_mut().zip(outcomes) {
            send.push(o.has_records || o.error || p.sent != o.sent);
            p.sent = o.sent;
            if o.error {
                // Sent again once the error clears.
                p.sent.high_watermark = -1;
            }
        }
        if outcomes.iter().any(|o| o.has_records) {
            let (rest, fed): (Vec<_>, Vec<_>) = std::mem::take(&mut session.partitions)
                .into_iter()
                .zip(outcomes)
                .partition(|(_, o)| !o.has_records);
            session.partitions = rest.into_iter().chain(fed).map(|(p, _)| p).collect();
        }
        Ok(send)
    }
}

/// `partitions` with each key once, at its first place, holding its last values.
fn dedup(partitions: Vec<SessionPartition>) -> Vec<SessionPartition> {
    let mut at: HashMap<PartitionKey, usize> = HashMap::with_capacity(partitions.len());
    let mut out: Vec<SessionPartition> = Vec::with_capacity(partitions.len());
    for p in partitions {
        match at.get(&p.key) {
            Some(&i) => {
                if let Some(slot) = out.get_mut(i) {
                    *slot = p;
                }
            }
            None => {
                at.insert(p.key.clone(), out.len());
                out.push(p);
            }
        }
    }
    out
}

/// 32 random bits from the operating system's generator (through a v4 UUID).
fn random_u32() -> u32 {
    let bytes = Uuid::new_v4().into_bytes();
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

#[cfg(test)]
#[path = "fetch_sessions_tests.rs"]
mod tests;
