//! Routes one decoded request to its handler. The only `match` over API keys.
//!
//! Every handler has one shape, `handle(&RequestContext, Request) -> Reply` (async), so every
//! arm is one line. Each request runs inside one tracing span, `request`, with the fields
//! `api_key` (its name), `api_version`, `correlation_id`, `client_id`, `listener` and
//! `principal` (e.g. `User:ANONYMOUS`); a
//! reply that waits ([`Reply::Later`]) keeps the span while it waits.
//!
//! Handlers return a [`Reply`]; only the connection knows header versions and the socket.
//!
//! APIs kafka-protocol does not know (`skiff_protocol::OwnApi`, the streams group APIs) come
//! as `RequestBody::Own` and are routed by [`route_own`]; their handlers answer with
//! [`Reply::Own`]. They reach it only once listed in `skiff_protocol::SUPPORTED_OWN` (the
//! decoder refuses them before), which is the one switch that serves them.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use kafka_protocol::messages::{RequestKind, ResponseKind};
use skiff_log::FileRange;
use skiff_protocol::{DecodedRequest, Outside, OwnRequest, OwnResponse, RequestBody};
use tracing::Instrument;

use crate::acl_operations::Principal;
use crate::broker::Broker;
use crate::context::RequestContext;
use crate::errors::BrokerError;
use crate::handlers::*;

pub type ResponseFuture = Pin<Box<dyn Future<Output = ResponseKind> + Send>>;

/// The answer of an API Skiff codes itself, now or later.
pub type OwnResponseFuture = Pin<Box<dyn Future<Output = OwnResponse> + Send>>;

/// A [`FileAnswer`] to come.
pub type FileAnswerFuture = Pin<Box<dyn Future<Output = FileAnswer> + Send>>;

/// A Fetch answer whose large record sets are still ranges of segment files, sent by the
/// connection with sendfile so they never pass through the broker's memory. Only requests
/// on a connection that can send files get one (see [`sends_files`]).
pub struct FileAnswer {
    pub response: ResponseKind,
    /// Record sets outside the response, by the place of their partition in it.
    pub outside: Vec<Outside<Vec<FileRange>>>,
}

impl FileAnswer {
    /// Bytes of the record sets outside the response.
    pub fn outside_bytes(&self) -> usize {
        self.outside.iter().map(|o| o.len).sum()
    }

    /// The answer with its record sets read into the response, for a caller that reads the
    /// response rather than sending it.
    pub fn into_response(self) -> std::io::Result<ResponseKind> {
        use std::os::unix::fs::FileExt;
        let FileAnswer {
            mut response,
            outside,
        } = self;
        let ResponseKind::Fetch(fetch) = &mut response else {
            return Ok(response);
        };
        let mut partitions: Vec<_> = fetch
            .responses
            .iter_mut()
            .flat_map(|t| &mut t.partitions)
            .collect();
        for o in outside {
            let mut buf = vec![0u8; o.len];
            let mut at = 0;
            for r in &o.records {
                let piece = buf
                    .get_mut(at..at + r.len)
                    .ok_or(std::io::ErrorKind::InvalidData)?;
                r.file.read_exact_at(piece, r.pos)?;
                at += r.len;
            }
            let p = partitions
                .get_mut(o.partition)
                .ok_or(std::io::ErrorKind::InvalidData)?;
            p.records = Some(bytes::Bytes::from(buf));
        }
        Ok(response)
    }
}

tokio::task_local! {
    /// Set around the dispatch of a request from a connection that can send file ranges.
    static SENDS_FILES: ();
}

/// Runs `f` (a request's dispatch) as one from a connection that can send file ranges.
pub async fn sending_files<F: Future>(f: F) -> F::Output {
    SENDS_FILES.scope((), f).await
}

/// Whether the request being dispatched may be answered with a [`FileAnswer`].
pub fn sends_files() -> bool {
    SENDS_FILES.try_with(|_| ()).is_ok()
}

// Moved once per request; boxing the large variant would only add an allocation.
#[allow(clippy::large_enum_variant)]
pub enum Reply {
    /// Answer now.
    Respond(ResponseKind),
    /// Answer when the future completes (acks=all durability, fetch long polls). Later
    /// requests on the connection are processed meanwhile; responses keep request order.
    Later(ResponseFuture),
    /// [`Reply::Later`] for a Fetch whose record sets stay in their files until sent.
    LaterInFiles(FileAnswerFuture),
    /// acks=0 produce that succeeded: Kafka sends nothing.
    NoResponse,
    /// Kafka closes the connection: acks=0 produce that failed (so the client notices), or
    /// a request Kafka's parser refuses.
    Close(String),
    /// The answer to a request of an API Skiff codes itself (`RequestBody::Own`); an answer
    /// ready now is a ready future ([`Reply::own`]).
    Own(OwnResponseFuture),
}

