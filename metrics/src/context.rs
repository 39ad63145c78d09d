//! The thread-local state shared by the instrumentation wrapper, the activity API and
//! the stall monitor.
//!
//! Everything the per-poll fast path needs lives in one `const`-initialised thread-local so
//! that a poll costs one TLS address computation, a few `Cell` reads/writes and two
//! `Instant::now()` calls. No allocation, no atomics.

use std::cell::Cell;
use std::time::Duration;

use crate::activity::Activity;

/// Per-thread instrumentation state.
pub(crate) struct TaskContext {
    /// What the currently polled instrumented task says it is doing.
    pub(crate) activity: Cell<Activity>,
    /// True while an instrumented poll is running on this thread (nested wrappers do not time).
    pub(crate) in_poll: Cell<bool>,
    /// Run length above which a poll is a stall (2 × task quota); `None` when no shard
    /// monitor is installed, in which case polls are not timed at all.
    pub(crate) stall_threshold: Cell<Option<Duration>>,
}

thread_local! {
    pub(crate) static CONTEXT: TaskContext = const {
        TaskContext {
            activity: Cell::new(Activity::Unspecified),
            in_poll: Cell::new(false),
            stall_threshold: Cell::new(None),
        }
    };
}
