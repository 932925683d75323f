//! The two measures behind client quotas, as Kafka's metrics library computes them, on
//! millisecond timestamps the caller passes in (no clock, no I/O, so the math is tested
//! exactly):
//!
//! - [`Rate`]: Kafka's `Rate` over a `WindowedSum` (`SampledStat`). Values land in the
//!   current sample; a sample older than one window starts the next of `samples + 1` slots
//!   (one extra slot for the sample overlapping the start of the window); samples whose last
//!   event is `samples × window` old are reset. The rate divides the sum by the time since the
//!   oldest sample started, but by at least `samples − 1` whole windows, so a client that has
//!   just started is measured as if it had been quiet before ([`Rate::window_ms`]).
//! - [`TokenBucket`]: KIP-599's bucket for the controller mutation quota: refilled at the
//!   quota per second up to a burst of `samples × window × quota`, drawn by each mutation,
//!   possibly below zero.
//!
//! And Kafka's throttle formulas ([`throttle_ms`], [`bucket_throttle_ms`]).
//!
//! Thread safety: plain values; the owner locks them.

/// Kafka's `MetricConfig` for a quota sensor: `quota.window.num` samples of
/// `quota.window.size.seconds`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Windows {
    pub samples: u32,
    pub window_ms: u64,
}

impl Windows {
    /// From the config values (validated at least 1 by skiff-config); anything lower is
    /// taken as 1.
    pub fn new(samples: i32, window_seconds: i32) -> Windows {
        Windows {
            samples: u32::try_from(samples.max(1)).unwrap_or(1),
            window_ms: u64::try_from(window_seconds.max(1)).unwrap_or(1) * 1000,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    value: f64,
    start_ms: u64,
    last_event_ms: u64,
}

impl Sample {
    fn new(now: u64) -> Sample {
        Sample {
            value: 0.0,
            start_ms: now,
            last_event_ms: now,
        }
    }
}

/// Kafka's `Rate(WindowedSum)`, per second.
#[derive(Clone, Debug, Default)]
pub struct Rate {
    samples: Vec<Sample>,
    current: usize,
}

impl Rate {
    /// Adds `value` at `now` (Kafka's `SampledStat.record`).
    pub fn record(&mut self, w: Windows, value: f64, now: u64) {
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now));
        }
        if now.saturating_sub(self.samples[self.current].start_ms) >= w.window_ms {
            let slots = w.samples as usize + 1;
            self.current = (self.current + 1) % slots;
            if self.current >= self.samples.len() {
                self.samples.push(Sample::new(now));
            } else {
                self.samples[self.current] = Sample::new(now);
            }
        }
        let sample = &mut self.samples[self.current];
        sample.value += value;
        sample.last_event_ms = now;
    }

    fn purge(&mut self, w: Windows, now: u64) {
        let expire = u64::from(w.samples) * w.window_ms;
        for s in &mut self.samples {
            if now.saturating_sub(s.last_event_ms) >= expire {
                *s = Sample::new(now);
            }
        }
    }

    /// The time the rate is divided by (Kafka's `Rate.windowSize`): since the oldest sample
    /// started, but at least `samples − 1` whole windows plus the part of the current one,
    /// and at least 1 ms.
    pub fn window_ms(&mut self, w: Windows, now: u64) -> u64 {
        self.purge(w, now);
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now));
        }
        let oldest = self.samples.iter().map(|s| s.start_ms).min().unwrap_or(now);
        let mut elapsed = now.saturating_sub(oldest);
        let full = elapsed / w.window_ms;
        let min_full = u64::from(w.samples.saturating_sub(1));
        if full < min_full {
            elapsed += (min_full - full) * w.window_ms;
        }
        elapsed.max(1)
    }

    /// The rate per second at `now` (Kafka's `Rate.measure`).
    pub fn measure(&mut self, w: Windows, now: u64) -> f64 {
        let window = self.window_ms(w, now);
        let sum: f64 = self.samples.iter().map(|s| s.value).sum();
        sum / (window as f64 / 1000.0)
    }

    /// Whether nothing was recorded for a whole `samples × window` (every sample expired).
    pub fn idle(&self, w: Windows, now: u64) -> bool {
        let expire = u64::from(w.samples) * w.window_ms;
        self.samples
            .iter()
            .all(|s| now.saturating_sub(s.last_event_ms) >= expire)
    }
}

/// Kafka's `QuotaUtils.throttleTime`: the delay that brings the observed rate `observed` back
/// to `bound` if nothing more is recorded, `(O − T) / T × W`, rounded; 0 within the quota.
pub fn throttle_ms(observed: f64, bound: f64, window_ms: u64) -> u64 {
    if observed <= bound || bound <= 0.0 {
        return 0;
    }
    let ms = (observed - bound) / bound * window_ms as f64;
    if ms.is_finite() {
        ms.round() as u64
    } else {
        u64::MAX
    }
}

