//! Periodic work timed on the injected [`skiff_log::Clock`]: the coordinator threads wake on
//! real time (their poll interval) and ask an [`Every`] whether a job is due at the clock's
//! now, so a test that moves a manual clock past an interval gets the job at the next pass
//! (or at once through the coordinator's `tick_now`), and nothing runs early while the clock
//! stands still. With the system clock this is the real-time cadence it replaces; a wall
//! clock stepping back restarts the interval from the new time instead of pausing the job
//! until the clock catches up.

/// One periodic job: due once `interval_ms` has passed on the clock since it last ran.
#[derive(Debug)]
pub(crate) struct Every {
    interval_ms: i64,
    last_ms: i64,
}

impl Every {
    /// First due one interval after `now`.
    pub(crate) fn starting(interval_ms: i64, now: i64) -> Every {
        Every {
            interval_ms: interval_ms.max(1),
            last_ms: now,
        }
    }

    /// First due at `now` (the first pass runs it).
    pub(crate) fn due_at_once(interval_ms: i64, now: i64) -> Every {
        let interval_ms = interval_ms.max(1);
        Every {
            interval_ms,
            last_ms: now.saturating_sub(interval_ms),
        }
    }

    /// Whether the job is due at `now`; if so, the next interval starts at `now`.
    pub(crate) fn due(&mut self, now: i64) -> bool {
        if now < self.last_ms {
            // The clock stepped back: count the interval from here.
            self.last_ms = now;
            return false;
        }
        if now.saturating_sub(self.last_ms) >= self.interval_ms {
            self.last_ms = now;
            return true;
        }
        false
    }

    /// Milliseconds on the clock until the job is due at `now` (0 when due).
    pub(crate) fn remaining_ms(&self, now: i64) -> i64 {
        self.last_ms
            .saturating_add(self.interval_ms)
            .saturating_sub(now.max(self.last_ms))
            .max(0)
    }
}

#[cfg(test)]
mod tests {
    use super::Every;

    #[test]
    fn due_once_per_interval_on_the_clock() {
        let mut e = Every::starting(100, 1_000);
        assert!(!e.due(1_000));
        assert!(!e.due(1_099));
        assert_eq!(e.remaining_ms(1_099), 1);
        assert!(e.due(1_100));
        assert!(!e.due(1_100));
        assert_eq!(e.remaining_ms(1_100), 100);
        // A clock moved far ahead: due once, not once per missed interval.
        assert!(e.due(5_000));
        assert!(!e.due(5_050));
        assert!(Every::due_at_once(100, 1_000).due(1_000));
    }

    #[test]
    fn a_clock_stepping_back_restarts_the_interval() {
        let mut e = Every::starting(100, 1_000);
        assert!(!e.due(500));
        assert_eq!(e.remaining_ms(500), 100);
        assert!(!e.due(599));
        assert!(e.due(600));
    }
}
