//! The HTTP API (`skiff.http.listener`, docs/http-api.md): key lookups and table snapshots of
//! compacted topics and compaction controls under `/v1`, `/metrics`, and the web console under
//! `/console` ([`crate::console`]), on axum over hyper. The same
//! server serves `metrics.listener` with a router of `/metrics` alone ([`metrics_router`]).
//!
//! Modules, one job each: [`server`] accepts (TLS or not) and serves connections with
//! timeouts and a connection bound; [`router`] maps paths to routes; [`auth`] turns the
//! `Authorization` header into a principal; [`errors`] is the one error shape;
//! `routes_*` are the routes; [`key_segment`] decodes keys given in URLs.
//!
//! Thread safety: [`HttpApi`] is shared by every connection behind an `Arc`; it holds no lock.

pub mod auth;
pub mod errors;
pub mod key_segment;
pub mod router;
mod routes_compaction;
mod routes_lookup;
mod routes_metrics;
mod routes_tables;
pub mod server;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::http::HeaderMap;

use self::auth::HttpAuth;
use self::errors::ApiError;
use crate::authz::{AclOperation, Authz, ResourceType};
use crate::table_snapshot::TableSnapshots;
use crate::Broker;

pub use routes_compaction::ticket_url;
pub use routes_metrics::metrics_router;

/// What the routes share: the broker, its snapshot service (the concurrency bound of
/// `skiff.snapshot.max.concurrent` lives here, one per HTTP API) and the authentication setup.
pub struct HttpApi {
    pub broker: Arc<Broker>,
    pub snapshots: TableSnapshots,
    pub auth: HttpAuth,
    /// The web console, when `skiff.console.enable` (its routes are mounted only then).
    pub console: Option<crate::console::Console>,
}

impl HttpApi {
    /// Reads `skiff.http.authentication` and the SASL setup; the error names the key.
    pub fn new(broker: Arc<Broker>) -> Result<HttpApi, String> {
        Ok(HttpApi {
            snapshots: TableSnapshots::new(&broker.config),
            auth: HttpAuth::from_broker(&broker)?,
            console: broker
                .config
                .skiff_console_enable
                .then(|| crate::console::Console::start(&broker)),
            broker,
        })
    }

    /// Authenticates the caller and returns its authorization view (a 401 when the listener
    /// requires credentials and they are missing or wrong).
    pub(crate) async fn caller(&self, headers: &HeaderMap, peer: &Peer) -> Result<Authz, ApiError> {
        let principal = self
            .auth
            .authenticate(headers, self.broker.clock.now_ms())
            .await?;
        Ok(Authz::for_principal(
            &self.broker,
            principal.kind,
            &principal.name,
            &peer.0.ip().to_string(),
        ))
    }
}

/// What `skiff.http.*` asks for, built and checked (at start, so a bad setting stops it): the
/// router, and the TLS acceptor when `skiff.http.ssl.enabled` (the `ssl.*` keystore of the
/// broker's SSL listeners, overridable with `listener.name.http.ssl.*`).
pub fn from_config(
    broker: Arc<Broker>,
) -> Result<(axum::Router, Option<tokio_rustls::TlsAcceptor>), String> {
    let tls = if broker.config.skiff_http_ssl_enabled {
        let t = crate::net::tls::listener_tls(&broker.config, "HTTP")
            .map_err(|e| format!("skiff.http.ssl.enabled: {e}"))?;
        Some(t.acceptor)
    } else {
        None
    };
    let api = Arc::new(HttpApi::new(broker)?);
    Ok((router::router(api), tls))
}

/// The client's address, put into each request's extensions by the server (ACL host checks).
#[derive(Clone, Copy, Debug)]
pub struct Peer(pub SocketAddr);

/// The refusal of a topic route unless the caller may do every one of `needs` on `topic`
/// (the same answer whether or not the topic exists).
fn require_topic(authz: &Authz, topic: &str, needs: &[AclOperation]) -> Result<(), ApiError> {
    if needs
        .iter()
        .all(|op| authz.allows(*op, ResourceType::Topic, topic))
    {
        Ok(())
    } else {
        Err(ApiError::topic_denied())
    }
}

fn bad_path(e: PathRejection) -> ApiError {
    ApiError::bad_request("bad_path", e.body_text())
}

fn bad_query(e: QueryRejection) -> ApiError {
    ApiError::bad_request("bad_query", e.body_text())
}
