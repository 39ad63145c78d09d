//! The thread-local state shared by the instrumentation wrapper, the activity API and
//! the stall monitor.
//!
//! Everything the per-poll fast path needs lives in one `const`-initialised thread-local so
//! that a poll costs one TLS address computation, a few `Cell` reads/writes and two
//! `Instant::now()` calls, no allocation; the watchdog's stamp ([`crate::watchdog`]) adds a
//! store and a swap of one atomic of the shard's own.

use std::cell::Cell;
use std::time::{Duration, Instant};

use crate::activity::Activity;
use crate::thread_times::ThreadTimes;

/// Per-thread instrumentation state.
pub(crate) struct TaskContext {
    /// What the currently polled instrumented task says it is doing.
    pub(crate) activity: Cell<Activity>,
    /// True while an instrumented poll is running on this thread (nested wrappers do not time).
    pub(crate) in_poll: Cell<bool>,
    /// Run length above which a poll is a stall (2 × task quota); `None` when no shard
    /// monitor is installed, in which case polls are not timed at all.
    pub(crate) stall_threshold: Cell<Option<Duration>>,
    /// The thread's clocks read at the start of a recent poll, and when: a long poll is split
    /// into on-CPU and preempted time from there ([`crate::thread_times`]).
    pub(crate) reference: Cell<Option<(Instant, ThreadTimes)>>,
    /// Task queue of the timed poll running now (for the watchdog's report).
    pub(crate) queue: Cell<&'static str>,
}

thread_local! {
    pub(crate) static CONTEXT: TaskContext = const {
        TaskContext {
            activity: Cell::new(Activity::Unspecified),
            in_poll: Cell::new(false),
            stall_threshold: Cell::new(None),
            reference: Cell::new(None),
            queue: Cell::new(""),
        }
    };
}
