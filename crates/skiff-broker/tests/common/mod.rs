//! Shared by the broker's integration tests that drive `dispatch` without a socket: start a
//! broker on a data dir with `--set`-style settings, and send one decoded request.
#![allow(clippy::unwrap_used, dead_code)]

use std::path::Path;
use std::sync::Arc;

use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseKind};
use skiff_broker::dispatch::{dispatch, Reply};
use skiff_broker::Broker;
use skiff_protocol::DecodedRequest;

/// A broker on `dir` with `log.dirs` set and then `sets` (`key=value`) applied.
pub async fn start_on(dir: &Path, sets: &[&str]) -> Arc<Broker> {
    let mut all = vec![format!("log.dirs={}", dir.display())];
    all.extend(sets.iter().map(|s| s.to_string()));
    let (config, _) = skiff_config::load(None, &all, Vec::<(String, String)>::new()).unwrap();
    tokio::task::spawn_blocking(move || Broker::start(config))
        .await
        .unwrap()
        .unwrap()
}

/// One request through `dispatch`, waiting for a deferred answer; panics if there is none.
pub async fn call(
    broker: &Arc<Broker>,
    key: ApiKey,
    version: i16,
    body: RequestKind,
) -> ResponseKind {
    let request = DecodedRequest {
        api_key: key,
        api_version: version,
        header: RequestHeader::default(),
        body,
    };
    match dispatch(broker, request, "/127.0.0.1").await {
        Reply::Respond(r) => r,
        Reply::Later(f) => f.await,
        Reply::NoResponse => panic!("{key:?}: no response"),
        Reply::Close(why) => panic!("{key:?}: closed: {why}"),
    }
}
