//! Per-shard stall accounting and the stall reporter, after Seastar's reactor
//! (`reactor.cc`: `reactor_stalls`, `scheduler_time_spent_on_task_quota_violations_ms`;
//! `stall_detector.hh`: `cpu_stall_detector`, `blocked-reactor-notify-ms`,
//! `blocked-reactor-reports-per-minute`).
//!
//! Definitions (Seastar's, as shardline applies them):
//!
//! * **Stall**: one uninterrupted task run (one poll of an [`crate::instrument`]ed task)
//!   longer than 2 × [`StallConfig::task_quota`]. Each stall is observed, in seconds, in the
//!   `shardline_reactor_stalls{shard}` histogram.
//! * **Quota-violation time**: for each stall, (run time − task quota) is added to
//!   `shardline_scheduler_time_spent_on_task_quota_violations_seconds_total{shard,group}`,
//!   where `group` is the task queue name given to [`crate::instrument`].
//! * **Preempted stall** (shardline's addition): a stall during which the shard thread was
//!   runnable but off its CPU for more than half of the run — the kernel ran something else
//!   there; counted in `shardline_reactor_stalls_preempted_total{shard}`. The off-CPU
//!   (preempted) time of every stall is added to `shardline_reactor_preempted_seconds_total`.
//!   How a stall is split into on-CPU, preempted and blocked time: [`crate::thread_times`].
//!   Seastar's `reactor_stalls` cannot tell these apart; its separate `cpu_stall_detector`
//!   uses the thread's CPU clock for its reports only.
//! * **Stall report**: a run longer than [`StallConfig::blocked_reactor_notify`] is logged
//!   with `tracing::warn!` as `Reactor stalled for N ms on shard S (on CPU A ms, preempted
//!   B ms[, blocked C ms]), in task queue G, while <activity>`, at most [`StallConfig::reports_per_minute`] times per shard per minute;
//!   the rest are counted (`shardline_stall_detector_suppressed_total`) and summarised in
//!   one `Rate-limit: suppressed N reports on shard S` line once the minute is over, at the
//!   next report or [`maintenance_tick`]. Logged reports are counted in
//!   `shardline_stall_detector_reported_total{shard}`.
//!
//! Difference from Seastar: Seastar reports from a timer signal *while* the reactor is
//! blocked, with a backtrace; shardline reports when the poll returns, with the task's
//! [`Activity`] instead of a backtrace (a run that never returns is never reported).
//!
//! The monitor is thread-local: install it once on each shard thread with
//! [`install_shard_monitor`]. Threads without a monitor (other crates' tests, helper
//! threads) run instrumented futures with no timing and no accounting.

use std::cell::RefCell;
use std::error::Error;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus::{Counter, Histogram, IntCounter};

use crate::activity::Activity;
use crate::context::CONTEXT;
use crate::label_cache::{LabelCache, LabelCase};
use crate::registry::Metrics;
use crate::reporter::{Decision, ReportLimiter, StallReport, SuppressedSummary};
use crate::thread_times::{PollSplit, ThreadClock, REFERENCE_MAX_AGE};
use crate::watchdog::{self, PollWatch, Watched};

/// Stall detection settings of a shard (Seastar/ScyllaDB flag names in brackets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StallConfig {
    /// Task quota (`--task-quota-ms`), default 0.5 ms. Runs longer than twice this are
    /// stalls. Use the same value as glommio's `preempt_timer`.
    pub task_quota: Duration,
    /// Report threshold (`--blocked-reactor-notify-ms`), default 25 ms: runs longer than
    /// this are logged (rate-limited).
    pub blocked_reactor_notify: Duration,
    /// Report limit (`--blocked-reactor-reports-per-minute`), default 5, per shard.
    pub reports_per_minute: u32,
    /// Report polls while they still run, with a backtrace, at the notify threshold and 2×,
    /// 4×, … it (the stall watchdog, [`crate::watchdog`]); default true.
    pub watchdog: bool,
}

