//! Which client connection a request arrived on, so a share session can remember the
//! connection that opened it and be closed when that connection ends (Kafka releases a
//! member's records on disconnect).
//!
//! The connection scopes each request's dispatch with [`scope`]; handlers read
//! [`current`] synchronously, before their answer waits. Requests dispatched without a
//! connection (tests, in-process callers) have none.
//!
//! Thread safety: a tokio task-local per dispatch and one atomic counter.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

tokio::task_local! {
    static CONNECTION: u64;
}

static NEXT: AtomicU64 = AtomicU64::new(1);

/// A new connection id, unique in this process.
pub fn next_id() -> u64 {
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Runs `fut` as a request of connection `id`.
pub async fn scope<F: Future>(id: u64, fut: F) -> F::Output {
    CONNECTION.scope(id, fut).await
}

/// The connection of the request being dispatched, if any.
pub fn current() -> Option<u64> {
    CONNECTION.try_with(|c| *c).ok()
}
