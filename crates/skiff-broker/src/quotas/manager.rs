//! Enforcement of client quotas, as Kafka's `ClientQuotaManager` (produce and fetch bytes),
//! `ClientRequestQuotaManager` (request time) and `ControllerMutationQuotaManager` (partition
//! mutations) do it with the default quota callback.
//!
//! Which quota applies to a request from user U with client id C is Kafka's precedence:
//! `users/U/clients/C`, `users/U/clients/<default>`, `users/U`, `users/<default>/clients/C`,
//! `users/<default>/clients/<default>`, `users/<default>`, `clients/C`, `clients/<default>`
//! ([`resolve`]). The level found also decides who shares one measured rate (Kafka's metric
//! tags): a `users/U` quota is shared by all of U's client ids, a `users/<default>` quota is
//! measured per user, and so on.
//!
//! Each rate ([`super::rate::Rate`]) lives in a sensor keyed by those tags. Recording adds the
//! value, measures the rate, and when it is over the bound returns Kafka's throttle time
//! `(rate − bound) / bound × window`. Without any value for a quota key, recording is one
//! atomic load (`enabled`). Sensors of clients quiet for `samples × window` are dropped when
//! the table grows past [`SENSOR_SWEEP_AT`], so client ids chosen by clients cannot grow it
//! without bound.
//!
//! Thread safety: the quota values are an `Arc` snapshot swapped on change; each quota type's
//! sensors sit behind one std `Mutex`, held to update one sensor (never across `.await`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use super::rate::{bucket_throttle_ms, throttle_ms, Rate, TokenBucket, Windows};
use super::store::{QuotaEntity, Quotas};

/// The quota keys, in Kafka's `QuotaType` terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotaKind {
    Produce = 0,
    Fetch = 1,
    Request = 2,
    ControllerMutation = 3,
}

impl QuotaKind {
    pub const ALL: [QuotaKind; 4] = [
        QuotaKind::Produce,
        QuotaKind::Fetch,
        QuotaKind::Request,
        QuotaKind::ControllerMutation,
    ];

    pub fn key(self) -> &'static str {
        match self {
            QuotaKind::Produce => "producer_byte_rate",
            QuotaKind::Fetch => "consumer_byte_rate",
            QuotaKind::Request => "request_percentage",
            QuotaKind::ControllerMutation => "controller_mutation_rate",
        }
    }
}

/// Sensors beyond this many trigger a sweep of the idle ones (Kafka expires a client's
/// sensors after an hour without traffic; a sweep on growth bounds memory the same way).
const SENSOR_SWEEP_AT: usize = 4096;

/// Kafka's metric tags: who shares one measured rate ("" = not part of the key).
pub type Tags = (String, String);

/// The tags and bound that apply to `user`/`client_id` for `key`, Kafka's precedence
/// (`DefaultQuotaCallback.quotaMetricTags` then `quotaLimit`); `None`: no quota.
pub fn resolve(quotas: &Quotas, key: &str, user: &str, client_id: &str) -> Option<(Tags, f64)> {
    let get = |e: QuotaEntity| quotas.get(&e).and_then(|v| v.get(key)).copied();
    let has = |e: QuotaEntity| get(e).is_some();
    let (u, c) = (Some(user), Some(client_id));
    let tags: Tags = if has(QuotaEntity::user_client(u, c))
        || has(QuotaEntity::user_client(u, None))
    {
        (user.into(), client_id.into())
    } else if has(QuotaEntity::user(u)) {
        (user.into(), String::new())
    } else if has(QuotaEntity::user_client(None, c)) || has(QuotaEntity::user_client(None, None)) {
        (user.into(), client_id.into())
    } else if has(QuotaEntity::user(None)) {
        (user.into(), String::new())
    } else {
        (String::new(), client_id.into())
    };
    let bound = limit(&get, &tags)?;
    Some((tags, bound))
}

/// Kafka's `quotaLimit` for a set of tags.
fn limit(get: &dyn Fn(QuotaEntity) -> Option<f64>, (user, client): &Tags) -> Option<f64> {
    let (u, c) = (Some(user.as_str()), Some(client.as_str()));
    if !user.is_empty() && !client.is_empty() {
        get(QuotaEntity::user_client(u, c))
            .or_else(|| get(QuotaEntity::user_client(u, None)))
            .or_else(|| get(QuotaEntity::user_client(None, c)))
            .or_else(|| get(QuotaEntity::user_client(None, None)))
    } else if !user.is_empty() {
        get(QuotaEntity::user(u)).or_else(|| get(QuotaEntity::user(None)))
    } else if !client.is_empty() {
        get(QuotaEntity::client(c)).or_else(|| get(QuotaEntity::client(None)))
    } else {
        None
    }
}

