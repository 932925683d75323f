//! A connection's mute (KIP-219): after a response with `throttle_time_ms > 0` is written, the
//! connection does not handle the client's next request until that time has passed. The
//! writer sets it ([`Mute::after_response`]); the reader waits it out ([`Mute::wait`]) before
//! handling the next frame, so a client that ignores the throttle gains nothing by sending.
//!
//! A request without a response (acks=0 Produce) is throttled by muting at once: the
//! connection runs dispatch inside [`CURRENT`], through which the quota code reaches the
//! connection's mute ([`mute_current`]).
//!
//! Thread safety: one atomic (the deadline in ms since the mute was created), shared by the
//! connection's reader and writer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

tokio::task_local! {
    /// The mute of the connection whose request is being dispatched (set by the connection).
    pub static CURRENT: std::sync::Arc<Mute>;
}

/// Mutes the connection being served for `throttle_ms` from now (a throttled request that
/// gets no response); no effect outside a connection (in-process callers, tests).
pub fn mute_current(throttle_ms: i32) {
    let _ = CURRENT.try_with(|m| m.after_response(throttle_ms));
}

pub struct Mute {
    start: Instant,
    /// Milliseconds since `start` until which the connection is muted (0: not muted).
    until_ms: AtomicU64,
}

impl Default for Mute {
    fn default() -> Self {
        Mute {
            start: Instant::now(),
            until_ms: AtomicU64::new(0),
        }
    }
}

impl Mute {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A response throttled for `throttle_ms` was just sent: mute from now for that long.
    pub fn after_response(&self, throttle_ms: i32) {
        if let Ok(ms) = u64::try_from(throttle_ms) {
            if ms > 0 {
                let until = self.now_ms().saturating_add(ms);
                self.until_ms.fetch_max(until, Ordering::AcqRel);
            }
        }
    }

    /// Returns once the connection is no longer muted (at once when it is not).
    pub async fn wait(&self) {
        let until = self.until_ms.load(Ordering::Acquire);
        let now = self.now_ms();
        if until > now {
            tokio::time::sleep(Duration::from_millis(until - now)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waits_out_the_longest_throttle() {
        let mute = Mute::default();
        let t = Instant::now();
        mute.wait().await;
        assert!(t.elapsed() < Duration::from_millis(50));
        mute.after_response(120);
        mute.after_response(10);
        mute.after_response(0);
        mute.after_response(-5);
        mute.wait().await;
        assert!(
            t.elapsed() >= Duration::from_millis(115),
            "{:?}",
            t.elapsed()
        );
    }
}
