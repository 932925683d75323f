//! The web console in a real browser (headless Chromium through chromedriver) against the
//! real skiff binary, with data written by librdkafka: every page loads without browser
//! console errors and passes the accessibility checks at laptop and phone width, shows the
//! figures the Kafka API reports for the same state, the actions work, the ACLs hide and
//! refuse what they forbid, and read-only mode changes nothing. SKIFF_CONSOLE_SCREENSHOTS=1
//! saves the screenshots under docs/console/ (the README shows them).
//!
//! Needs `chromium` and `chromium-driver` (Debian; tests/run.sh installs them).

#![allow(clippy::unwrap_used)]

mod common;
mod console_cases;
mod console_support;
