//! The one context every handler receives: who asked, on which listener, with which API
//! version, and the broker that answers.
//!
//! The connection builds one per request (see [`crate::dispatch::dispatch_request`]); tests
//! and tools that call a handler directly build one with [`RequestContext::new`]. Handlers
//! read it and never change it; a handler whose answer waits moves what it needs (usually a
//! clone of [`RequestContext::broker`]) into its future.
//!
//! Thread-safety: immutable once built; `Send + Sync`.

use std::sync::Arc;

use skiff_protocol::Api;

use crate::acl_operations::Principal;
use crate::broker::Broker;
use crate::errors::{kafka_error, BrokerError};
use crate::quotas::FetchQuota;

pub struct RequestContext {
    pub broker: Arc<Broker>,
    /// The API: a kafka-protocol key, or one Skiff codes itself (`skiff_protocol::OwnApi`).
    pub api_key: Api,
    pub api_version: i16,
    pub correlation_id: i32,
    /// The client id of the request header (empty when the client sent none).
    pub client_id: String,
    /// The peer as Kafka prints it (`/127.0.0.1`): group members report it.
    pub client_host: String,
    /// The name of the `listeners` entry the request came in on (empty: the first).
    /// Metadata, DescribeCluster and FindCoordinator advertise the listener of that name.
    pub listener: String,
    /// Who is asking: the connection's principal (`User:ANONYMOUS` on PLAINTEXT, the mapped
    /// client certificate subject on TLS with one).
    pub principal: Principal<'static>,
    /// Set for a Fetch when a client quota applies: the handler judges its response with it
    /// before its fetch session records what was sent ([`crate::quotas`]).
    pub fetch_quota: Option<FetchQuota>,
}

impl RequestContext {
    /// A context for `api_key` (an `ApiKey` or an [`Api`]) at `api_version` from an anonymous
    /// client on the first listener (tests and in-process callers); set the other fields as
    /// needed.
    pub fn new(broker: Arc<Broker>, api_key: impl Into<Api>, api_version: i16) -> RequestContext {
        RequestContext {
            broker,
            api_key: api_key.into(),
            api_version,
            correlation_id: 0,
            client_id: String::new(),
            client_host: String::new(),
            listener: String::new(),
            principal: Principal::ANONYMOUS,
            fetch_quota: None,
        }
    }

    /// The API version, shorter to read in handlers.
    pub fn version(&self) -> i16 {
        self.api_version
    }

    /// The Kafka error for `err` in this request's response ([`kafka_error`]).
    pub fn error(&self, err: &BrokerError) -> kafka_protocol::ResponseError {
        kafka_error(self.api_key, self.api_version, err)
    }

    /// The Kafka error code for `err` in this request's response.
    pub fn code(&self, err: &BrokerError) -> i16 {
        self.error(err).code()
    }

    /// The code of a per-item result: 0 for success.
    pub fn result_code(&self, r: &Result<(), BrokerError>) -> i16 {
        r.as_ref().err().map_or(0, |e| self.code(e))
    }
}
