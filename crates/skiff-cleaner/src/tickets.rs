//! Compact-now tickets: one per request for an immediate pass on a partition
//! (`CleanerHandle::compact_now`), followed from queued to running to an outcome.
//!
//! Bounded: at most [`MAX_FINISHED_TICKETS`] finished tickets are remembered (the oldest is
//! forgotten first); queued and running ones are at most one per partition each, because a
//! request for a partition that already has a queued ticket gets that ticket back.
//!
//! Plain data kept inside the pool's state and only touched under its lock; no I/O.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::pass::PassStats;

/// Finished tickets remembered for `ticket_status`: enough for an operator or a script to poll
/// a burst of requests (a whole topic's partitions), small enough to be nothing in memory.
pub const MAX_FINISHED_TICKETS: usize = 1024;

/// A ticket's id: increasing from 1 in a pool's life (restarting the pool starts over).
pub type TicketId = u64;

/// What `compact_now` hands back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassTicket {
    pub id: TicketId,
    pub topic: String,
    pub partition: i32,
}

/// Where a ticket stands.
#[derive(Clone, Debug, PartialEq)]
pub enum TicketState {
    /// Waiting for a cleaner thread (or for the partition's running pass to end, for free
    /// disk space, or for a resume when the partition is paused).
    Queued,
    Running,
    /// The pass ended; its figures (boxed: they are most of the enum's size).
    Done(Box<PassStats>),
    Failed(String),
    /// The log has no inactive segment: there is nothing a pass could rewrite.
    NothingToClean,
}

impl TicketState {
    pub fn name(&self) -> &'static str {
        match self {
            TicketState::Queued => "queued",
            TicketState::Running => "running",
            TicketState::Done(_) => "done",
            TicketState::Failed(_) => "failed",
            TicketState::NothingToClean => "nothing_to_clean",
        }
    }

    pub fn is_finished(&self) -> bool {
        !matches!(self, TicketState::Queued | TicketState::Running)
    }
}

/// A ticket as `ticket_status` reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct TicketStatus {
    pub ticket: PassTicket,
    pub state: TicketState,
    /// Wall-clock times (ms) of the request and of the outcome.
    pub requested_ms: i64,
    pub finished_ms: Option<i64>,
}

/// Every ticket the pool knows.
#[derive(Debug, Default)]
pub(crate) struct Tickets {
    next_id: TicketId,
    all: BTreeMap<TicketId, TicketStatus>,
    finished: VecDeque<TicketId>,
    /// Queued tickets by partition (at most one each).
    queued: HashMap<(String, i32), TicketId>,
}

impl Tickets {
    /// A new queued ticket, or the partition's already queued one.
    pub(crate) fn request(&mut self, topic: &str, partition: i32, now_ms: i64) -> PassTicket {
        let key = (topic.to_string(), partition);
        if let Some(t) = self.queued.get(&key).and_then(|id| self.all.get(id)) {
            return t.ticket.clone();
        }
        self.next_id += 1;
        let ticket = PassTicket {
            id: self.next_id,
            topic: topic.to_string(),
            partition,
        };
        self.all.insert(
            ticket.id,
            TicketStatus {
                ticket: ticket.clone(),
                state: TicketState::Queued,
                requested_ms: now_ms,
                finished_ms: None,
            },
        );
        self.queued.insert(key, ticket.id);
        ticket
    }

    pub(crate) fn status(&self, id: TicketId) -> Option<TicketStatus> {
        self.all.get(&id).cloned()
    }

    /// Whether the partition has a queued ticket.
    pub(crate) fn is_requested(&self, key: &(String, i32)) -> bool {
        self.queued.contains_key(key)
    }

    /// Partitions with a queued ticket.
    pub(crate) fn requested(&self) -> Vec<(String, i32)> {
        self.queued.keys().cloned().collect()
    }

    /// The partition's queued ticket starts running; returns its id.
    pub(crate) fn start(&mut self, key: &(String, i32)) -> Option<TicketId> {
        let id = self.queued.remove(key)?;
        if let Some(t) = self.all.get_mut(&id) {
            t.state = TicketState::Running;
        }
        Some(id)
    }

    /// Finishes the partition's queued ticket without a pass.
    pub(crate) fn finish_queued(&mut self, key: &(String, i32), state: TicketState, now_ms: i64) {
        if let Some(id) = self.queued.remove(key) {
            self.finish(id, state, now_ms);
        }
    }

    /// Records a ticket's outcome and forgets the oldest finished ones beyond the bound.
    pub(crate) fn finish(&mut self, id: TicketId, state: TicketState, now_ms: i64) {
        let Some(t) = self.all.get_mut(&id) else {
            return;
        };
        t.state = state;
        t.finished_ms = Some(now_ms);
        self.finished.push_back(id);
        while self.finished.len() > MAX_FINISHED_TICKETS {
            if let Some(old) = self.finished.pop_front() {
                self.all.remove(&old);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_request_gets_the_queued_ticket() {
        let mut t = Tickets::default();
        let a = t.request("t", 0, 1);
        assert_eq!(t.request("t", 0, 2), a);
        assert_ne!(t.request("t", 1, 2), a);
        assert_eq!(t.start(&("t".into(), 0)), Some(a.id));
        let b = t.request("t", 0, 3);
        assert_ne!(b.id, a.id, "a running ticket is not reused");
        assert_eq!(t.status(a.id).map(|s| s.state), Some(TicketState::Running));
    }

    #[test]
    fn finished_tickets_are_bounded() {
        let mut t = Tickets::default();
        let first = t.request("t", 0, 0);
        t.finish_queued(&("t".into(), 0), TicketState::NothingToClean, 1);
        for i in 0..MAX_FINISHED_TICKETS as i32 {
            t.request("t", i + 1, 0);
            t.finish_queued(&("t".into(), i + 1), TicketState::NothingToClean, 1);
        }
        assert!(t.status(first.id).is_none());
        assert_eq!(t.all.len(), MAX_FINISHED_TICKETS);
    }
}