impl Default for StallConfig {
    fn default() -> Self {
        StallConfig {
            task_quota: Duration::from_micros(500),
            blocked_reactor_notify: Duration::from_millis(25),
            reports_per_minute: 5,
            watchdog: true,
        }
    }
}

impl StallConfig {
    /// Builds a config from the command-line values in milliseconds (fractions allowed).
    ///
    /// # Errors
    ///
    /// [`StallConfigError`] if a value is negative, NaN or too large for a [`Duration`].
    pub fn from_millis(
        task_quota_ms: f64,
        blocked_reactor_notify_ms: f64,
        reports_per_minute: u32,
    ) -> Result<StallConfig, StallConfigError> {
        let millis = |name: &'static str, value: f64| {
            Duration::try_from_secs_f64(value / 1000.0)
                .map_err(|_| StallConfigError { name, value })
        };
        Ok(StallConfig {
            task_quota: millis("task-quota-ms", task_quota_ms)?,
            blocked_reactor_notify: millis("blocked-reactor-notify-ms", blocked_reactor_notify_ms)?,
            reports_per_minute,
            watchdog: true,
        })
    }

    /// Run time above which a poll is a stall: 2 × task quota.
    pub fn stall_threshold(&self) -> Duration {
        self.task_quota.saturating_mul(2)
    }
}

/// A millisecond setting that is not a valid duration; returned by
/// [`StallConfig::from_millis`].
#[derive(Debug, Clone, PartialEq)]
pub struct StallConfigError {
    name: &'static str,
    value: f64,
}

impl fmt::Display for StallConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "--{} must be a non-negative number of milliseconds, got {}",
            self.name, self.value
        )
    }
}

impl Error for StallConfigError {}

/// The stall accounting state of one shard thread.
struct ShardMonitor {
    shard: usize,
    cfg: StallConfig,
    stall_threshold: Duration,
    stalls: Histogram,
    stalls_preempted: IntCounter,
    preempted_seconds: Counter,
    /// This shard thread's CPU and run-queue clocks.
    clock: ThreadClock,
    violations: LabelCache<Counter>,
    reported: IntCounter,
    suppressed: IntCounter,
    /// Shared with the watchdog thread.
    limiter: Arc<Mutex<ReportLimiter>>,
    /// What the watchdog thread sees of this shard's polls (`None` without a watchdog). Only
    /// held: the poll path reaches it through a thread-local pointer, the watchdog through a
    /// weak reference, and both stop when this owner is dropped.
    #[allow(dead_code)]
    watch: Option<Arc<PollWatch>>,
}

/// A log line decided while the monitor is borrowed, emitted after the borrow ends.
enum LogLine {
    Summary(SuppressedSummary),
    Report(StallReport),
    /// The end of a stall the watchdog reported while it ran.
    Ended(StallReport),
}

impl LogLine {
    fn emit(self) {
        match self {
            LogLine::Summary(summary) => tracing::warn!("{summary}"),
            LogLine::Report(report) => tracing::warn!("{report}"),
            LogLine::Ended(report) => tracing::warn!("{}", report.ended()),
        }
    }
}

impl ShardMonitor {
    fn new(shard: usize, cfg: StallConfig, metrics: &Metrics) -> ShardMonitor {
        let f = &metrics.families;
        let label = shard.to_string();
        let reported = f.stall_reported.with_label_values(&[&label]);
        let suppressed = f.stall_suppressed.with_label_values(&[&label]);
        let limiter = Arc::new(Mutex::new(ReportLimiter::new(cfg.reports_per_minute)));
        let watch = cfg.watchdog.then(|| {
            let watch = Arc::new(PollWatch::for_this_thread(
                shard,
                cfg.blocked_reactor_notify,
                limiter.clone(),
                reported.clone(),
                suppressed.clone(),
            ));
            watchdog::register(&watch);
            watch
        });
        ShardMonitor {
            shard,
            cfg,
            stall_threshold: cfg.stall_threshold(),
            stalls: f.reactor_stalls.with_label_values(&[&label]),
            stalls_preempted: f.stalls_preempted.with_label_values(&[&label]),
            preempted_seconds: f.preempted_seconds.with_label_values(&[&label]),
            clock: ThreadClock::open(),
            violations: LabelCache::new(&f.quota_violations, &label, LabelCase::AsGiven),
            reported,
            suppressed,
            limiter,
            watch,
        }
    }

