//! Who is asking, and running Kafka requests as them.
//!
//! [`Caller`] is an axum extractor: it authenticates the request with the HTTP API's
//! `skiff.http.authentication` (a 401 with the challenge makes a browser ask for the user and
//! password) and carries the principal, the client address and the ACL view. Its
//! [`Caller::kafka`] runs one Kafka request through the broker's dispatcher as that
//! principal, so a page gets exactly the answer, error codes and ACL filtering a Kafka
//! client would.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use super::page::PageError;
use super::Console;
use crate::acl_operations::Principal;
use crate::authz::{AclOperation, Authz, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::{dispatch_request, Reply};
use crate::http::{HttpApi, Peer};
use crate::Broker;

/// The client id the console's Kafka requests carry (quotas and logs see it).
pub const CLIENT_ID: &str = "skiff-console";

/// An authenticated console request.
pub struct Caller {
    pub api: Arc<HttpApi>,
    pub principal: Principal<'static>,
    /// The client's address as Kafka prints it (`/127.0.0.1`).
    pub host: String,
    pub authz: Authz,
}

impl FromRequestParts<Arc<HttpApi>> for Caller {
    type Rejection = PageError;

    async fn from_request_parts(
        parts: &mut Parts,
        api: &Arc<HttpApi>,
    ) -> Result<Caller, PageError> {
        let peer = parts
            .extensions
            .get::<Peer>()
            .copied()
            .ok_or_else(|| PageError::internal("request without a peer address"))?;
        let principal = api
            .auth
            .authenticate(&parts.headers, api.broker.clock.now_ms())
            .await
            .map_err(PageError::Api)?;
        let ip = peer.0.ip().to_string();
        let authz = Authz::for_principal(&api.broker, principal.kind, &principal.name, &ip);
        Ok(Caller {
            api: api.clone(),
            principal,
            host: format!("/{ip}"),
            authz,
        })
    }
}

impl Caller {
    pub fn broker(&self) -> &Arc<Broker> {
        &self.api.broker
    }

    /// The console's state (present: its routes are only mounted when it is on).
    pub fn console(&self) -> Result<&Console, PageError> {
        self.api
            .console
            .as_ref()
            .ok_or_else(|| PageError::internal("the console is off"))
    }

    /// May the caller do `op` on the resource?
    pub fn may(&self, op: AclOperation, rt: ResourceType, name: &str) -> bool {
        self.authz.allows(op, rt, name)
    }

    /// May the caller do `op` on the cluster?
    pub fn may_cluster(&self, op: AclOperation) -> bool {
        self.authz.allows_cluster(op)
    }

    /// Runs `body` (the request for `key` at `version`) as the caller, as if it came in on
    /// the broker's first listener, and waits for its answer.
    pub async fn kafka(
        &self,
        key: ApiKey,
        version: i16,
        body: RequestKind,
    ) -> Result<ResponseKind, PageError> {
        let ctx = RequestContext {
            broker: self.api.broker.clone(),
            api_key: key.into(),
            api_version: version,
            correlation_id: 0,
            client_id: CLIENT_ID.to_string(),
            client_host: self.host.clone(),
            listener: String::new(),
            principal: self.principal.clone(),
            fetch_quota: None,
        };
        match dispatch_request(ctx, body).await {
            Reply::Respond(r) => Ok(r),
            Reply::Later(f) => Ok(f.await),
            Reply::LaterInFiles(f) => f
                .await
                .into_response()
                .map_err(|e| PageError::internal(format!("{key:?} records unreadable: {e}"))),
            Reply::NoResponse => Err(PageError::internal(format!("{key:?} sent no answer"))),
            Reply::Close(why) => Err(PageError::internal(format!("{key:?} refused: {why}"))),
            // Only requests of APIs Skiff codes itself answer so; `body` is not one.
            Reply::Own(_) => Err(PageError::internal(format!(
                "{key:?} answered as an own API"
            ))),
        }
    }
}

/// Unwraps the response variant a request must answer with, or a 500 naming what came back.
macro_rules! expect_response {
    ($response:expr, $variant:ident) => {
        match $response {
            kafka_protocol::messages::ResponseKind::$variant(r) => Ok(r),
            other => Err($crate::console::page::PageError::internal(format!(
                "expected a {} response, got {:?}",
                stringify!($variant),
                std::mem::discriminant(&other)
            ))),
        }
    };
}
pub(crate) use expect_response;
