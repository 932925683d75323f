//! KIP-848 consumer groups (`group.protocol=consumer`): members heartbeat with
//! ConsumerGroupHeartbeat, the broker computes the assignment (a uniform assignor: each
//! topic's partitions spread round-robin over the members subscribed to it) and hands it out
//! incrementally: a partition moves only after its previous owner has reported it released.
//!
//! Epochs: the group epoch grows with every membership, subscription or partition-count
//! change; the target assignment is recomputed at that epoch; a member reaches the target
//! epoch once it holds exactly its target partitions with nothing left to revoke.
//!
//! Regex subscriptions (`SubscribedTopicRegex`, RE2 syntax as in Kafka): a member's
//! effective subscription is its topic names plus every topic the regex fully matches,
//! internal ones included (Kafka matches against every topic of its metadata image), re-resolved on each heartbeat against the topics last given to
//! [`ConsumerState::observe_topics`]; a change counts as a subscription change. As in Kafka,
//! a regex resolves only to topics the member may see: each heartbeat carries the member's
//! [`RegexScope`] (with an authorizer: the topics its principal may DESCRIBE), which the
//! member keeps until its next heartbeat; a member restored from the log keeps its matched
//! set until then.
//!
//! Null / -1 fields of a heartbeat mean "unchanged since the last heartbeat" (KIP-848):
//! subscriptions, regex, rebalance timeout, rack, instance id and assignor are only updated
//! when sent. Static members (with an instance id) may leave temporarily (epoch -2): they
//! keep their assignment until their session expires or their instance id rejoins.
//!
//! Sans-IO: every method takes the time and the partition counts of the subscribed topics.
//! The state is persisted in `__consumer_offsets` with Kafka's consumer group records
//! (`consumer_store.rs`), so members keep their ids and epochs across a restart.
//!
//! Thread safety: none inside; lives in a [`super::group::Group`] behind the coordinator lock.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use kafka_protocol::ResponseError;

use super::commit_fence::{self, AssignmentEpochs, CommitFence};

/// topic name -> partitions.
pub type Assignment = BTreeMap<String, BTreeSet<i32>>;

#[derive(Clone, Debug)]
pub struct ConsumerMember {
    pub id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub epoch: i32,
    pub(super) previous_epoch: i32,
    pub subscribed: Vec<String>,
    /// The member's subscription regex, if any.
    pub regex: Option<TopicRegex>,
    /// Topics the regex matched at the last resolution.
    pub matched: BTreeSet<String>,
    /// Which topics the regex may resolve to (from the member's last heartbeat).
    pub regex_scope: RegexScope,
    pub rebalance_timeout_ms: i32,
    /// What the member has been told it owns.
    pub assigned: Assignment,
    /// Told to give these up; not yet reported released.
    pub(super) revoking: Assignment,
    /// The member epoch each partition of `assigned` and `revoking` was assigned at.
    pub(super) assigned_at: AssignmentEpochs,
    /// When a revocation must be acknowledged by (rebalance timeout).
    pub(super) revoke_deadline: Option<i64>,
    pub(super) session_deadline: i64,
    /// The assignment last sent, so unchanged ones are answered with null (as Kafka does).
    pub(super) last_sent: Option<Assignment>,
    /// Set for a member that speaks the classic protocol (JoinGroup/SyncGroup/Heartbeat)
    /// inside this consumer group: online migration, `classic_members.rs`.
    pub classic: Option<ClassicMeta>,
}

/// What a classic member of a consumer group adds (Kafka's `ClassicMemberMetadata`, plus
/// its join and sync deadlines, which are not persisted).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassicMeta {
    pub session_timeout_ms: i32,
    /// (protocol name, subscription metadata) from its last JoinGroup, preferred first.
    pub protocols: Vec<(String, bytes::Bytes)>,
    /// Told to rejoin (REBALANCE_IN_PROGRESS): removed if no JoinGroup by then.
    pub(super) join_deadline: Option<i64>,
    /// Joined: removed if no SyncGroup by then.
    pub(super) sync_deadline: Option<i64>,
}

impl ConsumerMember {
    /// Explicitly named or matched by the regex.
    pub fn subscribes_to(&self, topic: &str) -> bool {
        self.subscribed.iter().any(|t| t == topic) || self.matched.contains(topic)
    }
}

