//! Support for the end-to-end suites: the raw wire client ([`raw`]), unique topic names, and
//! the process starter from `skiff-testkit` re-exported, so every suite starts the real
//! `skiff` binary the same way (free loopback port, temporary data directory, log capture,
//! bounded start and stop, kill -9, restart; see that crate).
//!
//! The binary comes from `E2E_SKIFF_BIN`, else `$CARGO_TARGET_DIR/debug/skiff`, else
//! `<workspace>/target/debug/skiff`; build it first (`cargo build -p skiff`).

pub mod acl;
pub mod raw;

pub use skiff_testkit::{
    free_port, skiff_bin, workspace_root, Broker, Options, Ready, START_TIMEOUT, STOP_TIMEOUT,
};

/// A topic name unique to this process and call, so tests never collide.
pub fn unique_topic(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{n}", std::process::id())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn unique_topics_differ() {
        assert_ne!(unique_topic("t"), unique_topic("t"));
    }

    #[test]
    fn missing_binary_is_a_clear_error() {
        // Only meaningful when E2E_SKIFF_BIN is not pointing at a real file.
        if skiff_bin().is_file() {
            return;
        }
        let err = Broker::start().err().unwrap().to_string();
        assert!(err.contains("cargo build -p skiff"), "{err}");
    }
}