impl Reply {
    /// Answers an own-API request now.
    pub fn own(response: OwnResponse) -> Reply {
        Reply::Own(Box::pin(std::future::ready(response)))
    }
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
    dispatch_as(broker, request, client_host, listener, Principal::ANONYMOUS).await
}

/// [`dispatch_on`] for a request from `principal` (the connection's, e.g. from its TLS
/// client certificate).
pub async fn dispatch_as(
    broker: &Arc<Broker>,
    request: DecodedRequest,
    client_host: &str,
    listener: &str,
    principal: Principal<'static>,
) -> Reply {
    let ctx = RequestContext {
        broker: broker.clone(),
        api_key: request.api_key,
        api_version: request.api_version,
        correlation_id: request.header.correlation_id,
        client_id: request
            .header
            .client_id
            .as_ref()
            .map(|c| c.to_string())
            .unwrap_or_default(),
        client_host: client_host.to_string(),
        listener: listener.to_string(),
        principal,
        fetch_quota: None,
    };
    match request.body {
        RequestBody::Kafka(body) => dispatch_request(ctx, body).await,
        RequestBody::Own(body) => dispatch_own(ctx, body).await,
    }
}

fn request_span(ctx: &RequestContext) -> tracing::Span {
    tracing::info_span!(
        "request",
        api_key = %ctx.api_key,
        api_version = ctx.api_version,
        correlation_id = ctx.correlation_id,
        client_id = %ctx.client_id,
        listener = %ctx.listener,
        principal = %ctx.principal,
    )
}

/// Runs the handler of `body` inside the request's span.
pub async fn dispatch_request(ctx: RequestContext, body: RequestKind) -> Reply {
    let span = request_span(&ctx);
    let (mut ctx, mut body) = (ctx, body);
    let metered = crate::quotas::meter(&ctx, &mut body);
    ctx.fetch_quota = metered.as_ref().and_then(|m| m.fetch_quota());
    let reply = match route(&ctx, body).instrument(span.clone()).await {
        Reply::Later(future) => Reply::Later(Box::pin(future.instrument(span))),
        Reply::LaterInFiles(future) => Reply::LaterInFiles(Box::pin(future.instrument(span))),
        reply => reply,
    };
    match metered {
        Some(m) => m.finish(reply),
        None => reply,
    }
}

/// [`dispatch_request`] for a request of an API Skiff codes itself: the same span, the same
/// request quota and throttling.
pub async fn dispatch_own(ctx: RequestContext, body: OwnRequest) -> Reply {
    let span = request_span(&ctx);
    let metered = crate::quotas::meter_own(&ctx);
    let reply = match route_own(&ctx, body).instrument(span.clone()).await {
        Reply::Own(future) => Reply::Own(Box::pin(future.instrument(span))),
        reply => reply,
    };
    match metered {
        Some(m) => m.finish(reply),
        None => reply,
    }
}

/// The routes of the APIs Skiff codes itself. Reached only for APIs in
/// `skiff_protocol::SUPPORTED_OWN` (and by in-process callers such as tests).
async fn route_own(ctx: &RequestContext, body: OwnRequest) -> Reply {
    match body {
        OwnRequest::StreamsGroupHeartbeat(r) => streams_group_heartbeat::handle(ctx, r).await,
        OwnRequest::StreamsGroupDescribe(r) => streams_group_describe::handle(ctx, r).await,
    }
}

