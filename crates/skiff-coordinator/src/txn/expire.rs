//! `transactional.id.expiration.ms` (Kafka's `TransactionStateManager`
//! `removeExpiredTransactionalIds`): a transactional id with no transaction in progress
//! (Empty, CompleteCommit, CompleteAbort), no transition being written, and no update for
//! the expiration time is removed. A tombstone is written to `__transaction_state` first, so
//! the id stays gone after a restart; an id with an ongoing or ending transaction never
//! expires. A producer using a removed id starts over with InitProducerId (a new producer id).
//!
//! Thread safety: candidates are marked `pending` under the coordinator's mutex (requests for
//! them get CONCURRENT_TRANSACTIONS meanwhile), the tombstone is written without it, then the
//! id is removed (or released if the write failed). Blocks: call on the coordinator thread.

use tracing::{info, warn};

use super::{store, TxnCoordinator};
use crate::host::Storage;

impl<S: Storage> TxnCoordinator<S> {
    /// Removes the transactional ids idle for at least `expiration_ms`; returns how many.
    pub fn expire_transactional_ids(&self, expiration_ms: i64) -> usize {
        let now = self.now();
        let due: Vec<String> = {
            let mut txns = self.lock();
            txns.values_mut()
                .filter(|m| m.is_expired(now, expiration_ms))
                .map(|m| {
                    m.pending = true;
                    m.transactional_id.clone()
                })
                .collect()
        };
        let mut removed = 0;
        for id in due {
            match self
                .state_partition(&id)
                .and_then(|p| store::write_tombstone(&*p, &id, now))
            {
                Ok(()) => {
                    self.lock().remove(&id);
                    removed += 1;
                }
                Err(e) => {
                    warn!(transactional_id = %id, error = %e,
                        "writing the tombstone of an expired transactional id failed; will retry");
                    self.release(&id);
                }
            }
        }
        if removed > 0 {
            info!(removed, expiration_ms, "removed expired transactional ids");
        }
        removed
    }
}