/// Which topics a member's regex may resolve to. Kafka resolves a subscription regex only to
/// the topics the member's principal is allowed to DESCRIBE; the broker decides that, the
/// coordinator only applies it.
#[derive(Clone, Default)]
pub enum RegexScope {
    /// Every topic (no authorizer).
    #[default]
    All,
    /// Only the topics this predicate accepts.
    Only(Arc<dyn Fn(&str) -> bool + Send + Sync>),
    /// Not known (a member restored from the log, until its next heartbeat): its matched set
    /// is left as it is.
    Unknown,
}

impl std::fmt::Debug for RegexScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RegexScope::All => "All",
            RegexScope::Only(_) => "Only(..)",
            RegexScope::Unknown => "Unknown",
        })
    }
}

/// A `subscribed_topic_regex`, compiled to match whole topic names (Kafka uses `matches()`).
#[derive(Clone, Debug)]
pub struct TopicRegex {
    source: String,
    whole: regex::Regex,
}

impl TopicRegex {
    /// Fails with the parser's explanation when `source` is not a valid RE2-style regex.
    pub fn new(source: &str) -> Result<TopicRegex, regex::Error> {
        // Check the expression on its own first so "a)|(b" cannot sneak past the wrapper.
        regex::Regex::new(source)?;
        let whole = regex::Regex::new(&format!("^(?:{source})$"))?;
        Ok(TopicRegex {
            source: source.to_string(),
            whole,
        })
    }
    pub fn as_str(&self) -> &str {
        &self.source
    }
    pub fn matches(&self, topic: &str) -> bool {
        self.whole.is_match(topic)
    }
}

#[derive(Clone, Debug, Default)]
pub struct ConsumerState {
    pub epoch: i32,
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, ConsumerMember>,
    pub target: BTreeMap<String, Assignment>,
    /// Partition counts the target was computed from.
    pub(super) counts: BTreeMap<String, i32>,
    /// The server assignor the members asked for last ("uniform" unless one asked "range").
    pub assignor: Assignor,
    /// Existing topics (internal ones included), what regexes resolve against.
    pub(super) topics: BTreeSet<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Assignor {
    #[default]
    Uniform,
    Range,
}

impl Assignor {
    pub fn parse(name: &str) -> Option<Assignor> {
        match name {
            "uniform" => Some(Assignor::Uniform),
            "range" => Some(Assignor::Range),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Uniform => "uniform",
            Assignor::Range => "range",
        }
    }
}

/// One ConsumerGroupHeartbeat as the state machine needs it.
#[derive(Clone, Debug, Default)]
pub struct Heartbeat {
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// [`UNCHANGED_TIMEOUT`] (-1): unchanged since the last heartbeat.
    pub rebalance_timeout_ms: i32,
    /// `None`: unchanged since the last heartbeat.
    pub subscribed: Option<Vec<String>>,
    /// `None`: unchanged; `Some(None)`: cleared (an empty string on the wire).
    pub regex: Option<Option<TopicRegex>>,
    /// `None`: unchanged since the last heartbeat.
    pub owned: Option<Assignment>,
    /// The server assignor the member asks for, if any.
    pub assignor: Option<Assignor>,
    /// Which topics the member's regex may resolve to (sent with every heartbeat).
    pub regex_scope: RegexScope,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HeartbeatResult {
    pub member_id: String,
    pub member_epoch: i32,
    /// `None`: unchanged.
    pub assignment: Option<Assignment>,
}

pub const LEAVE: i32 = -1;
pub const STATIC_LEAVE: i32 = -2;
/// A heartbeat's RebalanceTimeoutMs when it has not changed since the last one.
pub const UNCHANGED_TIMEOUT: i32 = -1;

impl ConsumerState {
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Kafka's consumer group states.
    pub fn state_name(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else if self.assignment_epoch < self.epoch {
            "Assigning"
        } else if self
            .members
            .values()
            // A static member away (epoch -2) keeps its partitions and is not reconciling.
            .filter(|m| m.epoch != STATIC_LEAVE)
            .any(|m| m.epoch != self.assignment_epoch || !m.revoking.is_empty())
        {
            "Reconciling"
        } else {
            "Stable"
        }
    }

    /// Every topic some member subscribes to, by name or through its regex.
    pub fn subscribed_topics(&self) -> BTreeSet<String> {
        self.members
            .values()
            .flat_map(|m| m.subscribed.iter().chain(m.matched.iter()).cloned())
            .collect()
    }

    /// Whether some member subscribes by regex (so the caller must list the topics).
    pub fn uses_regex(&self) -> bool {
        self.members.values().any(|m| m.regex.is_some())
    }