    /// Accounts one run of `ran` split as `split` (already known to exceed the fast-path
    /// threshold); `watched`: what the watchdog did with it while it ran.
    #[allow(clippy::too_many_arguments)]
    fn on_long_run(
        &mut self,
        queue: &'static str,
        activity: Activity,
        ran: Duration,
        split: PollSplit,
        watched: Watched,
        now: Instant,
        out: &mut Vec<LogLine>,
    ) {
        if ran > self.stall_threshold {
            self.stalls.observe(ran.as_secs_f64());
            let violation = ran.saturating_sub(self.cfg.task_quota).as_secs_f64();
            self.violations.with(queue, |c| c.inc_by(violation));
            self.preempted_seconds.inc_by(split.preempted.as_secs_f64());
            if split.mostly_preempted(ran) {
                self.stalls_preempted.inc();
            }
        }
        let report = StallReport {
            ran,
            split,
            shard: self.shard,
            queue,
            activity,
        };
        match watched {
            Watched::Reported => return out.push(LogLine::Ended(report)),
            Watched::Suppressed => return,
            Watched::No => {}
        }
        if ran > self.cfg.blocked_reactor_notify {
            self.roll(now, out);
            let decision = match self.limiter.lock() {
                Ok(mut limiter) => limiter.decide(now),
                Err(_) => Decision::Suppress,
            };
            match decision {
                Decision::Report => {
                    self.reported.inc();
                    out.push(LogLine::Report(report));
                }
                Decision::Suppress => self.suppressed.inc(),
            }
        }
    }

    fn roll(&mut self, now: Instant, out: &mut Vec<LogLine>) {
        let rolled = self.limiter.lock().ok().and_then(|mut l| l.roll(now));
        if let Some(suppressed) = rolled {
            out.push(LogLine::Summary(SuppressedSummary {
                suppressed,
                shard: self.shard,
            }));
        }
    }
}

thread_local! {
    static MONITOR: RefCell<Option<ShardMonitor>> = const { RefCell::new(None) };
}

/// Installs the stall monitor of shard `shard_id` on the calling thread, replacing any
/// previous one. Call once at the start of each shard's executor thread, before spawning
/// instrumented tasks.
///
/// Resolves the shard's `reactor_stalls` and `stall_detector_*` children now, so they are
/// exported (at zero) from the start. Polls are timed from this point on.
pub fn install_shard_monitor(shard_id: usize, cfg: StallConfig, metrics: &Metrics) {
    let monitor = ShardMonitor::new(shard_id, cfg, metrics);
    let fast_path = monitor.stall_threshold.min(cfg.blocked_reactor_notify);
    let installed = MONITOR
        .try_with(|slot| match slot.try_borrow_mut() {
            Ok(mut slot) => {
                *slot = Some(monitor);
                true
            }
            Err(_) => false,
        })
        .unwrap_or(false);
    if installed {
        let _ = CONTEXT.try_with(|ctx| ctx.stall_threshold.set(Some(fast_path)));
    } else {
        tracing::error!(
            "cannot install the stall monitor of shard {shard_id}: thread is shutting down or busy"
        );
    }
}