#[derive(Default)]
struct Sensor {
    rate: Rate,
    bucket: TokenBucket,
    /// Responses throttled by this quota, and their throttle times (for `/metrics`).
    throttled: u64,
    throttle_ms_total: u64,
}

impl Sensor {
    fn count(&mut self, throttle_ms: u64) {
        if throttle_ms > 0 {
            self.throttled += 1;
            self.throttle_ms_total = self.throttle_ms_total.saturating_add(throttle_ms);
        }
    }
}

/// One sensor's throttle figures: the quota key, the user and client id it measures ("" when
/// not part of its key), responses throttled and their throttle times in ms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThrottleStats {
    pub quota: &'static str,
    pub user: String,
    pub client_id: String,
    pub throttled: u64,
    pub throttle_ms_total: u64,
}

/// What a strict controller mutation quota answers when the bucket is in debt.
#[derive(Debug, PartialEq, Eq)]
pub struct MutationThrottled {
    pub throttle_ms: u64,
}

pub struct QuotaManager {
    quotas: RwLock<Arc<Quotas>>,
    /// Per kind: whether any entity has a value for its key (the cheap check).
    enabled: [AtomicBool; 4],
    sensors: [Mutex<HashMap<Tags, Sensor>>; 4],
    windows: Windows,
    controller_windows: Windows,
    start: Instant,
}

impl QuotaManager {
    pub fn new(quotas: Arc<Quotas>, windows: Windows, controller_windows: Windows) -> QuotaManager {
        let m = QuotaManager {
            quotas: RwLock::new(Arc::new(Quotas::new())),
            enabled: Default::default(),
            sensors: Default::default(),
            windows,
            controller_windows,
            start: Instant::now(),
        };
        m.update(quotas);
        m
    }

    /// Applies a new set of quotas (after AlterClientQuotas); rates measured so far are kept.
    pub fn update(&self, quotas: Arc<Quotas>) {
        for kind in QuotaKind::ALL {
            let on = quotas.values().any(|v| v.contains_key(kind.key()));
            self.enabled[kind as usize].store(on, Ordering::Release);
        }
        *self.quotas.write().unwrap_or_else(|e| e.into_inner()) = quotas;
    }

    pub fn enabled(&self, kind: QuotaKind) -> bool {
        self.enabled[kind as usize].load(Ordering::Acquire)
    }

