//! Routes one decoded request to its handler. The only `match` over API keys.
//!
//! Handlers return a [`Reply`]; only the connection knows correlation ids, header versions
//! and the socket.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use kafka_protocol::messages::{RequestKind, ResponseKind};
use skiff_protocol::DecodedRequest;

use crate::broker::Broker;
use crate::handlers;

pub type ResponseFuture = Pin<Box<dyn Future<Output = ResponseKind> + Send>>;

// Moved once per request; boxing the large variant would only add an allocation.
#[allow(clippy::large_enum_variant)]
pub enum Reply {
    /// Answer now.
    Respond(ResponseKind),
    /// Answer when the future completes (acks=all durability, fetch long polls). Later
    /// requests on the connection are processed meanwhile; responses keep request order.
    Later(ResponseFuture),
    /// acks=0 produce that succeeded: Kafka sends nothing.
    NoResponse,
    /// acks=0 produce that failed: Kafka closes the connection so the client notices.
    Close(String),
}

/// `client_host` is the peer as Kafka prints it (`/127.0.0.1`): group members report it.
/// Answers as if the request came in on the first listener; see [`dispatch_on`].
pub async fn dispatch(broker: &Arc<Broker>, request: DecodedRequest, client_host: &str) -> Reply {
    dispatch_on(broker, request, client_host, "").await
}

/// [`dispatch`] for a request that arrived on the listener named `listener`: Metadata,
/// DescribeCluster and FindCoordinator advertise the advertised listener of that name.
pub async fn dispatch_on(
    broker: &Arc<Broker>,
    request: DecodedRequest,
    client_host: &str,
    listener: &str,
) -> Reply {
    let version = request.api_version;
    match request.body {
        RequestKind::ApiVersions(r) => Reply::Respond(ResponseKind::ApiVersions(
            handlers::api_versions::handle(version, r),
        )),
        RequestKind::Metadata(r) => handlers::metadata::handle(broker, version, r, listener).await,
        RequestKind::Produce(r) => handlers::produce::handle(broker, version, r).await,
        RequestKind::Fetch(r) => handlers::fetch::handle(broker, version, r),
        RequestKind::ListOffsets(r) => handlers::list_offsets::handle(broker, version, r).await,
        RequestKind::CreateTopics(r) => handlers::create_topics::handle(broker, version, r).await,
        RequestKind::DeleteTopics(r) => handlers::delete_topics::handle(broker, version, r).await,
        RequestKind::CreatePartitions(r) => {
            handlers::create_partitions::handle(broker, version, r).await
        }
        RequestKind::DescribeConfigs(r) => handlers::describe_configs::handle(broker, version, r),
        RequestKind::AlterConfigs(r) => handlers::alter_configs::handle(broker, version, r).await,
        RequestKind::IncrementalAlterConfigs(r) => {
            handlers::alter_configs::handle_incremental(broker, version, r).await
        }
        RequestKind::DeleteRecords(r) => handlers::delete_records::handle(broker, version, r).await,
        RequestKind::DescribeCluster(r) => {
            handlers::describe_cluster::handle(broker, version, r, listener)
        }
        RequestKind::DescribeLogDirs(r) => {
            handlers::describe_log_dirs::handle(broker, version, r).await
        }
        RequestKind::OffsetForLeaderEpoch(r) => {
            handlers::offset_for_leader_epoch::handle(broker, version, r)
        }
        RequestKind::FindCoordinator(r) => Reply::Respond(ResponseKind::FindCoordinator(
            handlers::find_coordinator::handle(broker, version, r, listener),
        )),
        RequestKind::JoinGroup(r) => {
            let client_id = client_id(&request.header);
            handlers::join_group::handle(broker, version, r, &client_id, client_host)
        }
        RequestKind::SyncGroup(r) => handlers::sync_group::handle(broker, version, r),
        RequestKind::Heartbeat(r) => Reply::Respond(ResponseKind::Heartbeat(
            handlers::heartbeat::handle(broker, version, r),
        )),
        RequestKind::LeaveGroup(r) => Reply::Respond(ResponseKind::LeaveGroup(
            handlers::leave_group::handle(broker, version, r),
        )),
        RequestKind::OffsetCommit(r) => handlers::offset_commit::handle(broker, version, r),
        RequestKind::OffsetFetch(r) => Reply::Respond(ResponseKind::OffsetFetch(
            handlers::offset_fetch::handle(broker, version, r),
        )),
        RequestKind::ListGroups(r) => Reply::Respond(ResponseKind::ListGroups(
            handlers::list_groups::handle(broker, version, r),
        )),
        RequestKind::DescribeGroups(r) => Reply::Respond(ResponseKind::DescribeGroups(
            handlers::describe_groups::handle(broker, version, r),
        )),
        RequestKind::DeleteGroups(r) => handlers::delete_groups::handle(broker, version, r),
        RequestKind::OffsetDelete(r) => handlers::offset_delete::handle(broker, version, r),
        RequestKind::ConsumerGroupHeartbeat(r) => {
            let client_id = client_id(&request.header);
            Reply::Respond(ResponseKind::ConsumerGroupHeartbeat(
                handlers::consumer_group_heartbeat::handle(
                    broker,
                    version,
                    r,
                    &client_id,
                    client_host,
                ),
            ))
        }
        RequestKind::ConsumerGroupDescribe(r) => {
            Reply::Respond(ResponseKind::ConsumerGroupDescribe(
                handlers::consumer_group_describe::handle(broker, version, r),
            ))
        }
        RequestKind::InitProducerId(r) => {
            handlers::init_producer_id::handle(broker, version, r).await
        }
        RequestKind::AddPartitionsToTxn(r) => {
            handlers::add_partitions_to_txn::handle(broker, version, r)
        }
        RequestKind::AddOffsetsToTxn(r) => handlers::add_offsets_to_txn::handle(broker, version, r),
        RequestKind::EndTxn(r) => handlers::end_txn::handle(broker, version, r),
        RequestKind::TxnOffsetCommit(r) => handlers::txn_offset_commit::handle(broker, version, r),
        RequestKind::ListTransactions(r) => Reply::Respond(ResponseKind::ListTransactions(
            handlers::list_transactions::handle(broker, version, r),
        )),
        RequestKind::DescribeTransactions(r) => Reply::Respond(ResponseKind::DescribeTransactions(
            handlers::describe_transactions::handle(broker, version, r),
        )),
        RequestKind::DescribeProducers(r) => Reply::Respond(ResponseKind::DescribeProducers(
            handlers::describe_producers::handle(broker, version, r),
        )),
        RequestKind::DescribeAcls(r) => handlers::acls::describe(version, r),
        RequestKind::CreateAcls(r) => handlers::acls::create(version, r),
        RequestKind::DeleteAcls(r) => handlers::acls::delete(version, r),
        _ => Reply::Close(format!(
            "{:?} is advertised by no handler; closing",
            request.api_key
        )),
    }
}

/// Run blocking storage work off the runtime's worker threads.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("storage task failed: {e}"))
}

/// The request's client id (empty when the client sent none), owned so that long-lived
/// group state does not pin the request frame.
fn client_id(header: &kafka_protocol::messages::RequestHeader) -> String {
    header
        .client_id
        .as_ref()
        .map(|c| c.to_string())
        .unwrap_or_default()
}
