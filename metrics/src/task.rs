//! The wrapper future through which every server task is spawned.
//!
//! Glommio 0.9 has a stall detector of its own whose findings cannot be observed from
//! outside, so shardline measures task runs itself: [`instrument`] wraps a future and times
//! **each poll** with the monotonic clock (`std::time::Instant`). One poll of a spawned
//! future is one uninterrupted run of that task on its shard, i.e. what Seastar's reactor
//! (`reactor.cc`, `cpu_stall_detector`) calls a task run. Each poll longer than
//! 2 × task quota is handed to the shard's [`crate::stall`] monitor.
//!
//! Cost per poll when a monitor is installed: one thread-local access, two
//! `Instant::now()` calls, one comparison, and the watchdog's stamp (a store at the start, a
//! swap at the end, [`crate::watchdog`]); the monitor is only consulted for stalls, and to
//! read the thread's CPU and run-queue clocks at a poll start at most every 250 µs
//! ([`crate::thread_times`]), which a stall is split from.
//! Without a monitor (e.g. in other crates' unit tests) polls are not timed at all.
//!
//! Nesting: an instrumented future polled from inside another instrumented poll does not
//! time itself (the outer poll already covers that run, and a stall must be counted once);
//! it only scopes its own [`Activity`] and restores the outer one when its poll returns.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use pin_project_lite::pin_project;

use crate::activity::{self, Activity};
use crate::context::CONTEXT;
use crate::stall;

/// Wraps `fut` so that each of its polls is timed and attributed to task queue `queue`.
///
/// `queue` is the glommio task queue the future will be spawned into (`"main"`, `"auth"`,
/// `"maintenance"`, …); it becomes the `group` label of
/// `shardline_scheduler_time_spent_on_task_quota_violations_seconds_total` and appears in
/// stall reports. The task starts with [`Activity::Unspecified`]; use
/// [`Instrumented::with_activity`] to start with another.
///
/// ```
/// # fn demo() {
/// use shardline_metrics::{activity::{self, Activity}, instrument};
///
/// let task = instrument("main", async {
///     activity::set(Activity::Command("GET"));
///     // ... work ...
/// });
/// // glommio::spawn_local_into(task, main_queue) ...
/// # drop(task);
/// # }
/// ```
pub fn instrument<F: Future>(queue: &'static str, fut: F) -> Instrumented<F> {
    Instrumented {
        inner: fut,
        queue,
        activity: Activity::Unspecified,
    }
}

pin_project! {
    /// A future whose polls are timed for stall accounting; built by [`instrument`].
    ///
    /// Output, `Send`-ness and `Unpin`-ness are those of the wrapped future.
    #[must_use = "futures do nothing unless polled"]
    pub struct Instrumented<F> {
        #[pin]
        inner: F,
        queue: &'static str,
        activity: Activity,
    }
}

impl<F> Instrumented<F> {
    /// Sets the activity the task starts with (before its own code calls
    /// [`activity::set`]).
    pub fn with_activity(mut self, activity: Activity) -> Self {
        self.activity = activity;
        self
    }

    /// The task queue name given to [`instrument`].
    pub fn queue(&self) -> &'static str {
        self.queue
    }

    /// The activity the task had when its last poll returned.
    pub fn activity(&self) -> Activity {
        self.activity
    }
}

/// Restores the thread's activity and nesting flag when a poll ends, even by unwinding,
/// and stores the task's activity back into the task.
struct PollScope<'a> {
    task_activity: &'a mut Activity,
    outer_activity: Activity,
    outer_in_poll: bool,
}

impl Drop for PollScope<'_> {
    fn drop(&mut self) {
        *self.task_activity = activity::replace(self.outer_activity);
        let outer_in_poll = self.outer_in_poll;
        let _ = CONTEXT.try_with(|ctx| ctx.in_poll.set(outer_in_poll));
    }
}

impl<F: Future> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let (outer_in_poll, threshold) = CONTEXT
            .try_with(|ctx| (ctx.in_poll.replace(true), ctx.stall_threshold.get()))
            .unwrap_or((true, None));
        let outer_activity = activity::replace(*this.activity);
        let _scope = PollScope {
            task_activity: this.activity,
            outer_activity,
            outer_in_poll,
        };
        let threshold = match threshold {
            Some(threshold) if !outer_in_poll => threshold,
            _ => return this.inner.poll(cx),
        };
        let start = stall::poll_start(Instant::now(), this.queue);
        let result = this.inner.poll(cx);
        let ran = start.elapsed();
        let watched = stall::poll_end();
        if ran > threshold {
            stall::record_stall(this.queue, activity::current(), start, ran, watched);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    fn poll_once<F: Future>(fut: Pin<&mut F>) -> Poll<F::Output> {
        let mut cx = Context::from_waker(Waker::noop());
        fut.poll(&mut cx)
    }

    /// Pending once, then ready; records the activity seen at the start of each poll.
    struct Steps {
        polls: u32,
        seen: Vec<Activity>,
        set_to: Activity,
    }

    impl Future for Steps {
        type Output = Vec<Activity>;
        fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
            self.seen.push(activity::current());
            activity::set(self.set_to);
            self.polls += 1;
            if self.polls < 2 {
                Poll::Pending
            } else {
                Poll::Ready(std::mem::take(&mut self.seen))
            }
        }
    }

    #[test]
    fn works_without_a_monitor_and_keeps_activity_per_task() {
        activity::set(Activity::Other("outside"));
        let mut task = Box::pin(
            instrument(
                "main",
                Steps {
                    polls: 0,
                    seen: Vec::new(),
                    set_to: Activity::Command("GET"),
                },
            )
            .with_activity(Activity::Handshake),
        );
        assert!(poll_once(task.as_mut()).is_pending());
        // The thread's activity is restored after the poll ...
        assert_eq!(activity::current(), Activity::Other("outside"));
        // ... and the task kept what it set.
        assert_eq!(task.activity(), Activity::Command("GET"));
        assert_eq!(task.queue(), "main");
        match poll_once(task.as_mut()) {
            Poll::Ready(seen) => {
                assert_eq!(seen, vec![Activity::Handshake, Activity::Command("GET")]);
            }
            Poll::Pending => panic!("second poll must complete"),
        }
        assert_eq!(activity::current(), Activity::Other("outside"));
    }

    #[test]
    fn nested_instrumented_futures_restore_the_outer_activity() {
        let outer = instrument("main", async {
            activity::set(Activity::Command("MGET"));
            let inner = instrument("auth", async {
                activity::set(Activity::AuthHash);
                activity::current()
            });
            let inner_seen = inner.await;
            (inner_seen, activity::current())
        });
        let mut outer = Box::pin(outer);
        match poll_once(outer.as_mut()) {
            Poll::Ready((inner_seen, outer_after)) => {
                assert_eq!(inner_seen, Activity::AuthHash);
                assert_eq!(outer_after, Activity::Command("MGET"));
            }
            Poll::Pending => panic!("future has no await point that pends"),
        }
        let in_poll = CONTEXT.with(|ctx| ctx.in_poll.get());
        assert!(
            !in_poll,
            "nesting flag must be cleared after the outer poll"
        );
    }
}