async fn route(ctx: &RequestContext, body: RequestKind) -> Reply {
    match body {
        RequestKind::ApiVersions(r) => api_versions::handle(ctx, r).await,
        RequestKind::Metadata(r) => metadata::handle(ctx, r).await,
        RequestKind::Produce(r) => produce::handle(ctx, r).await,
        RequestKind::Fetch(r) => fetch::handle(ctx, r).await,
        RequestKind::ListOffsets(r) => list_offsets::handle(ctx, r).await,
        RequestKind::CreateTopics(r) => create_topics::handle(ctx, r).await,
        RequestKind::DeleteTopics(r) => delete_topics::handle(ctx, r).await,
        RequestKind::CreatePartitions(r) => create_partitions::handle(ctx, r).await,
        RequestKind::DescribeConfigs(r) => describe_configs::handle(ctx, r).await,
        RequestKind::AlterConfigs(r) => alter_configs::handle(ctx, r).await,
        RequestKind::IncrementalAlterConfigs(r) => alter_configs::handle_incremental(ctx, r).await,
        RequestKind::DeleteRecords(r) => delete_records::handle(ctx, r).await,
        RequestKind::DescribeCluster(r) => describe_cluster::handle(ctx, r).await,
        RequestKind::DescribeLogDirs(r) => describe_log_dirs::handle(ctx, r).await,
        RequestKind::OffsetForLeaderEpoch(r) => offset_for_leader_epoch::handle(ctx, r).await,
        RequestKind::FindCoordinator(r) => find_coordinator::handle(ctx, r).await,
        RequestKind::JoinGroup(r) => join_group::handle(ctx, r).await,
        RequestKind::SyncGroup(r) => sync_group::handle(ctx, r).await,
        RequestKind::Heartbeat(r) => heartbeat::handle(ctx, r).await,
        RequestKind::LeaveGroup(r) => leave_group::handle(ctx, r).await,
        RequestKind::OffsetCommit(r) => offset_commit::handle(ctx, r).await,
        RequestKind::OffsetFetch(r) => offset_fetch::handle(ctx, r).await,
        RequestKind::ListGroups(r) => list_groups::handle(ctx, r).await,
        RequestKind::DescribeGroups(r) => describe_groups::handle(ctx, r).await,
        RequestKind::DeleteGroups(r) => delete_groups::handle(ctx, r).await,
        RequestKind::OffsetDelete(r) => offset_delete::handle(ctx, r).await,
        RequestKind::ConsumerGroupHeartbeat(r) => consumer_group_heartbeat::handle(ctx, r).await,
        RequestKind::ConsumerGroupDescribe(r) => consumer_group_describe::handle(ctx, r).await,
        // Not in `skiff_protocol::SUPPORTED` yet, so the decoder refuses them on the wire:
        // only in-process callers (tests) reach these two until the share APIs are advertised.
        RequestKind::ShareGroupHeartbeat(r) => share_group_heartbeat::handle(ctx, r).await,
        RequestKind::ShareGroupDescribe(r) => share_group_describe::handle(ctx, r).await,
        RequestKind::DescribeShareGroupOffsets(r) => {
            describe_share_group_offsets::handle(ctx, r).await
        }
        RequestKind::AlterShareGroupOffsets(r) => alter_share_group_offsets::handle(ctx, r).await,
        RequestKind::DeleteShareGroupOffsets(r) => delete_share_group_offsets::handle(ctx, r).await,
        RequestKind::InitProducerId(r) => init_producer_id::handle(ctx, r).await,
        RequestKind::AddPartitionsToTxn(r) => add_partitions_to_txn::handle(ctx, r).await,
        RequestKind::AddOffsetsToTxn(r) => add_offsets_to_txn::handle(ctx, r).await,
        RequestKind::EndTxn(r) => end_txn::handle(ctx, r).await,
        RequestKind::TxnOffsetCommit(r) => txn_offset_commit::handle(ctx, r).await,
        RequestKind::ListTransactions(r) => list_transactions::handle(ctx, r).await,
        RequestKind::DescribeTransactions(r) => describe_transactions::handle(ctx, r).await,
        RequestKind::DescribeProducers(r) => describe_producers::handle(ctx, r).await,
        RequestKind::DescribeAcls(r) => acls::describe(ctx, r).await,
        RequestKind::CreateAcls(r) => acls::create(ctx, r).await,
        RequestKind::DeleteAcls(r) => acls::delete(ctx, r).await,
        RequestKind::DescribeClientQuotas(r) => client_quotas::describe(ctx, r).await,
        RequestKind::AlterClientQuotas(r) => client_quotas::alter(ctx, r).await,
        RequestKind::DescribeUserScramCredentials(r) => {
            describe_user_scram_credentials::handle(ctx, r).await
        }
        RequestKind::AlterUserScramCredentials(r) => {
            alter_user_scram_credentials::handle(ctx, r).await
        }
        RequestKind::SaslHandshake(r) => sasl::handshake(ctx, r).await,
        RequestKind::SaslAuthenticate(r) => sasl::authenticate(ctx, r).await,
        // Routed but not advertised in ApiVersions yet (share groups are switched on at once).
        RequestKind::ShareFetch(r) => share_fetch::handle(ctx, r).await,
        RequestKind::ShareAcknowledge(r) => share_acknowledge::handle(ctx, r).await,
        _ => Reply::Close(format!(
            "{:?} is advertised by no handler; closing",
            ctx.api_key
        )),
    }
}