    /// Milliseconds on the manager's monotonic clock.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn bound(&self, kind: QuotaKind, user: &str, client_id: &str) -> Option<(Tags, f64)> {
        let quotas = self
            .quotas
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        resolve(&quotas, kind.key(), user, client_id)
    }

    fn with_sensor<T>(&self, kind: QuotaKind, tags: Tags, f: impl FnOnce(&mut Sensor) -> T) -> T {
        let mut sensors = self.sensors[kind as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if sensors.len() >= SENSOR_SWEEP_AT && !sensors.contains_key(&tags) {
            let (w, now) = (self.windows_of(kind), self.now_ms());
            sensors.retain(|_, s| !s.rate.idle(w, now));
        }
        f(sensors.entry(tags).or_default())
    }

    fn windows_of(&self, kind: QuotaKind) -> Windows {
        if kind == QuotaKind::ControllerMutation {
            self.controller_windows
        } else {
            self.windows
        }
    }

    /// Records `value` (bytes, or request time in percent of a second) for the client and
    /// returns the throttle time in ms (0 within quota); Kafka's `recordAndGetThrottleTimeMs`.
    /// The request quota's throttle is capped at one window, as Kafka caps it.
    pub fn record(&self, kind: QuotaKind, user: &str, client_id: &str, value: f64) -> u64 {
        if !self.enabled(kind) {
            return 0;
        }
        let Some((tags, bound)) = self.bound(kind, user, client_id) else {
            return 0;
        };
        let (w, now) = (self.windows, self.now_ms());
        self.with_sensor(kind, tags, |s| {
            s.rate.record(w, value, now);
            let rate = s.rate.measure(w, now);
            let throttle = throttle_ms(rate, bound, s.rate.window_ms(w, now));
            let throttle = if kind == QuotaKind::Request {
                throttle.min(w.window_ms)
            } else {
                throttle
            };
            s.count(throttle);
            throttle
        })
    }

    /// The throttle figures of every sensor that has throttled, by quota, user and client id.
    pub fn throttle_stats(&self) -> Vec<ThrottleStats> {
        let mut out = Vec::new();
        for kind in QuotaKind::ALL {
            let sensors = self.sensors[kind as usize]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            out.extend(
                sensors
                    .iter()
                    .filter(|(_, s)| s.throttled > 0)
                    .map(|((u, c), s)| ThrottleStats {
                        quota: kind.key(),
                        user: u.clone(),
                        client_id: c.clone(),
                        throttled: s.throttled,
                        throttle_ms_total: s.throttle_ms_total,
                    }),
            );
        }
        out.sort_by(|a, b| (a.quota, &a.user, &a.client_id).cmp(&(b.quota, &b.user, &b.client_id)));
        out
    }

    /// Takes back `value` recorded for a response that was not sent (Kafka's
    /// `unrecordQuotaSensor`, used when a throttled fetch answers empty).
    pub fn unrecord(&self, kind: QuotaKind, user: &str, client_id: &str, value: f64) {
        if !self.enabled(kind) {
            return;
        }
        if let Some((tags, _)) = self.bound(kind, user, client_id) {
            let (w, now) = (self.windows, self.now_ms());
            self.with_sensor(kind, tags, |s| s.rate.record(w, -value, now));
        }
    }

    /// The most bytes a fetch may return without being throttled after a quiet window
    /// (Kafka's `getMaxValueInQuotaWindow`): bound × (samples − 1) × window; `None` without a
    /// consumer quota.
    pub fn max_fetch_bytes(&self, user: &str, client_id: &str) -> Option<f64> {
        if !self.enabled(QuotaKind::Fetch) {
            return None;
        }
        let (_, bound) = self.bound(QuotaKind::Fetch, user, client_id)?;
        let w = self.windows;
        Some(bound * f64::from(w.samples.saturating_sub(1)) * (w.window_ms as f64 / 1000.0))
    }

    /// Draws `partitions` mutations from the client's controller mutation bucket. Strict
    /// (the request versions of KIP-599): refused with the time until the debt is repaid when
    /// the bucket is already in debt, else drawn (possibly into debt). Permissive (older
    /// versions): always drawn; the throttle is the debt's.
    pub fn record_mutation(
        &self,
        user: &str,
        client_id: &str,
        partitions: f64,
        strict: bool,
    ) -> Result<u64, MutationThrottled> {
        let kind = QuotaKind::ControllerMutation;
        if !self.enabled(kind) {
            return Ok(0);
        }
        let Some((tags, bound)) = self.bound(kind, user, client_id) else {
            return Ok(0);
        };
        let (w, now) = (self.controller_windows, self.now_ms());
        self.with_sensor(kind, tags, |s| {
            if strict {
                let tokens = s.bucket.measure(w, bound, now);
                if tokens < 0.0 {
                    let throttle_ms = bucket_throttle_ms(tokens, bound);
                    s.count(throttle_ms);
                    return Err(MutationThrottled { throttle_ms });
                }
                s.rate.record(w, partitions, now);
                s.bucket.record(w, bound, partitions, now);
                Ok(0)
            } else {
                s.rate.record(w, partitions, now);
                s.bucket.record(w, bound, partitions, now);
                let throttle = bucket_throttle_ms(s.bucket.measure(w, bound, now), bound);
                s.count(throttle);
                Ok(throttle)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quotas(entries: &[(QuotaEntity, f64)]) -> Quotas {
        entries
            .iter()
            .map(|(e, v)| (e.clone(), [("producer_byte_rate".to_string(), *v)].into()))
            .collect()
    }

    fn tags(u: &str, c: &str) -> Tags {
        (u.to_string(), c.to_string())
    }

    #[test]
    fn the_eight_levels_in_kafkas_order() {
        let levels = [
            (QuotaEntity::user_client(Some("u"), Some("c")), 1.0),
            (QuotaEntity::user_client(Some("u"), None), 2.0),
            (QuotaEntity::user(Some("u")), 3.0),
            (QuotaEntity::user_client(None, Some("c")), 4.0),
            (QuotaEntity::user_client(None, None), 5.0),
            (QuotaEntity::user(None), 6.0),
            (QuotaEntity::client(Some("c")), 7.0),
            (QuotaEntity::client(None), 8.0),
        ];
        let expected_tags = [
            tags("u", "c"),
            tags("u", "c"),
            tags("u", ""),
            tags("u", "c"),
            tags("u", "c"),
            tags("u", ""),
            tags("", "c"),
            tags("", "c"),
        ];
        // Dropping the most specific level each time exposes the next one.
        for i in 0..levels.len() {
            let q = quotas(&levels[i..]);
            let got = resolve(&q, "producer_byte_rate", "u", "c");
            assert_eq!(
                got,
                Some((expected_tags[i].clone(), levels[i].1)),
                "level {}",
                i + 1
            );
        }
        assert_eq!(
            resolve(&Quotas::new(), "producer_byte_rate", "u", "c"),
            None
        );
        // Another key is not a quota for this one.
        let q = quotas(&levels);
        assert_eq!(resolve(&q, "consumer_byte_rate", "u", "c"), None);
        // Another user falls to the defaults.
        assert_eq!(
            resolve(&q, "producer_byte_rate", "v", "c"),
            Some((tags("v", "c"), 4.0))
        );
        assert_eq!(
            resolve(&q, "producer_byte_rate", "v", "d"),
            Some((tags("v", "d"), 5.0))
        );
    }

    #[test]
    fn a_user_quota_is_shared_by_the_users_clients_and_others_are_free() {
        let q = Arc::new(quotas(&[(QuotaEntity::user(Some("alice")), 1000.0)]));
        let m = QuotaManager::new(q, Windows::new(11, 1), Windows::new(11, 1));
        assert!(m.enabled(QuotaKind::Produce));
        assert!(!m.enabled(QuotaKind::Fetch));
        // 10 s worth of quota is allowed at once (rate divided by 10 windows).
        assert_eq!(m.record(QuotaKind::Produce, "alice", "a", 5_000.0), 0);
        assert_eq!(m.record(QuotaKind::Produce, "alice", "b", 5_000.0), 0);
        // One more byte from either client id is over: about (10001/10 - 1000)/1000 * 10 s.
        let t = m.record(QuotaKind::Produce, "alice", "a", 10_000.0);
        assert!((9_900..=10_100).contains(&t), "{t}");
        assert_eq!(m.record(QuotaKind::Produce, "bob", "a", 1e9), 0);
        assert_eq!(m.max_fetch_bytes("alice", "a"), None);
        let stats = m.throttle_stats();
        assert_eq!(stats.len(), 1);
        assert_eq!(
            (
                stats[0].quota,
                stats[0].user.as_str(),
                stats[0].client_id.as_str()
            ),
            ("producer_byte_rate", "alice", "")
        );
        assert_eq!((stats[0].throttled, stats[0].throttle_ms_total), (1, t));
    }

    #[test]
    fn the_request_quota_throttle_is_capped_at_one_window() {
        let mut q = Quotas::new();
        q.insert(
            QuotaEntity::client(None),
            [("request_percentage".to_string(), 1.0)].into(),
        );
        let m = QuotaManager::new(Arc::new(q), Windows::new(11, 1), Windows::new(11, 1));
        // 1000 % (10 s of handler time) against 1 %.
        assert_eq!(m.record(QuotaKind::Request, "ANONYMOUS", "x", 1000.0), 1000);
    }

    #[test]
    fn strict_mutations_are_refused_once_in_debt() {
        let mut q = Quotas::new();
        q.insert(
            QuotaEntity::user(None),
            [("controller_mutation_rate".to_string(), 1.0)].into(),
        );
        let m = QuotaManager::new(Arc::new(q), Windows::new(11, 1), Windows::new(11, 1));
        // Burst 11: a 20-partition topic is allowed and leaves a debt of 9.
        assert_eq!(m.record_mutation("u", "c", 20.0, true), Ok(0));
        let refused = m.record_mutation("u", "c", 1.0, true).unwrap_err();
        assert!(
            (8_900..=9_000).contains(&refused.throttle_ms),
            "{refused:?}"
        );
        // Permissive: drawn anyway, with the debt as throttle.
        let t = m.record_mutation("u", "c", 1.0, false).unwrap();
        assert!((9_900..=10_000).contains(&t), "{t}");
        // Another user has its own bucket.
        assert_eq!(m.record_mutation("v", "c", 5.0, true), Ok(0));
    }
}
