//! Where a long poll's wall-clock time went: on a CPU, waiting for one (preempted), or
//! neither (blocked in a system call, e.g. a sleep or a synchronous disk write).
//!
//! A stall is wall-clock time, as Seastar's `reactor_stalls` is, so a shard thread that the
//! kernel takes off its CPU for another process looks like slow code. Two per-thread clocks
//! tell the cases apart:
//!
//! * **on CPU**: `clock_gettime(CLOCK_THREAD_CPUTIME_ID)` (user + system time), exact to the
//!   read (~0.25 µs: a system call, not in the vDSO);
//! * **preempted**: `run_delay` — the second field of `/proc/thread-self/schedstat`, the time
//!   the thread was runnable but waiting for a CPU, as the scheduler accounts it when the
//!   thread gets a CPU back (~0.7 µs a read; kept open, read with `pread`).
//!
//! Reading both around every poll would cost more than the whole pipelined GET path's budget
//! for this (2 %), so the reads are made only at the end of a poll that ran longer than the
//! stall threshold, and at the start of polls no more often than every
//! [`REFERENCE_MAX_AGE`]: a long poll is measured from the last such reference. Between the
//! reference and the poll's start the thread may have been on a CPU for up to that gap, so
//! the poll's on-CPU time is the CPU time since the reference minus the gap (never more than
//! the poll's run time), and its preempted time is the run-queue wait since the reference
//! (never more than what the run time leaves). Either is off by at most the gap, 250 µs, on
//! polls of at least 2 × task quota (1 ms by default).
//!
//! Without `/proc/thread-self/schedstat` (a kernel without `CONFIG_SCHED_INFO`), every
//! off-CPU moment of a poll counts as preempted.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Duration;

/// Longest wall-clock time between the reference reading a long poll is measured from and the
/// poll's start.
pub(crate) const REFERENCE_MAX_AGE: Duration = Duration::from_micros(250);

/// One reading of the calling thread's scheduler clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ThreadTimes {
    /// CPU time used so far (user + system).
    pub(crate) on_cpu: Duration,
    /// Time spent runnable but waiting for a CPU so far; `None` when the kernel does not
    /// account it.
    pub(crate) run_delay: Option<Duration>,
}

/// The calling thread's clocks: open it on the thread it measures.
#[derive(Debug)]
pub(crate) struct ThreadClock {
    /// `/proc/thread-self/schedstat` of the thread that opened it.
    schedstat: Option<File>,
}

impl ThreadClock {
    /// Opens the clocks of the calling thread.
    pub(crate) fn open() -> Self {
        Self {
            schedstat: File::open("/proc/thread-self/schedstat").ok(),
        }
    }

    /// Reads the clocks. Only valid on the thread that called [`ThreadClock::open`]: the
    /// CPU clock is always the caller's.
    pub(crate) fn read(&self) -> ThreadTimes {
        ThreadTimes {
            on_cpu: thread_cpu_time(),
            run_delay: self.schedstat.as_ref().and_then(read_run_delay),
        }
    }
}

/// Where the wall-clock time of one long poll went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct PollSplit {
    /// Time on a CPU.
    pub(crate) on_cpu: Duration,
    /// Time runnable but off the CPU (another thread or process had it).
    pub(crate) preempted: Duration,
    /// The rest: waiting in the kernel for something other than a CPU (sleep, disk).
    pub(crate) blocked: Duration,
}

impl PollSplit {
    /// Splits a poll of `ran` that started `gap` after the `reference` reading and ended at
    /// the `end` reading (see the module doc for the bounds).
    pub(crate) fn between(
        reference: ThreadTimes,
        gap: Duration,
        end: ThreadTimes,
        ran: Duration,
    ) -> Self {
        let on_cpu = end
            .on_cpu
            .saturating_sub(reference.on_cpu)
            .saturating_sub(gap)
            .min(ran);
        let off_cpu = ran - on_cpu;
        let preempted = match (reference.run_delay, end.run_delay) {
            (Some(before), Some(after)) => after.saturating_sub(before).min(off_cpu),
            _ => off_cpu,
        };
        Self {
            on_cpu,
            preempted,
            blocked: off_cpu - preempted,
        }
    }

    /// Whether the thread was off the CPU, preempted, for more than half of `ran`.
    pub(crate) fn mostly_preempted(&self, ran: Duration) -> bool {
        self.preempted > ran / 2
    }
}

/// `CLOCK_THREAD_CPUTIME_ID` of the calling thread (zero if the clock cannot be read).
fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

fn read_run_delay(schedstat: &File) -> Option<Duration> {
    let mut buf = [0u8; 96];
    let len = schedstat.read_at(&mut buf, 0).ok()?;
    parse_run_delay(&buf[..len])
}

/// The second field (run-queue wait, ns) of a `schedstat` line: `"<on-cpu ns> <wait ns>
/// <timeslices>\n"` (Documentation/scheduler/sched-stats.rst).
fn parse_run_delay(line: &[u8]) -> Option<Duration> {
    let text = std::str::from_utf8(line).ok()?;
    let nanos = text.split_ascii_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn times(on_cpu_ms: u64, run_delay_ms: Option<u64>) -> ThreadTimes {
        ThreadTimes {
            on_cpu: MS * on_cpu_ms as u32,
            run_delay: run_delay_ms.map(|ms| MS * ms as u32),
        }
    }

    #[test]
    fn parses_the_run_queue_wait_of_a_schedstat_line() {
        assert_eq!(
            parse_run_delay(b"653872 3012623 1\n"),
            Some(Duration::from_nanos(3_012_623))
        );
        assert_eq!(parse_run_delay(b"653872\n"), None);
        assert_eq!(parse_run_delay(b"653872 x 1\n"), None);
    }

    #[test]
    fn reads_this_threads_clocks() {
        let clock = ThreadClock::open();
        let before = clock.read();
        let started = std::time::Instant::now();
        while started.elapsed() < 5 * MS {}
        let after = clock.read();
        assert!(after.on_cpu > before.on_cpu, "{before:?} then {after:?}");
        if clock.schedstat.is_some() {
            assert!(after.run_delay >= before.run_delay);
        }
    }

    #[test]
    fn splits_a_poll_into_on_cpu_preempted_and_blocked() {
        // Preempted: 42 ms, of which 3 on the CPU and 39 waiting for it.
        let split = PollSplit::between(
            times(10, Some(5)),
            Duration::ZERO,
            times(13, Some(44)),
            42 * MS,
        );
        assert_eq!(
            split,
            PollSplit {
                on_cpu: 3 * MS,
                preempted: 39 * MS,
                blocked: Duration::ZERO
            }
        );
        assert!(split.mostly_preempted(42 * MS));
        // A sleep: 100 ms off the CPU without waiting for it.
        let split = PollSplit::between(
            times(10, Some(5)),
            Duration::ZERO,
            times(10, Some(5)),
            100 * MS,
        );
        assert_eq!(split.blocked, 100 * MS);
        assert!(!split.mostly_preempted(100 * MS));
        // The gap since the reference is taken off the CPU time, which never exceeds the run.
        let split = PollSplit::between(times(0, Some(0)), 2 * MS, times(9, Some(0)), 5 * MS);
        assert_eq!(
            (split.on_cpu, split.preempted, split.blocked),
            (5 * MS, Duration::ZERO, Duration::ZERO)
        );
        // Without the run-queue clock every off-CPU moment counts as preempted.
        let split = PollSplit::between(times(0, None), Duration::ZERO, times(1, None), 4 * MS);
        assert_eq!((split.on_cpu, split.preempted), (MS, 3 * MS));
    }
}