/// Runs blocking work (anything that may touch disk or take a partition's append lock; the
/// rule is in [`crate::handlers`]) off the runtime's worker threads. A task that panicked is
/// [`BrokerError::Internal`]: the caller answers UNKNOWN_SERVER_ERROR, per item where the
/// response has per-item codes, and keeps the connection open.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, BrokerError> {
    tokio::task::spawn_blocking(f).await.map_err(failed_task)
}

/// Runs `f` right here on the worker thread when the caller expects it to be `quick` (an
/// append that only copies into the page cache) and a slot is free, else like [`blocking`].
/// The hop to the blocking pool and back wakes two threads; for a small produce on this
/// 2-core VM that was about half the broker's CPU per request. Slots are one fewer than
/// the runtime's workers, so an append that blocks after all (dirty-page throttling, say)
/// never holds every worker: with one worker there is no slot. A panic in `f` is
/// [`BrokerError::Internal`], as for a blocking task. `in_use` counts the slots taken (one
/// counter per runtime: the broker's `quick_appends`).
pub async fn quick_or_blocking<T: Send + 'static>(
    in_use: &AtomicUsize,
    quick: bool,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, BrokerError> {
    let slots = tokio::runtime::Handle::try_current()
        .map_or(0, |h| h.metrics().num_workers().saturating_sub(1));
    let taken = quick
        && in_use
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < slots).then_some(n + 1)
            })
            .is_ok();
    if !taken {
        return blocking(f).await;
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    in_use.fetch_sub(1, Ordering::AcqRel);
    result.map_err(|_| {
        tracing::error!("storage work panicked on a worker thread");
        BrokerError::Internal("storage task failed: it panicked".into())
    })
}

/// The one conversion of a failed blocking task into a broker error (logged once, here).
pub fn failed_task(e: tokio::task::JoinError) -> BrokerError {
    tracing::error!(error = %e, "blocking task failed");
    BrokerError::Internal(format!("storage task failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::kafka_error;
    use kafka_protocol::messages::ApiKey;
    use kafka_protocol::ResponseError;

    #[tokio::test]
    async fn a_panicking_blocking_task_is_an_internal_error_answered_unknown_server_error() {
        let failed = blocking(|| -> i32 { panic!("boom") }).await;
        let err = failed.expect_err("the task panicked");
        assert!(matches!(err, BrokerError::Internal(_)), "{err:?}");
        assert!(err.to_string().starts_with("storage task failed"), "{err}");
        for api in [
            ApiKey::Produce,
            ApiKey::Fetch,
            ApiKey::ListOffsets,
            ApiKey::CreateTopics,
            ApiKey::DescribeProducers,
            ApiKey::InitProducerId,
            ApiKey::EndTxn,
        ] {
            assert_eq!(
                kafka_error(api, 9, &err),
                ResponseError::UnknownServerError,
                "{api:?}"
            );
        }
        assert_eq!(blocking(|| 7).await.ok(), Some(7));
    }

    fn this_thread() -> std::thread::ThreadId {
        std::thread::current().id()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn quick_work_runs_on_the_worker_when_a_slot_is_free_and_panics_are_internal_errors() {
        let slots = AtomicUsize::new(0);
        let here = this_thread();
        assert_eq!(
            quick_or_blocking(&slots, true, this_thread).await.ok(),
            Some(here)
        );
        let elsewhere = quick_or_blocking(&slots, false, this_thread).await.ok();
        assert!(
            elsewhere.is_some_and(|t| t != here),
            "not quick: the blocking pool"
        );
        let err = quick_or_blocking(&slots, true, || -> i32 { panic!("boom") })
            .await
            .expect_err("it panicked");
        assert!(matches!(err, BrokerError::Internal(_)), "{err:?}");
        assert_eq!(
            slots.load(Ordering::Acquire),
            0,
            "the slot came back after the panic"
        );
        // Every slot taken (one with two workers): the blocking pool.
        slots.store(1, Ordering::Release);
        let busy = quick_or_blocking(&slots, true, this_thread).await.ok();
        assert!(busy.is_some_and(|t| t != here), "no free slot");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn with_one_worker_quick_work_still_goes_to_the_blocking_pool() {
        let here = this_thread();
        let ran_on = quick_or_blocking(&AtomicUsize::new(0), true, this_thread)
            .await
            .ok();
        assert!(ran_on.is_some_and(|t| t != here), "one worker: no slot");
    }
}
