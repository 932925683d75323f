//! The web console (`skiff.console.enable`, docs/console.md): server-rendered HTML pages under
//! `/console` on the HTTP API listener, with one small stylesheet and one small script
//! embedded in the binary. No build step, nothing fetched from elsewhere at run time.
//!
//! Every read and every change a page makes is a Kafka request run in-process as the
//! caller's principal ([`call::Caller::kafka`]): the same handlers, validation, ACL checks and
//! error codes as a Kafka client gets, so the console shows what the Kafka API reports and
//! can do only what the caller's ACLs allow. What the Kafka protocol has no request for
//! (compaction state, charts) reads the broker directly behind the same ACL checks as the
//! HTTP API.
//!
//! Modules, one job each: [`call`] authenticates the caller and runs Kafka requests as them;
//! [`page`] is the layout and HTML escaping; [`forms`] guards the POST actions (same-origin,
//! read-only mode); [`history`] samples the figures the charts draw, [`chart`] draws them;
//! [`format`] prints bytes, rates and times; one module per page group (`overview`,
//! `topics`, `messages`, `groups`, `compaction`).
//!
//! Thread safety: the pages share [`Console`] behind the HTTP API's `Arc`; the history is
//! behind a mutex held only to copy or push a sample.

mod assets;
pub mod call;
mod chart;
mod compaction;
mod format;
mod forms;
mod groups;
pub mod history;
mod messages;
mod overview;
pub mod page;
mod topics;

use std::sync::Arc;
use std::time::Instant;

use axum::response::Redirect;
use axum::routing::get;
use axum::Router;

use self::history::History;
use crate::http::HttpApi;
use crate::Broker;

/// The console's shared state.
pub struct Console {
    /// The sampled figures of the last minutes the charts draw.
    pub history: Arc<History>,
    /// `skiff.console.read.only`: every action answers 403 and no form is shown.
    pub read_only: bool,
    /// When the HTTP API (and with it the console) started: the overview's uptime.
    pub started: Instant,
}

impl Console {
    /// The console of `broker`, with its sampler running when a tokio runtime is there to
    /// run it (tests that build an API without one get an empty history).
    pub fn start(broker: &Arc<Broker>) -> Console {
        let history = Arc::new(History::default());
        if tokio::runtime::Handle::try_current().is_ok() {
            history::spawn_sampler(Arc::downgrade(broker), history.clone());
        }
        Console {
            history,
            read_only: broker.config.skiff_console_read_only,
            started: Instant::now(),
        }
    }
}

/// The console's routes, merged into the HTTP API's router when the console is on.
pub fn routes() -> Router<Arc<HttpApi>> {
    Router::new()
        .route("/", get(|| async { Redirect::to("/console") }))
        .merge(assets::routes())
        .merge(overview::routes())
        .merge(topics::routes())
        .merge(messages::routes())
        .merge(groups::routes())
        .merge(compaction::routes())
}
