//! One in-flight record of a share partition: its delivery state, how often it was handed
//! out, and, while a consumer holds it, who holds it and until when.

use std::sync::Arc;

/// The delivery state as stored in `__share_group_state` (`DeliveryState` of a state batch)
/// and as Kafka numbers it. `ARCHIVING` (3, KIP-1191 dead-letter queues) is not built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeliveryState {
    Available = 0,
    Acquired = 1,
    Acknowledged = 2,
    Archived = 4,
}

impl DeliveryState {
    pub fn id(self) -> i8 {
        self as i8
    }

    /// `None` for ids we do not know (including 3, ARCHIVING).
    pub fn from_id(id: i8) -> Option<DeliveryState> {
        match id {
            0 => Some(DeliveryState::Available),
            1 => Some(DeliveryState::Acquired),
            2 => Some(DeliveryState::Acknowledged),
            4 => Some(DeliveryState::Archived),
            _ => None,
        }
    }

    /// ACKNOWLEDGED and ARCHIVED never change again; the start offset may move past them.
    pub fn is_terminal(self) -> bool {
        matches!(self, DeliveryState::Acknowledged | DeliveryState::Archived)
    }
}

/// Who holds an ACQUIRED record and when the hold lapses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    pub member_id: Arc<str>,
    /// Wall-clock milliseconds; at or after this the record goes back (see `expire`).
    pub deadline_ms: i64,
}

/// The state of one offset between the start offset and the end offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlightRecord {
    pub state: DeliveryState,
    /// How many times the record was acquired. Kafka counts an acquisition, not a successful
    /// processing; RELEASE, lock expiry and a member leaving keep the count.
    pub delivery_count: u16,
    /// Set exactly when `state` is ACQUIRED.
    pub lock: Option<Lock>,
    /// First offset of the batch the record was acquired in. Records acquired together are
    /// handed out together again while they stay together (Kafka's in-flight batches); the
    /// size of that batch also sizes the throttled re-deliveries near the delivery limit.
    pub batch: i64,
}

impl InFlightRecord {
    pub(crate) fn acquired(member: &Arc<str>, deadline_ms: i64, batch: i64, count: u16) -> Self {
        InFlightRecord {
            state: DeliveryState::Acquired,
            delivery_count: count,
            lock: Some(Lock {
                member_id: member.clone(),
                deadline_ms,
            }),
            batch,
        }
    }

    pub(crate) fn held_by(&self, member_id: &str) -> bool {
        self.lock
            .as_ref()
            .is_some_and(|l| &*l.member_id == member_id)
    }

    /// Give the record back: AVAILABLE again, or ARCHIVED when it has already been delivered
    /// `limit` times (a poison record). Returns true when the record was archived.
    pub(crate) fn give_back(&mut self, delivery_count_limit: u16) -> bool {
        self.lock = None;
        if self.delivery_count >= delivery_count_limit {
            self.state = DeliveryState::Archived;
            true
        } else {
            self.state = DeliveryState::Available;
            false
        }
    }

    pub(crate) fn finish(&mut self, state: DeliveryState) {
        self.lock = None;
        self.state = state;
    }
}
