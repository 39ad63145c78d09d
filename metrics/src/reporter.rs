//! Rate limiting and wording of stall reports.
//!
//! Follows Seastar's `cpu_stall_detector` (`reactor.cc` / `stall_detector.hh`): at most
//! `--blocked-reactor-reports-per-minute` reports per shard in a fixed one-minute window;
//! reports beyond that are counted, and once the window is over the count is summarised in
//! one "Rate-limit: suppressed N reports" line, printed at the next opportunity (the next
//! stall, or the maintenance tick). The window starts at the first stall report considered
//! after the previous window ended, as Seastar re-arms its minute mark lazily.
//!
//! This module is pure (time is passed in), so its behaviour is tested with synthetic
//! instants; [`crate::stall`] drives it with the real clock.

use std::fmt;
use std::time::{Duration, Instant};

use crate::activity::Activity;
use crate::thread_times::PollSplit;

/// Length of the rate-limiting window.
pub(crate) const WINDOW: Duration = Duration::from_secs(60);

/// Whether a stall report may be logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Log it (and count it in `stall_detector_reported_total`).
    Report,
    /// Over the limit: counted for the next summary line.
    Suppress,
}

/// Fixed-window limiter of stall reports for one shard.
#[derive(Debug)]
pub(crate) struct ReportLimiter {
    max_per_window: u32,
    window_start: Option<Instant>,
    reported_in_window: u32,
    suppressed_in_window: u64,
}

impl ReportLimiter {
    /// A limiter allowing `max_per_window` reports per [`WINDOW`].
    pub(crate) fn new(max_per_window: u32) -> Self {
        Self {
            max_per_window,
            window_start: None,
            reported_in_window: 0,
            suppressed_in_window: 0,
        }
    }

    /// Ends the current window if it is over. Returns the number of reports suppressed in
    /// that window when it is non-zero, which the caller must summarise.
    pub(crate) fn roll(&mut self, now: Instant) -> Option<u64> {
        let start = self.window_start?;
        if now.saturating_duration_since(start) < WINDOW {
            return None;
        }
        let suppressed = self.suppressed_in_window;
        self.window_start = None;
        self.reported_in_window = 0;
        self.suppressed_in_window = 0;
        (suppressed > 0).then_some(suppressed)
    }

    /// Decides about one report at `now`. Call [`ReportLimiter::roll`] first so that a
    /// finished window is summarised before a new one starts.
    pub(crate) fn decide(&mut self, now: Instant) -> Decision {
        if self.window_start.is_none() {
            self.window_start = Some(now);
        }
        if self.reported_in_window < self.max_per_window {
            self.reported_in_window += 1;
            Decision::Report
        } else {
            self.suppressed_in_window += 1;
            Decision::Suppress
        }
    }

    /// Reports suppressed so far in the current window (not yet summarised).
    #[cfg(test)]
    pub(crate) fn pending_suppressed(&self) -> u64 {
        self.suppressed_in_window
    }
}

/// The stall report line: `Reactor stalled for N ms on shard S, in task queue G, while A`.
///
/// `N` is the run time in whole milliseconds, rounded down, as Seastar prints it.
pub(crate) struct StallReport {
    pub(crate) ran: Duration,
    pub(crate) split: PollSplit,
    pub(crate) shard: usize,
    pub(crate) queue: &'static str,
    pub(crate) activity: Activity,
}

impl fmt::Display for StallReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Reactor stalled for {} ms on shard {} ",
            self.ran.as_millis(),
            self.shard
        )?;
        self.write_details(f)
    }
}

impl StallReport {
    /// The line logged when a stall the watchdog reported while it ran ends: `Reactor stall
    /// on shard S ended after N ms (on CPU …), in task queue G, while <activity>`.
    pub(crate) fn ended(&self) -> String {
        struct Ended<'a>(&'a StallReport);
        impl fmt::Display for Ended<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let report = self.0;
                write!(
                    f,
                    "Reactor stall on shard {} ended after {} ms ",
                    report.shard,
                    report.ran.as_millis()
                )?;
                report.write_details(f)
            }
        }
        Ended(self).to_string()
    }

    /// `(on CPU A ms, preempted B ms[, blocked C ms]), in task queue G, while <activity>`.
    fn write_details(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(on CPU {} ms, preempted {} ms",
            self.split.on_cpu.as_millis(),
            self.split.preempted.as_millis(),
        )?;
        if self.split.blocked.as_millis() > 0 {
            write!(f, ", blocked {} ms", self.split.blocked.as_millis())?;
        }
        write!(
            f,
            "), in task queue {}, while {}",
            self.queue, self.activity
        )
    }
}