    /// Every existing topic (internal ones included, as in Kafka), for the next heartbeat's
    /// regex resolution.
    pub fn observe_topics(&mut self, topics: BTreeSet<String>) {
        self.topics = topics;
    }

    /// Re-match every member's regex; a changed match set bumps the group epoch.
    fn resolve_regexes(&mut self) {
        let topics = &self.topics;
        let mut changed = false;
        for m in self.members.values_mut() {
            let matched: BTreeSet<String> = match (&m.regex, &m.regex_scope) {
                (None, _) => BTreeSet::new(),
                (Some(_), RegexScope::Unknown) => continue,
                (Some(re), RegexScope::All) => {
                    topics.iter().filter(|t| re.matches(t)).cloned().collect()
                }
                (Some(re), RegexScope::Only(visible)) => topics
                    .iter()
                    .filter(|t| re.matches(t) && visible(t))
                    .cloned()
                    .collect(),
            };
            if matched != m.matched {
                m.matched = matched;
                changed = true;
            }
        }
        if changed {
            self.epoch += 1;
        }
    }

    /// The static member holding `instance`, if any.
    pub(super) fn static_member(&self, instance: &str) -> Option<&ConsumerMember> {
        self.members
            .values()
            .find(|m| m.instance_id.as_deref() == Some(instance))
    }

    /// Handle one heartbeat. `counts` has the partition count of every existing topic the
    /// group (with this request's subscription) subscribes to. The request's fields were
    /// validated by the handler (required fields of a join, epoch range, names not blank).
    pub fn heartbeat(
        &mut self,
        hb: Heartbeat,
        counts: &HashMap<String, i32>,
        session_timeout_ms: i32,
        now: i64,
    ) -> Result<HeartbeatResult, ResponseError> {
        if hb.member_epoch == LEAVE || hb.member_epoch == STATIC_LEAVE {
            return self.leave(hb);
        }
        // Kafka answers a "full" heartbeat (a join, or one carrying every field a join must
        // carry, which clients send after an error) with the assignment even if unchanged.
        let full = hb.member_epoch == 0
            || (hb.rebalance_timeout_ms != UNCHANGED_TIMEOUT
                && (hb.subscribed.is_some() || hb.regex.is_some())
                && hb.owned.is_some());
        if hb.member_epoch == 0 {
            return self.join(hb, counts, session_timeout_ms, now);
        }
        if let Some(instance) = &hb.instance_id {
            match self.static_member(instance) {
                None => return Err(ResponseError::UnknownMemberId),
                Some(m) if m.id != hb.member_id => return Err(ResponseError::FencedInstanceId),
                Some(_) => {}
            }
        }
        let Some(member) = self.members.get_mut(&hb.member_id) else {
            return Err(ResponseError::UnknownMemberId);
        };
        if hb.member_epoch != member.epoch {
            let owned_ok = hb
                .owned
                .as_ref()
                .is_some_and(|o| is_subset(o, &member.assigned));
            if !(hb.member_epoch == member.previous_epoch && owned_ok) {
                return Err(ResponseError::FencedMemberEpoch);
            }
        }
        member.session_deadline = now + i64::from(session_timeout_ms);
        if hb.rebalance_timeout_ms != UNCHANGED_TIMEOUT {
            member.rebalance_timeout_ms = hb.rebalance_timeout_ms;
        }
        if hb.rack_id.is_some() {
            member.rack_id = hb.rack_id;
        }
        member.client_id = hb.client_id;
        member.client_host = hb.client_host;
        member.regex_scope = hb.regex_scope;
        // Whatever changed, the group epoch goes up once, as Kafka bumps it once per
        // heartbeat that changes the member's metadata.
        let mut changed = false;
        if let Some(subscribed) = hb.subscribed {
            if subscribed != member.subscribed {
                member.subscribed = subscribed;
                changed = true;
            }
        }
        if let Some(regex) = hb.regex {
            if regex.as_ref().map(TopicRegex::as_str)
                != member.regex.as_ref().map(TopicRegex::as_str)
            {
                member.regex = regex;
                changed = true;
            }
        }
        changed |= self.use_assignor(hb.assignor);
        if changed {
            self.epoch += 1;
        }
        self.resolve_regexes();
        let id = hb.member_id;
        Ok(self.reconcile(&id, hb.owned.as_ref(), counts, now, full))
    }

