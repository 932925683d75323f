//! Client quotas (KIP-13, KIP-124, KIP-219, KIP-546, KIP-599), as Apache Kafka 4 enforces
//! them with its default quota callback.
//!
//! - [`store`]: the entities and values, durable in `client-quotas.json`.
//! - [`admin`]: AlterClientQuotas / DescribeClientQuotas validation and matching.
//! - [`rate`]: Kafka's sampled `Rate`, `TokenBucket` and throttle formulas.
//! - [`manager`]: precedence of the 8 levels, sensors, throttle times.
//! - [`throttle_field`]: `throttle_time_ms` of any response.
//!
//! The request path ([`meter`], called by dispatch around every handler):
//! - request_percentage: Kafka measures the time a request handler thread spends on the
//!   request. Skiff has no handler pool; it measures the wall time from the start of
//!   dispatch until the handler returns its reply (for a reply that waits — acks=all, a fetch
//!   long poll — until the wait is handed to the connection; the wait itself, like Kafka's
//!   purgatory, is not counted), and records it as a percentage of one second.
//! - producer_byte_rate: the record bytes of a Produce request, recorded when the handler
//!   returns. Kafka records the whole request size; the difference is the request's framing,
//!   tens of bytes per partition.
//! - consumer_byte_rate: the record bytes of a Fetch response when its records are read,
//!   judged by the fetch handler through [`FetchQuota`] before its fetch session records what
//!   was sent. Over quota (or throttled by the request quota), as Kafka, the response is sent
//!   without partitions (the client fetches again from the same offset after the throttle),
//!   the bytes are taken back, a full fetch opens no session and an incremental one leaves
//!   its session's "last sent" figures alone; `max_bytes` is capped first to what a quiet
//!   window allows (`getMaxValueInQuotaWindow`).
//! - controller_mutation_rate: in the CreateTopics, CreatePartitions and DeleteTopics
//!   handlers ([`MutationQuota`]).
//!
//! The largest throttle goes into the response's `throttle_time_ms`; the connection sends the
//! response and then does not read the client's next request until the throttle has passed
//! (KIP-219). An acks=0 produce has no response: the connection is muted at once.
//!
//! With no quota configured for a key, the cost per request is one atomic load per key.

pub mod admin;
pub mod manager;
pub mod mute;
pub mod rate;
pub mod store;
pub mod throttle_field;

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use kafka_protocol::messages::{ApiKey, RequestKind};

use crate::context::RequestContext;
use crate::dispatch::Reply;
pub use manager::{MutationThrottled, QuotaKind, QuotaManager};
use throttle_field::raise_throttle;

/// Kafka's `NanosToPercentagePerSecond`: request time as a percentage of one second.
fn percent_of_a_second(elapsed: std::time::Duration) -> f64 {
    elapsed.as_nanos() as f64 * 100.0 / 1e9
}

/// What dispatch keeps of a request while its handler runs, for the quotas that apply.
pub struct Metered {
    started: Instant,
    user: String,
    client_id: String,
    manager: Arc<QuotaManager>,
    produce_bytes: Option<f64>,
    acks0: bool,
    fetch: Option<FetchQuota>,
}

/// A Fetch's quota check, made by the fetch handler once its records are read and before its
/// fetch session records what was sent: Kafka decides at the same point whether to send
/// `getThrottledResponse` instead of `updateAndGenerateResponseData`.
#[derive(Clone)]
pub struct FetchQuota {
    manager: Arc<QuotaManager>,
    user: String,
    client_id: String,
    /// The request quota's throttle, set by [`Metered::finish`] when the handler returns its
    /// reply, which is before the fetch's future first runs.
    request_throttle: Arc<OnceLock<i32>>,
}

impl FetchQuota {
    /// Records a response of `bytes` record bytes and returns its throttle in ms: the larger
    /// of the consumer byte rate's and the request quota's. Over 0 the response goes without
    /// records, so the bytes are taken back.
    pub fn judge(&self, bytes: usize) -> i32 {
        let bytes = bytes as f64;
        let m = &self.manager;
        let fetch = clamp_ms(m.record(QuotaKind::Fetch, &self.user, &self.client_id, bytes));
        let request = self.request_throttle.get().copied().unwrap_or(0);
        let throttle = fetch.max(request);
        if throttle > 0 {
            m.unrecord(QuotaKind::Fetch, &self.user, &self.client_id, bytes);
        }
        throttle
    }
}

/// Before the handler: `None` (one atomic load per key) when no quota is configured; else
/// the start of the measurement, a Produce's bytes, and a Fetch's `max_bytes` capped.
pub fn meter(ctx: &RequestContext, body: &mut RequestKind) -> Option<Metered> {
    meter_body(ctx, Some(body))
}

/// [`meter`] for a request of an API Skiff codes itself: only the request quota applies
/// (none of them is a Produce or a Fetch).
pub fn meter_own(ctx: &RequestContext) -> Option<Metered> {
    meter_body(ctx, None)
}

