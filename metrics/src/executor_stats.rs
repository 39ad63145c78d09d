//! Glommio executor and task-queue statistics exported as counters.
//!
//! Glommio 0.9's `executor().executor_stats()`, `task_queue_stats(handle)` and
//! `all_task_queue_stats(..)` return what accumulated since the previous read and reset it,
//! so every value read is a delta and there must be exactly one reader per shard.
//! [`ShardMetrics::record_executor_stats`] and [`ShardMetrics::record_task_queue_stats`]
//! take those deltas, either as glommio's own structs (`&glommio::ExecutorStats`,
//! `&glommio::TaskQueueStats`) or as [`ExecutorStatsDelta`] / [`TaskQueueStatsDelta`];
//! [`GlommioStatsReader`] is a ready-made single reader.
//!
//! Mapping to Seastar (`reactor.cc`): `reactor_cpu_busy_ms` → `reactor_busy_seconds_total`,
//! `reactor_tasks_processed` → `reactor_tasks_executed_total`, `reactor_utilization` →
//! `reactor_utilization_ratio`, `scheduler_runtime_ms{group}` →
//! `task_queue_runtime_seconds_total{group}`, `scheduler_shares{group}` →
//! `task_queue_shares{group}`. Glommio counts no tasks per queue, only how often a queue was
//! selected (`task_queue_selected_total{group}`).

use std::time::{Duration, Instant};

use glommio::{ExecutorStats, GlommioError, TaskQueueHandle, TaskQueueStats};
use prometheus::{Counter, IntCounter, IntGauge};

use crate::shard::ShardMetrics;

/// Executor statistics accumulated over one interval (a delta, not a running total).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecutorStatsDelta {
    /// Time spent running tasks (glommio `executor_runtime`).
    pub task_runtime: Duration,
    /// Time spent running tasks or polling for I/O, excluding sleep and spinning (glommio
    /// `total_runtime`); Seastar's "cpu busy".
    pub busy: Duration,
    /// Times the scheduler selected a task queue (glommio `scheduler_runs`).
    pub scheduler_runs: u64,
    /// Task runs over all queues (glommio `tasks_executed`).
    pub tasks_executed: u64,
}

impl From<&ExecutorStats> for ExecutorStatsDelta {
    /// Converts a value returned by glommio 0.9's `executor().executor_stats()`, which is
    /// already a delta since the previous call.
    fn from(stats: &ExecutorStats) -> Self {
        ExecutorStatsDelta {
            task_runtime: stats.executor_runtime(),
            busy: stats.total_runtime(),
            scheduler_runs: stats.scheduler_runs(),
            tasks_executed: stats.tasks_executed(),
        }
    }
}

/// Task-queue statistics accumulated over one interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskQueueStatsDelta {
    /// Time spent running this queue's tasks (glommio `runtime`).
    pub runtime: Duration,
    /// Times the scheduler selected this queue (glommio `queue_selected`).
    pub selected: u64,
    /// The queue's shares at the time of reading (a level, not a delta).
    pub shares: usize,
}

impl From<&TaskQueueStats> for TaskQueueStatsDelta {
    /// Converts a value returned by glommio 0.9's `task_queue_stats(handle)`, which is
    /// already a delta since the previous call.
    fn from(stats: &TaskQueueStats) -> Self {
        TaskQueueStatsDelta {
            runtime: stats.runtime(),
            selected: stats.queue_selected(),
            shares: stats.current_shares(),
        }
    }
}

fn add_seconds(counter: &Counter, d: Duration) {
    counter.inc_by(d.as_secs_f64());
}