/// The summary line: `Rate-limit: suppressed N reports on shard S`.
pub(crate) struct SuppressedSummary {
    pub(crate) suppressed: u64,
    pub(crate) shard: usize,
}

impl fmt::Display for SuppressedSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let noun = if self.suppressed == 1 {
            "report"
        } else {
            "reports"
        };
        write!(
            f,
            "Rate-limit: suppressed {} {noun} on shard {}",
            self.suppressed, self.shard
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allows_exactly_the_limit_then_suppresses_and_summarises_once() {
        let t0 = Instant::now();
        let mut limiter = ReportLimiter::new(5);
        let decisions: Vec<Decision> = (0..8)
            .map(|i| {
                let now = t0 + Duration::from_secs(i);
                assert_eq!(limiter.roll(now), None);
                limiter.decide(now)
            })
            .collect();
        assert_eq!(
            decisions.iter().filter(|d| **d == Decision::Report).count(),
            5
        );
        assert_eq!(&decisions[..5], &[Decision::Report; 5]);
        assert_eq!(&decisions[5..], &[Decision::Suppress; 3]);
        assert_eq!(limiter.pending_suppressed(), 3);

        // Still inside the window: nothing to summarise yet.
        assert_eq!(limiter.roll(t0 + Duration::from_millis(59_999)), None);
        // Window over: the summary comes exactly once.
        assert_eq!(limiter.roll(t0 + WINDOW), Some(3));
        assert_eq!(limiter.roll(t0 + WINDOW + Duration::from_secs(1)), None);
        assert_eq!(limiter.pending_suppressed(), 0);

        // A new window allows the limit again.
        let t1 = t0 + Duration::from_secs(120);
        let again: Vec<Decision> = (0..6).map(|_| limiter.decide(t1)).collect();
        assert_eq!(&again[..5], &[Decision::Report; 5]);
        assert_eq!(again[5], Decision::Suppress);
    }

    #[test]
    fn a_window_without_suppression_needs_no_summary() {
        let t0 = Instant::now();
        let mut limiter = ReportLimiter::new(5);
        assert_eq!(limiter.decide(t0), Decision::Report);
        assert_eq!(limiter.roll(t0 + WINDOW), None);
    }

    #[test]
    fn zero_limit_suppresses_everything() {
        let t0 = Instant::now();
        let mut limiter = ReportLimiter::new(0);
        assert_eq!(limiter.decide(t0), Decision::Suppress);
        assert_eq!(limiter.decide(t0), Decision::Suppress);
        assert_eq!(limiter.roll(t0 + WINDOW), Some(2));
    }

    #[test]
    fn report_and_summary_wording() {
        let report = StallReport {
            ran: Duration::from_micros(31_900),
            split: PollSplit {
                on_cpu: Duration::from_micros(29_700),
                preempted: Duration::from_micros(2_200),
                blocked: Duration::ZERO,
            },
            shard: 3,
            queue: "auth",
            activity: Activity::AuthHash,
        };
        assert_eq!(
            report.to_string(),
            "Reactor stalled for 31 ms on shard 3 (on CPU 29 ms, preempted 2 ms), in task \
             queue auth, while auth-hash"
        );
        let slept = StallReport {
            ran: Duration::from_millis(100),
            split: PollSplit {
                on_cpu: Duration::ZERO,
                preempted: Duration::ZERO,
                blocked: Duration::from_millis(100),
            },
            ..report
        };
        assert_eq!(
            slept.to_string(),
            "Reactor stalled for 100 ms on shard 3 (on CPU 0 ms, preempted 0 ms, blocked 100 \
             ms), in task queue auth, while auth-hash"
        );
        assert_eq!(
            slept.ended(),
            "Reactor stall on shard 3 ended after 100 ms (on CPU 0 ms, preempted 0 ms, blocked \
             100 ms), in task queue auth, while auth-hash"
        );
        let summary = SuppressedSummary {
            suppressed: 7,
            shard: 3,
        };
        assert_eq!(
            summary.to_string(),
            "Rate-limit: suppressed 7 reports on shard 3"
        );
        let one = SuppressedSummary {
            suppressed: 1,
            shard: 0,
        };
        assert_eq!(
            one.to_string(),
            "Rate-limit: suppressed 1 report on shard 0"
        );
    }
}