fn meter_body(ctx: &RequestContext, body: Option<&mut RequestKind>) -> Option<Metered> {
    let manager = &ctx.broker.quotas;
    let produce = manager.enabled(QuotaKind::Produce);
    let fetch = manager.enabled(QuotaKind::Fetch);
    let request = manager.enabled(QuotaKind::Request)
        && !matches!(
            ctx.api_key.kafka(),
            Some(ApiKey::SaslHandshake | ApiKey::SaslAuthenticate)
        );
    if !(produce || fetch || request) {
        return None;
    }
    let user = ctx.principal.name.to_string();
    let mut metered = Metered {
        started: Instant::now(),
        user,
        client_id: ctx.client_id.clone(),
        manager: manager.clone(),
        produce_bytes: None,
        acks0: false,
        fetch: None,
    };
    match body {
        Some(RequestKind::Produce(r)) => {
            metered.acks0 = r.acks == 0;
            if produce {
                let bytes: usize = r
                    .topic_data
                    .iter()
                    .flat_map(|t| t.partition_data.iter())
                    .map(|p| p.records.as_ref().map_or(0, |b| b.len()))
                    .sum();
                metered.produce_bytes = Some(bytes as f64);
            }
        }
        Some(RequestKind::Fetch(r)) => {
            // Any quota's throttle empties a Fetch response (Kafka's getThrottledResponse).
            metered.fetch = Some(FetchQuota {
                manager: manager.clone(),
                user: metered.user.clone(),
                client_id: metered.client_id.clone(),
                request_throttle: Arc::new(OnceLock::new()),
            });
            if let Some(cap) = manager.max_fetch_bytes(&metered.user, &metered.client_id) {
                let cap = cap.clamp(1.0, f64::from(i32::MAX)) as i32;
                r.max_bytes = r.max_bytes.min(cap);
                r.min_bytes = r.min_bytes.min(r.max_bytes);
            }
        }
        _ => {}
    }
    let any = request || metered.produce_bytes.is_some() || metered.fetch.is_some();
    any.then_some(metered)
}

impl Metered {
    /// What the fetch handler judges its response with ([`FetchQuota::judge`]); `None`
    /// for other requests.
    pub fn fetch_quota(&self) -> Option<FetchQuota> {
        self.fetch.clone()
    }

    /// After the handler: records what the request used and raises the response's
    /// `throttle_time_ms` to the largest throttle.
    pub fn finish(self, reply: Reply) -> Reply {
        let m = &self.manager;
        // Kafka does not apply the request quota to acks=0 produce.
        let request_throttle = if self.acks0 {
            0
        } else {
            m.record(
                QuotaKind::Request,
                &self.user,
                &self.client_id,
                percent_of_a_second(self.started.elapsed()),
            )
        };
        let produce_throttle = self.produce_bytes.map_or(0, |bytes| {
            m.record(QuotaKind::Produce, &self.user, &self.client_id, bytes)
        });
        let throttle = clamp_ms(request_throttle.max(produce_throttle));
        if let Some(fetch) = &self.fetch {
            // The fetch has not read yet: it judges its bytes with this throttle.
            let _ = fetch.request_throttle.set(throttle);
        }
        match reply {
            Reply::Respond(mut response) => {
                raise_throttle(&mut response, throttle);
                Reply::Respond(response)
            }
            Reply::Later(future) => Reply::Later(Box::pin(async move {
                let mut response = future.await;
                raise_throttle(&mut response, throttle);
                response
            })),
            Reply::LaterInFiles(future) => Reply::LaterInFiles(Box::pin(async move {
                let mut answer = future.await;
                raise_throttle(&mut answer.response, throttle);
                answer
            })),
            Reply::Own(future) => Reply::Own(Box::pin(async move {
                let mut response = future.await;
                response.raise_throttle(throttle);
                response
            })),
            Reply::NoResponse => {
                // acks=0: no response to carry the throttle; mute the connection now, as
                // Kafka does.
                mute::mute_current(throttle);
                Reply::NoResponse
            }
            other => other,
        }
    }
}

fn clamp_ms(ms: u64) -> i32 {
    i32::try_from(ms).unwrap_or(i32::MAX)
}

/// The controller mutation quota of one CreateTopics / CreatePartitions / DeleteTopics
/// request (Kafka's `StrictControllerMutationQuota` from the version in [`strict_since`] on,
/// `PermissiveControllerMutationQuota` before).
pub struct MutationQuota {
    manager: Arc<QuotaManager>,
    user: String,
    client_id: String,
    strict: bool,
    /// The last throttle and when it was computed (ms on the manager's clock).
    last: Option<(u64, u64)>,
}

/// The first version of each API that is refused THROTTLING_QUOTA_EXCEEDED (KIP-599).
pub fn strict_since(api: ApiKey) -> i16 {
    match api {
        ApiKey::CreateTopics => 6,
        ApiKey::DeleteTopics => 5,
        ApiKey::CreatePartitions => 3,
        _ => i16::MAX,
    }
}

impl MutationQuota {
    pub fn for_request(ctx: &RequestContext) -> MutationQuota {
        MutationQuota {
            manager: ctx.broker.quotas.clone(),
            user: ctx.principal.name.to_string(),
            client_id: ctx.client_id.clone(),
            strict: ctx
                .api_key
                .kafka()
                .is_some_and(|k| ctx.api_version >= strict_since(k)),
            last: None,
        }
    }

    /// Draws `partitions` mutations; `Err` (strict versions only) when refused, with the
    /// throttle time.
    pub fn record(&mut self, partitions: usize) -> Result<(), MutationThrottled> {
        let m = &self.manager;
        match m.record_mutation(&self.user, &self.client_id, partitions as f64, self.strict) {
            Ok(0) => Ok(()),
            Ok(ms) => {
                self.last = Some((ms, m.now_ms()));
                Ok(())
            }
            Err(e) => {
                self.last = Some((e.throttle_ms, m.now_ms()));
                Err(e)
            }
        }
    }

    /// The throttle for the response: the last one computed less the time since (Kafka's
    /// `AbstractControllerMutationQuota.throttleTime`).
    pub fn throttle_ms(&self) -> i32 {
        self.last.map_or(0, |(ms, at)| {
            clamp_ms(ms.saturating_sub(self.manager.now_ms().saturating_sub(at)))
        })
    }
}