impl ShardMetrics {
    /// Adds one interval of executor statistics (e.g. `&glommio::executor().executor_stats()`):
    /// `reactor_busy_seconds_total`, `reactor_task_run_seconds_total`,
    /// `reactor_tasks_executed_total`, `reactor_scheduler_runs_total`, and sets
    /// `reactor_utilization_ratio` to busy time / wall-clock time since the previous call
    /// (or since these handles were created, for the first call), clamped to 0..=1.
    pub fn record_executor_stats(&self, delta: impl Into<ExecutorStatsDelta>) {
        let now = Instant::now();
        let wall = now.saturating_duration_since(self.last_executor_stats.replace(now));
        self.record_executor_stats_over(delta.into(), wall);
    }

    /// [`ShardMetrics::record_executor_stats`] with the interval length given; the ratio is
    /// left unchanged when `wall` is zero.
    pub(crate) fn record_executor_stats_over(&self, delta: ExecutorStatsDelta, wall: Duration) {
        add_seconds(&self.reactor_busy, delta.busy);
        add_seconds(&self.reactor_task_runtime, delta.task_runtime);
        self.reactor_tasks_executed.inc_by(delta.tasks_executed);
        self.reactor_scheduler_runs.inc_by(delta.scheduler_runs);
        if !wall.is_zero() {
            let ratio = delta.busy.as_secs_f64() / wall.as_secs_f64();
            self.reactor_utilization.set(ratio.clamp(0.0, 1.0));
        }
    }

    /// Adds one interval of statistics of task queue `group` (e.g.
    /// `&glommio::executor().task_queue_stats(handle)?`):
    /// `task_queue_runtime_seconds_total{group}`, `task_queue_selected_total{group}`, and
    /// sets `task_queue_shares{group}`.
    pub fn record_task_queue_stats(
        &self,
        group: &'static str,
        delta: impl Into<TaskQueueStatsDelta>,
    ) {
        let delta = delta.into();
        self.task_queue_runtime
            .with(group, |c| add_seconds(c, delta.runtime));
        self.task_queue_selected
            .with(group, |c: &IntCounter| c.inc_by(delta.selected));
        let shares = i64::try_from(delta.shares).unwrap_or(i64::MAX);
        self.task_queue_shares
            .with(group, |g: &IntGauge| g.set(shares));
    }
}

/// The single reader of a shard's glommio statistics (they reset on read).
///
/// Create it on the shard, register the task queues with
/// [`GlommioStatsReader::track_task_queue`], and call [`GlommioStatsReader::read_into`]
/// from the maintenance task (e.g. every second). Must be used on the shard's executor
/// thread, like every glommio `executor()` call.
#[derive(Debug, Default)]
pub struct GlommioStatsReader {
    queues: Vec<(&'static str, TaskQueueHandle)>,
}

impl GlommioStatsReader {
    /// A reader tracking no task queue yet (the executor's statistics are always read).
    /// The first [`GlommioStatsReader::read_into`] picks up everything accumulated since the
    /// executor started.
    pub fn new() -> Self {
        GlommioStatsReader { queues: Vec::new() }
    }

    /// Exports the statistics of the task queue `handle` under `group`.
    pub fn track_task_queue(&mut self, group: &'static str, handle: TaskQueueHandle) {
        self.queues.push((group, handle));
    }

