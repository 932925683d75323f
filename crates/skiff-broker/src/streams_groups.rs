//! The seam between the streams group handlers (KIP-1071: `handlers::streams_group_heartbeat`
//! and `handlers::streams_group_describe`) and the streams group coordinator. The handlers do
//! what Kafka's `KafkaApis` does before it reaches the group coordinator (the group ACL
//! checks); everything about groups (validation, membership, topology, assignment, records,
//! internal topics) is behind [`StreamsGroups`], which `crate::streams_service` implements
//! and `Broker::start` installs in `Broker::streams_groups`. A broker without it (an
//! in-process test) answers both APIs UNSUPPORTED_VERSION, as Kafka does while the streams
//! group protocol is disabled; never a made-up success.
//!
//! Thread-safety: implementations are shared (`Send + Sync`) and called concurrently from
//! any runtime worker; a call must not block (do I/O on the blocking pool or a thread of
//! its own and return a future, as the group coordinator's commits do).

use std::future::Future;
use std::pin::Pin;

use skiff_protocol::streams::describe::DescribedGroup;
use skiff_protocol::streams::heartbeat::{
    StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse,
};

use crate::authz::Authz;
use crate::errors::BrokerError;

/// Who is calling, for the coordinator: members record their client id and host, and a
/// heartbeat that brings a topology must check the requester's topic permissions for the
/// internal topics it would create (Kafka requires CREATE on the cluster or on each topic),
/// with [`Authz::allows`] / [`Authz::allows_cluster`] on `authz`.
pub struct Caller {
    /// The request's authorization view (the authorizer snapshot, principal and host).
    pub authz: Authz,
    /// The API version of the request (the response must fit it).
    pub version: i16,
    /// The client id of the request header.
    pub client_id: String,
    /// The peer as Kafka prints it (`/127.0.0.1`).
    pub client_host: String,
}

/// A heartbeat's answer to come.
pub type HeartbeatFuture =
    Pin<Box<dyn Future<Output = Result<StreamsGroupHeartbeatResponse, BrokerError>> + Send>>;

/// What the streams group coordinator provides to the broker's handlers.
pub trait StreamsGroups: Send + Sync {
    /// One heartbeat, after the group READ check. `Ok` is the whole response (the handler
    /// only raises its throttle time); `Err` answers the request with the error's code
    /// (`errors::kafka_error`) as the top-level error.
    fn heartbeat(&self, caller: Caller, request: StreamsGroupHeartbeatRequest) -> HeartbeatFuture;

    /// Describes one group, after its DESCRIBE check. `Err` answers that group alone with
    /// the error's code. The handler fills `authorized_operations` when asked.
    fn describe(
        &self,
        caller: &Caller,
        group_id: &str,
        include_topology_description: bool,
    ) -> Result<DescribedGroup, BrokerError>;
}
