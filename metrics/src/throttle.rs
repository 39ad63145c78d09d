//! [`LogThrottle`]: at most one log line per period for a repeating condition, with the
//! number of occurrences left unlogged since the previous line.
//!
//! Unlike the stall reporter's fixed-window limiter ([`crate::stall`], Seastar's N reports
//! per minute), the summary of suppressed events is carried by the next line itself, so two
//! lines are never closer than the period. Pure: time is passed in.

use std::time::{Duration, Instant};

/// Limits one kind of log line to one per `period`, counting the occurrences in between.
///
/// Used for conditions that can repeat thousands of times a second, such as accept(2)
/// failing with EMFILE while clients keep connecting.
#[derive(Debug, Clone)]
pub struct LogThrottle {
    period: Duration,
    last_line: Option<Instant>,
    suppressed: u64,
}

impl LogThrottle {
    /// A throttle allowing one line per `period`; the first occurrence is always logged.
    pub const fn new(period: Duration) -> Self {
        Self {
            period,
            last_line: None,
            suppressed: 0,
        }
    }

    /// One occurrence at `now`. `Some(n)`: log a line now, mentioning the `n` occurrences
    /// suppressed since the previous line; `None`: do not log (counted for the next line).
    pub fn event(&mut self, now: Instant) -> Option<u64> {
        if self.may_log(now) {
            self.last_line = Some(now);
            Some(std::mem::take(&mut self.suppressed))
        } else {
            self.suppressed += 1;
            None
        }
    }

    /// The condition ended (or a periodic check): `Some(n)` when `n > 0` occurrences are
    /// still unlogged and a line may be written now; the caller logs one summary line.
    pub fn flush(&mut self, now: Instant) -> Option<u64> {
        if self.suppressed > 0 && self.may_log(now) {
            self.last_line = Some(now);
            Some(std::mem::take(&mut self.suppressed))
        } else {
            None
        }
    }

    /// Occurrences not logged yet.
    pub fn pending(&self) -> u64 {
        self.suppressed
    }

    fn may_log(&self, now: Instant) -> bool {
        self.last_line
            .is_none_or(|last| now.saturating_duration_since(last) >= self.period)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERIOD: Duration = Duration::from_secs(10);

    #[test]
    fn one_line_per_period_carrying_the_suppressed_count() {
        let t0 = Instant::now();
        let mut throttle = LogThrottle::new(PERIOD);
        assert_eq!(throttle.event(t0), Some(0));
        for ms in 1..=1000 {
            assert_eq!(throttle.event(t0 + Duration::from_millis(ms)), None);
        }
        assert_eq!(throttle.pending(), 1000);
        assert_eq!(throttle.event(t0 + Duration::from_millis(9_999)), None);
        assert_eq!(throttle.event(t0 + PERIOD), Some(1001));
        assert_eq!(throttle.pending(), 0);
        assert_eq!(throttle.event(t0 + PERIOD + Duration::from_secs(1)), None);
    }

    #[test]
    fn flush_summarises_only_after_the_period_and_only_when_something_is_pending() {
        let t0 = Instant::now();
        let mut throttle = LogThrottle::new(PERIOD);
        assert_eq!(throttle.flush(t0), None);
        assert_eq!(throttle.event(t0), Some(0));
        assert_eq!(throttle.flush(t0 + PERIOD), None);
        assert_eq!(throttle.event(t0 + PERIOD), Some(0));
        assert_eq!(throttle.event(t0 + PERIOD + Duration::from_secs(1)), None);
        assert_eq!(throttle.event(t0 + PERIOD + Duration::from_secs(2)), None);
        assert_eq!(throttle.flush(t0 + PERIOD + Duration::from_secs(5)), None);
        let summary_at = t0 + 2 * PERIOD;
        assert_eq!(throttle.flush(summary_at), Some(2));
        assert_eq!(throttle.flush(summary_at + PERIOD), None);
        // The summary counts as a line: the next event waits a full period after it.
        assert_eq!(throttle.event(summary_at + Duration::from_secs(1)), None);
        assert_eq!(throttle.event(summary_at + PERIOD), Some(1));
    }
}