    /// A member asking for another server assignor switches the group to it. Whether it did
    /// (the caller bumps the group epoch).
    fn use_assignor(&mut self, asked: Option<Assignor>) -> bool {
        match asked.filter(|a| *a != self.assignor) {
            Some(a) => {
                self.assignor = a;
                true
            }
            None => false,
        }
    }

    /// Member epoch 0: a new member, a member rejoining, or a static member taking its
    /// instance id back after a temporary leave (it inherits the old member's partitions).
    fn join(
        &mut self,
        hb: Heartbeat,
        counts: &HashMap<String, i32>,
        session_timeout_ms: i32,
        now: i64,
    ) -> Result<HeartbeatResult, ResponseError> {
        let id = if hb.member_id.is_empty() {
            uuid::Uuid::new_v4().to_string()
        } else {
            hb.member_id.clone()
        };
        let mut inherited = (Assignment::new(), AssignmentEpochs::new());
        if let Some(instance) = &hb.instance_id {
            if let Some(old) = self.static_member(instance) {
                // Only a static member that left with epoch -2 releases its instance id.
                if old.epoch != STATIC_LEAVE {
                    return Err(ResponseError::UnreleasedInstanceId);
                }
                let old_id = old.id.clone();
                if let Some(old) = self.members.remove(&old_id) {
                    inherited = (old.assigned, old.assigned_at);
                }
                self.target.remove(&old_id);
            }
        }
        let subscribed = match (hb.subscribed, &hb.regex) {
            (Some(s), _) => s,
            (None, Some(_)) => Vec::new(),
            (None, None) => return Err(ResponseError::InvalidRequest),
        };
        // The join bumps the group epoch, once, whatever assignor it asks for.
        self.use_assignor(hb.assignor);
        self.members.insert(
            id.clone(),
            ConsumerMember {
                id: id.clone(),
                instance_id: hb.instance_id,
                rack_id: hb.rack_id,
                client_id: hb.client_id,
                client_host: hb.client_host,
                epoch: 0,
                previous_epoch: 0,
                subscribed,
                regex: hb.regex.flatten(),
                matched: BTreeSet::new(),
                regex_scope: hb.regex_scope,
                rebalance_timeout_ms: hb.rebalance_timeout_ms,
                assigned: inherited.0,
                revoking: Assignment::new(),
                assigned_at: inherited.1,
                revoke_deadline: None,
                session_deadline: now + i64::from(session_timeout_ms),
                last_sent: None,
                classic: None,
            },
        );
        self.epoch += 1;
        self.resolve_regexes();
        Ok(self.reconcile(&id, hb.owned.as_ref(), counts, now, true))
    }

    /// The member a leaving heartbeat (epoch -1 or -2) names, checked as [`Self::leave`]
    /// checks it, without changing anything.
    pub fn leaving_member(&self, hb: &Heartbeat) -> Result<String, ResponseError> {
        match &hb.instance_id {
            None if self.members.contains_key(&hb.member_id) => Ok(hb.member_id.clone()),
            None => Err(ResponseError::UnknownMemberId),
            Some(instance) => {
                let m = self
                    .static_member(instance)
                    .ok_or(ResponseError::UnknownMemberId)?;
                if m.id != hb.member_id {
                    return Err(ResponseError::FencedInstanceId);
                }
                Ok(m.id.clone())
            }
        }
    }

    /// Member epoch -1 (leave) or -2 (a static member leaving for a while: it keeps its
    /// partitions, no rebalance, until its session expires or its instance id rejoins).
    fn leave(&mut self, hb: Heartbeat) -> Result<HeartbeatResult, ResponseError> {
        let id = match &hb.instance_id {
            None => hb.member_id.clone(),
            Some(instance) => {
                let m = self
                    .static_member(instance)
                    .ok_or(ResponseError::UnknownMemberId)?;
                if m.id != hb.member_id {
                    return Err(ResponseError::FencedInstanceId);
                }
                m.id.clone()
            }
        };
        if hb.member_epoch == STATIC_LEAVE && hb.instance_id.is_some() {
            let m = self
                .members
                .get_mut(&id)
                .ok_or(ResponseError::UnknownMemberId)?;
            m.epoch = STATIC_LEAVE;
            m.revoking.clear();
            m.revoke_deadline = None;
        } else {
            if self.members.remove(&id).is_none() {
                return Err(ResponseError::UnknownMemberId);
            }
            self.target.remove(&id);
            self.epoch += 1;
        }
        Ok(HeartbeatResult {
            member_id: id,
            member_epoch: hb.member_epoch,
            assignment: None,
        })
    }