/// KIP-599's token bucket (Kafka's `TokenBucket`), per second.
#[derive(Clone, Debug, Default)]
pub struct TokenBucket {
    tokens: f64,
    /// `None` until first used: a new bucket is full (Kafka's starts at time 0, so its first
    /// refill fills it).
    last_update_ms: Option<u64>,
}

impl TokenBucket {
    fn burst(w: Windows, quota: f64) -> f64 {
        f64::from(w.samples) * (w.window_ms as f64 / 1000.0) * quota
    }

    fn refill(&mut self, w: Windows, quota: f64, now: u64) {
        let burst = Self::burst(w, quota);
        self.tokens = match self.last_update_ms {
            None => burst,
            Some(last) => {
                let elapsed_s = now.saturating_sub(last) as f64 / 1000.0;
                (self.tokens + quota * elapsed_s).min(burst)
            }
        };
        self.last_update_ms = Some(now);
    }

    /// The tokens left at `now` (negative: in debt).
    pub fn measure(&mut self, w: Windows, quota: f64, now: u64) -> f64 {
        self.refill(w, quota, now);
        self.tokens
    }

    /// Draws `value` tokens at `now`.
    pub fn record(&mut self, w: Windows, quota: f64, value: f64, now: u64) {
        self.refill(w, quota, now);
        self.tokens = (self.tokens - value).min(Self::burst(w, quota));
    }
}

/// Kafka's `ControllerMutationQuotaManager.throttleTimeMs`: the time for the bucket's debt
/// `tokens` (negative) to be refilled at `quota` per second.
pub fn bucket_throttle_ms(tokens: f64, quota: f64) -> u64 {
    if tokens >= 0.0 || quota <= 0.0 {
        return 0;
    }
    let ms = (-tokens / quota * 1000.0).round();
    if ms.is_finite() {
        ms as u64
    } else {
        u64::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Windows = Windows {
        samples: 11,
        window_ms: 1000,
    };

    #[test]
    fn a_fresh_rate_is_divided_by_ten_whole_windows() {
        let mut r = Rate::default();
        r.record(W, 1000.0, 5_000);
        // Elapsed 0 ms: 10 whole windows are assumed, so 1000 bytes / 10 s.
        assert_eq!(r.window_ms(W, 5_000), 10_000);
        assert!((r.measure(W, 5_000) - 100.0).abs() < 1e-9);
        // 500 ms later: 10 windows plus half of the current one.
        assert_eq!(r.window_ms(W, 5_500), 10_500);
    }

    #[test]
    fn samples_roll_over_and_expire() {
        let mut r = Rate::default();
        // 100 bytes every 100 ms for 20 s: at most 12 slots are kept.
        for i in 0..200u64 {
            r.record(W, 100.0, i * 100);
        }
        let now = 19_950;
        let rate = r.measure(W, now);
        // About 1000 bytes/s once the window is full.
        assert!((900.0..1100.0).contains(&rate), "{rate}");
        assert!(r.samples.len() <= 12);
        // After 11 quiet windows every sample is reset.
        assert!(r.idle(W, now + 11_000));
        assert_eq!(r.measure(W, now + 11_000), 0.0);
    }

    #[test]
    fn throttle_follows_kafkas_formula() {
        // O = 2000 B/s, T = 1000 B/s, W = 10 s: X = (O - T)/T * W = 10 s.
        assert_eq!(throttle_ms(2000.0, 1000.0, 10_000), 10_000);
        assert_eq!(throttle_ms(1500.0, 1000.0, 10_500), 5_250);
        assert_eq!(throttle_ms(999.0, 1000.0, 10_000), 0);
        assert_eq!(throttle_ms(1000.0, 1000.0, 10_000), 0);
        // Rounded as Math.round.
        assert_eq!(throttle_ms(1000.3, 1000.0, 10_000), 3);
    }

    #[test]
    fn a_producer_that_sends_10_kb_against_1_kb_per_s_waits_its_debt() {
        let mut r = Rate::default();
        r.record(W, 20_000.0, 0);
        let window = r.window_ms(W, 0);
        let rate = r.measure(W, 0);
        // 20 000 bytes / 10 s = 2000 B/s; quota 1000 B/s: 10 s.
        assert_eq!(throttle_ms(rate, 1000.0, window), 10_000);
    }

    #[test]
    fn the_token_bucket_starts_full_and_goes_into_debt() {
        let mut b = TokenBucket::default();
        let quota = 2.0; // partitions per second; burst 22
        assert_eq!(b.measure(W, quota, 1_000_000), 22.0);
        b.record(W, quota, 30.0, 1_000_000);
        let t = b.measure(W, quota, 1_000_000);
        assert_eq!(t, -8.0);
        assert_eq!(bucket_throttle_ms(t, quota), 4_000);
        // One second later two tokens are back.
        assert_eq!(b.measure(W, quota, 1_001_000), -6.0);
        // Refill stops at the burst.
        assert_eq!(b.measure(W, quota, 2_000_000), 22.0);
        assert_eq!(bucket_throttle_ms(1.0, quota), 0);
    }
}
