//! Metrics, stall detection and the Prometheus endpoint of shardline.
//!
//! shardline runs one glommio executor per core ("shard"). This crate gives it Seastar's
//! reactor observability (ScyllaDB's `reactor.cc` stall accounting and stall reporter),
//! exported through the `prometheus` crate under the `shardline_` namespace:
//!
//! * [`instrument`] wraps every task the server spawns and times each poll;
//!   [`activity::set`] lets the task say what it is doing, for stall reports.
//! * [`install_shard_monitor`] (once per shard thread) turns long polls into the
//!   `shardline_reactor_stalls` histogram, quota-violation seconds per task queue, and
//!   rate-limited `Reactor stalled for N ms …` warnings ([`stall`] has the definitions);
//!   [`maintenance_tick`] flushes the "suppressed N reports" summaries.
//! * [`Metrics`] holds the registry and every family; [`Metrics::shard`] returns the
//!   pre-resolved [`ShardMetrics`] a shard updates without touching other shards' atomics.
//!   [`GlommioStatsReader`] exports glommio's executor and task-queue statistics.
//! * [`serve`] / [`serve_with`] answer `GET /metrics` from their own thread, within
//!   [`EndpointLimits`] (request timeout, concurrent scrapes).
//! * [`LogThrottle`] keeps a repeating condition (e.g. accept failing with EMFILE) to one
//!   log line per period, with the count of the occurrences in between.
//!
//! Wiring, per process and per shard:
//!
//! ```no_run
//! use std::rc::Rc;
//! use std::time::Duration;
//! use shardline_metrics::{
//!     activity::{self, Activity}, instrument, install_shard_monitor, labels,
//!     maintenance_tick, serve, GlommioStatsReader, Metrics, StallConfig,
//! };
//!
//! # fn main() -> std::io::Result<()> {
//! // Once per process.
//! let metrics = Metrics::new();
//! let endpoint = serve("127.0.0.1:9180".parse().expect("address"), metrics.clone())?;
//!
//! // On each shard's executor thread (shard_id = 0 here).
//! let shard_id = 0;
//! install_shard_monitor(shard_id, StallConfig::default(), &metrics);
//! let shard = Rc::new(metrics.shard(shard_id));
//!
//! // Every spawned task goes through `instrument`, named after its task queue.
//! let conn = instrument("main", {
//!     let shard = Rc::clone(&shard);
//!     async move {
//!         shard.connection_accepted();
//!         activity::set(Activity::Command("GET"));
//!         shard.command("GET");
//!         shard.connection_closed(labels::close_reason::CLIENT_CLOSED);
//!     }
//! })
//! .with_activity(Activity::Handshake);
//! # drop(conn);
//!
//! // The maintenance task, every second: the one reader of glommio's stats.
//! let mut stats = GlommioStatsReader::new();
//! // stats.track_task_queue("auth", auth_queue_handle);
//! let tick = instrument("maintenance", async move {
//!     loop {
//!         glommio::timer::sleep(Duration::from_secs(1)).await;
//!         maintenance_tick();
//!         let _ = stats.read_into(&shard);
//!     }
//! });
//! # drop(tick);
//! endpoint.shutdown();
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod activity;
mod context;
mod executor_stats;
mod http;
mod label_cache;
pub mod labels;
mod registry;
mod reporter;
mod shard;
pub mod stall;
mod task;
#[cfg(test)]
mod test_support;
mod thread_times;
mod throttle;
mod watchdog;

pub use activity::Activity;
pub use executor_stats::{ExecutorStatsDelta, GlommioStatsReader, TaskQueueStatsDelta};
pub use http::{serve, serve_with, EndpointLimits, MetricsServer};
pub use registry::{reactor_stall_buckets, Metrics, NAMESPACE, TEXT_CONTENT_TYPE};
pub use shard::{AofTotals, ShardMetrics};
pub use stall::{
    declare_task_queue, install_shard_monitor, maintenance_tick, uninstall_shard_monitor,
    StallConfig, StallConfigError,
};
pub use task::{instrument, Instrumented};
pub use throttle::LogThrottle;
pub use watchdog::start as start_stall_watchdog;