    /// Recompute the target if needed and move the member towards it.
    pub(super) fn reconcile(
        &mut self,
        id: &str,
        owned: Option<&Assignment>,
        counts: &HashMap<String, i32>,
        now: i64,
        full: bool,
    ) -> HeartbeatResult {
        let wanted: BTreeMap<String, i32> = self
            .subscribed_topics()
            .into_iter()
            .filter_map(|t| counts.get(&t).map(|c| (t, *c)))
            .collect();
        if wanted != self.counts {
            self.counts = wanted;
            self.epoch += 1;
        }
        if self.assignment_epoch < self.epoch {
            self.target = match self.assignor {
                Assignor::Uniform => uniform_assignment(&self.members, &self.counts),
                Assignor::Range => range_assignment(&self.members, &self.counts),
            };
            self.assignment_epoch = self.epoch;
        }
        let target = self.target.get(id).cloned().unwrap_or_default();
        // Partitions some other member still holds or has not confirmed releasing.
        let mut taken: BTreeSet<(String, i32)> = BTreeSet::new();
        for (other, m) in &self.members {
            if other != id {
                for (t, ps) in m.assigned.iter().chain(m.revoking.iter()) {
                    taken.extend(ps.iter().map(|p| (t.clone(), *p)));
                }
            }
        }
        let assignment_epoch = self.assignment_epoch;
        let Some(m) = self.members.get_mut(id) else {
            return HeartbeatResult {
                member_id: id.to_string(),
                member_epoch: 0,
                assignment: None,
            };
        };
        if let Some(owned) = owned {
            // Whatever the member no longer reports is released.
            for (t, ps) in m.revoking.iter_mut() {
                let still = owned.get(t);
                ps.retain(|p| still.is_some_and(|s| s.contains(p)));
            }
            m.revoking.retain(|_, ps| !ps.is_empty());
        }
        let mut keep = Assignment::new();
        for (t, ps) in &m.assigned {
            for p in ps {
                if target.get(t).is_some_and(|tp| tp.contains(p)) {
                    keep.entry(t.clone()).or_default().insert(*p);
                } else {
                    m.revoking.entry(t.clone()).or_default().insert(*p);
                }
            }
        }
        if !m.revoking.is_empty() {
            m.revoke_deadline
                .get_or_insert(now + i64::from(m.rebalance_timeout_ms));
        } else {
            m.revoke_deadline = None;
        }
        if m.revoking.is_empty() {
            for (t, ps) in &target {
                for p in ps {
                    if !taken.contains(&(t.clone(), *p)) {
                        keep.entry(t.clone()).or_default().insert(*p);
                    }
                }
            }
            if m.epoch != assignment_epoch {
                m.previous_epoch = m.epoch;
                m.epoch = assignment_epoch;
            }
        }
        m.assigned = keep;
        commit_fence::settle(
            &mut m.assigned_at,
            commit_fence::held([&m.assigned, &m.revoking]),
            m.epoch,
        );
        let assignment = if full || m.last_sent.as_ref() != Some(&m.assigned) {
            m.last_sent = Some(m.assigned.clone());
            Some(m.assigned.clone())
        } else {
            None
        };
        HeartbeatResult {
            member_id: id.to_string(),
            member_epoch: m.epoch,
            assignment,
        }
    }

    /// Members whose session expired, who did not release partitions in time, or (classic
    /// members) who did not rejoin or sync within their rebalance timeout.
    pub fn expired(&self, now: i64) -> Vec<String> {
        self.members
            .values()
            .filter(|m| {
                m.session_deadline <= now
                    || m.revoke_deadline.is_some_and(|d| d <= now)
                    || m.classic.as_ref().is_some_and(|c| {
                        c.join_deadline.is_some_and(|d| d <= now)
                            || c.sync_deadline.is_some_and(|d| d <= now)
                    })
            })
            .map(|m| m.id.clone())
            .collect()
    }

    /// Fence a member: gone with its target, the group epoch bumped. Whether the member
    /// existed.
    pub fn remove_member(&mut self, id: &str) -> bool {
        if self.members.remove(id).is_none() {
            return false;
        }
        self.target.remove(id);
        self.epoch += 1;
        true
    }

    /// Expired members are removed (see [`ConsumerState::expired`]).
    pub fn tick(&mut self, now: i64) -> bool {
        let gone = self.expired(now);
        for id in &gone {
            tracing::info!(member = %id, "consumer group member expired");
            self.members.remove(id);
            self.target.remove(id);
        }
        if !gone.is_empty() {
            self.epoch += 1;
        }
        !gone.is_empty()
    }