/// Removes the calling thread's stall monitor, if any (instrumented polls stop being
/// timed). Returns whether one was installed.
pub fn uninstall_shard_monitor() -> bool {
    let _ = CONTEXT.try_with(|ctx| ctx.stall_threshold.set(None));
    watchdog::unregister_this_thread();
    MONITOR
        .try_with(|slot| {
            slot.try_borrow_mut()
                .ok()
                .and_then(|mut s| s.take())
                .is_some()
        })
        .unwrap_or(false)
}

/// Creates the zero-valued quota-violation series of task queue `group` on this shard, so
/// that it is exported before the first stall (useful for `rate()` and alerts). Optional;
/// does nothing without a monitor.
pub fn declare_task_queue(group: &'static str) {
    with_monitor(|monitor, _| {
        monitor.violations.with(group, |_| ());
    });
}

/// Periodic housekeeping; the server's maintenance task calls it about once a second on
/// every shard. Logs the "suppressed N reports" summary once a rate-limit minute with
/// suppressed reports is over. Does nothing without a monitor.
pub fn maintenance_tick() {
    maintenance_tick_at(Instant::now());
}

pub(crate) fn maintenance_tick_at(now: Instant) {
    with_monitor(|monitor, out| monitor.roll(now, out));
}

/// Called by [`crate::Instrumented`] as a timed poll of task queue `queue` starts, `now`:
/// reads the thread's clocks as the reference of the next long poll when the last reading is
/// older than [`REFERENCE_MAX_AGE`], and shows the poll to the watchdog. Returns the poll's
/// start: `now`, or the instant right after the reading (a preemption during the reading
/// belongs to neither).
#[inline]
pub(crate) fn poll_start(now: Instant, queue: &'static str) -> Instant {
    let fresh = CONTEXT
        .try_with(|ctx| {
            ctx.queue.set(queue);
            ctx.reference
                .get()
                .is_some_and(|(at, _)| now.saturating_duration_since(at) <= REFERENCE_MAX_AGE)
        })
        .unwrap_or(true);
    let start = if fresh { now } else { read_reference() };
    watchdog::poll_started(watchdog::nanos_since_base(start));
    start
}

/// Called by [`crate::Instrumented`] when a timed poll returns: what the watchdog did with it
/// while it ran.
#[inline]
pub(crate) fn poll_end() -> Watched {
    watchdog::poll_ended()
}

#[cold]
fn read_reference() -> Instant {
    let mut times = None;
    with_monitor(|monitor, _| times = Some(monitor.clock.read()));
    let start = Instant::now();
    let _ = CONTEXT.try_with(|ctx| ctx.reference.set(times.map(|times| (start, times))));
    start
}

/// Called by [`crate::Instrumented`] when a poll that started at `start` ran `ran`, longer
/// than the fast-path threshold; `watched`: what the watchdog did with it while it ran.
pub(crate) fn record_stall(
    queue: &'static str,
    activity: Activity,
    start: Instant,
    ran: Duration,
    watched: Watched,
) {
    let now = Instant::now();
    with_monitor(|monitor, out| {
        let end = monitor.clock.read();
        let split = CONTEXT
            .try_with(|ctx| {
                let split = match ctx.reference.get() {
                    Some((at, reference)) => {
                        PollSplit::between(reference, start.saturating_duration_since(at), end, ran)
                    }
                    None => PollSplit {
                        on_cpu: ran,
                        ..PollSplit::default()
                    },
                };
                ctx.reference.set(Some((now, end)));
                split
            })
            .unwrap_or_default();
        monitor.on_long_run(queue, activity, ran, split, watched, now, out)
    });
}

/// Runs `f` on this thread's monitor, then emits the log lines it produced (outside the
/// borrow). No-op without a monitor, during thread teardown, or on re-entry.
fn with_monitor(f: impl FnOnce(&mut ShardMonitor, &mut Vec<LogLine>)) {
    let mut out = Vec::new();
    let _ = MONITOR.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            if let Some(monitor) = slot.as_mut() {
                f(monitor, &mut out);
            }
        }
    });
    for line in out {
        line.emit();
    }
}

#[cfg(test)]
mod tests;