    /// Reads (and thereby resets) the executor's and the tracked queues' statistics and
    /// adds them to `metrics`.
    ///
    /// # Errors
    ///
    /// The first glommio error met (a tracked queue no longer exists); the executor and the
    /// other queues are still recorded.
    ///
    /// # Panics
    ///
    /// If called outside a glommio executor thread (glommio's `executor()` does).
    pub fn read_into(&mut self, metrics: &ShardMetrics) -> Result<(), GlommioError<()>> {
        let executor = glommio::executor();
        metrics.record_executor_stats(&executor.executor_stats());
        let mut first_error = None;
        for (group, handle) in &self.queues {
            match executor.task_queue_stats(*handle) {
                Ok(stats) => metrics.record_task_queue_stats(group, &stats),
                Err(err) => {
                    first_error.get_or_insert(err);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{assert_close, sample};
    use crate::Metrics;
    use glommio::{Latency, LocalExecutorBuilder, Placement, Shares};

    #[test]
    fn executor_deltas_accumulate_exactly() {
        let metrics = Metrics::new();
        let shard = metrics.shard(4);
        let delta = ExecutorStatsDelta {
            task_runtime: Duration::from_millis(200),
            busy: Duration::from_millis(250),
            scheduler_runs: 10,
            tasks_executed: 40,
        };
        shard.record_executor_stats_over(delta, Duration::from_secs(1));
        shard.record_executor_stats_over(delta, Duration::from_millis(500));
        let s = |name: &str| sample(&metrics, name, &[("shard", "4")]);
        assert_close(s("shardline_reactor_busy_seconds_total"), 0.5);
        assert_close(s("shardline_reactor_task_run_seconds_total"), 0.4);
        assert_eq!(s("shardline_reactor_tasks_executed_total"), Some(80.0));
        assert_eq!(s("shardline_reactor_scheduler_runs_total"), Some(20.0));
        assert_close(s("shardline_reactor_utilization_ratio"), 0.5);
        // A zero-length interval leaves the ratio alone.
        shard.record_executor_stats_over(ExecutorStatsDelta::default(), Duration::ZERO);
        assert_close(s("shardline_reactor_utilization_ratio"), 0.5);
        // The public entry point measures the interval itself: ~0 busy over a real interval.
        std::thread::sleep(Duration::from_millis(2));
        shard.record_executor_stats(ExecutorStatsDelta::default());
        assert_close(s("shardline_reactor_utilization_ratio"), 0.0);
        assert_eq!(s("shardline_reactor_tasks_executed_total"), Some(80.0));
    }

    #[test]
    fn task_queue_deltas_accumulate_exactly() {
        let metrics = Metrics::new();
        let shard = metrics.shard(0);
        let delta = TaskQueueStatsDelta {
            runtime: Duration::from_millis(30),
            selected: 3,
            shares: 100,
        };
        shard.record_task_queue_stats("auth", delta);
        shard.record_task_queue_stats("auth", delta);
        let auth = [("shard", "0"), ("group", "auth")];
        assert_close(
            sample(
                &metrics,
                "shardline_task_queue_runtime_seconds_total",
                &auth,
            ),
            0.06,
        );
        assert_eq!(
            sample(&metrics, "shardline_task_queue_selected_total", &auth),
            Some(6.0)
        );
        assert_eq!(
            sample(&metrics, "shardline_task_queue_shares", &auth),
            Some(100.0)
        );
    }

    #[test]
    fn reader_exports_real_glommio_stats() {
        let metrics = Metrics::new();
        let in_shard = metrics.clone();
        LocalExecutorBuilder::new(Placement::Unbound)
            .io_memory(64 << 10)
            .spawn(move || async move {
                let shard = in_shard.shard(0);
                let tq = glommio::executor().create_task_queue(
                    Shares::Static(250),
                    Latency::NotImportant,
                    "auth",
                );
                let mut reader = GlommioStatsReader::new();
                reader.track_task_queue("auth", tq);
                for _ in 0..5 {
                    glommio::spawn_local_into(async { std::hint::black_box(1) }, tq)
                        .expect("queue exists")
                        .await;
                }
                assert!(reader.read_into(&shard).is_ok());
            })
            .expect("executor starts")
            .join()
            .expect("executor finishes");
        let auth = [("shard", "0"), ("group", "auth")];
        assert_eq!(
            sample(&metrics, "shardline_task_queue_shares", &auth),
            Some(250.0)
        );
        let selected = sample(&metrics, "shardline_task_queue_selected_total", &auth);
        assert!(selected.unwrap_or(0.0) >= 1.0, "{selected:?}");
        let tasks = sample(
            &metrics,
            "shardline_reactor_tasks_executed_total",
            &[("shard", "0")],
        );
        assert!(tasks.unwrap_or(0.0) >= 5.0, "{tasks:?}");
    }
}