    /// OffsetCommit or TxnOffsetCommit (`offset_commit_version` None) from a member:
    /// [`commit_fence::commit_member`] (classic members may use any version), then
    /// [`commit_fence::member_fence`] over the partitions it holds or revokes.
    pub fn validate_commit(
        &self,
        member_id: &str,
        epoch: i32,
        offset_commit_version: Option<i16>,
    ) -> Result<CommitFence, ResponseError> {
        let member = commit_fence::commit_member(
            &self.members,
            member_id,
            epoch,
            offset_commit_version,
            |m| m.classic.is_some(),
        )?;
        let Some(m) = member else {
            return Ok(CommitFence::Open);
        };
        commit_fence::member_fence(m.epoch, epoch, m.classic.is_some(), || {
            commit_fence::held([&m.assigned, &m.revoking])
                .into_iter()
                .map(|k| {
                    let at = m.assigned_at.get(&k).copied().unwrap_or(m.epoch);
                    (k, at)
                })
                .collect()
        })
    }

    /// OffsetFetch from `member_id` at `epoch`: the member must exist and the epoch be its
    /// current one.
    pub fn validate_fetch(&self, member_id: &str, epoch: i32) -> Result<(), ResponseError> {
        let m = self
            .members
            .get(member_id)
            .ok_or(ResponseError::UnknownMemberId)?;
        if epoch != m.epoch {
            // A classic member commits with its generation, which is its member epoch.
            return Err(if m.classic.is_some() {
                ResponseError::IllegalGeneration
            } else {
                ResponseError::StaleMemberEpoch
            });
        }
        Ok(())
    }
}

fn is_subset(a: &Assignment, b: &Assignment) -> bool {
    a.iter()
        .all(|(t, ps)| ps.is_empty() || b.get(t).is_some_and(|bs| ps.is_subset(bs)))
}

/// Each topic's partitions round-robin over its subscribers (sorted by member id), starting
/// where the previous topic stopped so that many single-partition topics still spread.
pub fn uniform_assignment(
    members: &BTreeMap<String, ConsumerMember>,
    counts: &BTreeMap<String, i32>,
) -> BTreeMap<String, Assignment> {
    let mut out: BTreeMap<String, Assignment> = members
        .keys()
        .map(|id| (id.clone(), Assignment::new()))
        .collect();
    let mut next = 0usize;
    for (topic, count) in counts {
        let subscribers: Vec<&String> = members
            .values()
            .filter(|m| m.subscribes_to(topic))
            .map(|m| &m.id)
            .collect();
        if subscribers.is_empty() {
            continue;
        }
        for p in 0..*count {
            let owner = subscribers[next % subscribers.len()];
            next += 1;
            if let Some(a) = out.get_mut(owner) {
                a.entry(topic.clone()).or_default().insert(p);
            }
        }
    }
    out
}

/// Kafka's range assignor: each topic's partitions cut into contiguous ranges, one per
/// subscriber (sorted by member id), the first `count % n` ranges one partition longer.
pub fn range_assignment(
    members: &BTreeMap<String, ConsumerMember>,
    counts: &BTreeMap<String, i32>,
) -> BTreeMap<String, Assignment> {
    let mut out: BTreeMap<String, Assignment> = members
        .keys()
        .map(|id| (id.clone(), Assignment::new()))
        .collect();
    for (topic, count) in counts {
        let subscribers: Vec<&String> = members
            .values()
            .filter(|m| m.subscribes_to(topic))
            .map(|m| &m.id)
            .collect();
        let n = i32::try_from(subscribers.len()).unwrap_or(i32::MAX);
        if n == 0 {
            continue;
        }
        let (base, extra) = (count / n, count % n);
        let mut start = 0;
        for (i, id) in subscribers.into_iter().enumerate() {
            let len = base + i32::from(i32::try_from(i).unwrap_or(i32::MAX) < extra);
            if let Some(a) = out.get_mut(id) {
                if len > 0 {
                    a.entry(topic.clone())
                        .or_default()
                        .extend(start..start + len);
                }
            }
            start += len;
        }
    }
    out
}

#[cfg(test)]
#[path = "consumer_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "consumer_regex_tests.rs"]
mod regex_tests;

#[cfg(test)]
#[path = "consumer_heartbeat_tests.rs"]
mod heartbeat_tests;
