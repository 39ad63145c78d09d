//! The metric families of shardline and the process-wide [`Metrics`] handle.
//!
//! Every family is created once, registered in one `prometheus::Registry`, and named
//! `shardline_<name>` with Prometheus conventions (base units seconds and bytes, counters
//! ending in `_total`), so that every exported name passes `promtool check metrics` without
//! lint findings. Per-shard children are resolved by [`Metrics::shard`] and
//! [`crate::install_shard_monitor`], so a shard only touches its own atomics.
//! `metrics/README.md` maps these names to their Seastar/ScyllaDB counterparts.

use std::fmt;
use std::sync::Arc;

use prometheus::{
    exponential_buckets, CounterVec, Encoder, GaugeVec, HistogramOpts, HistogramVec, IntCounter,
    IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};

use crate::shard::ShardMetrics;

/// Namespace prefixed to every shardline family (`shardline_…`).
pub const NAMESPACE: &str = "shardline";

/// Content type of the Prometheus text exposition format 0.0.4, as served on `/metrics`.
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Upper bounds, in seconds, of the `shardline_reactor_stalls` buckets:
/// 0.000512 · 2^i for i = 0..=16, i.e. 512 µs doubling up to 33.554432 s.
///
/// Seastar's `reactor_stalls` histogram counts microseconds with power-of-two buckets; these
/// are the same boundaries in seconds, starting at 2 × the default 0.5 ms task quota
/// (rounded up to 512 µs).
pub fn reactor_stall_buckets() -> Vec<f64> {
    (0..=16).map(|i| 0.000_512 * f64::from(1u32 << i)).collect()
}

/// The process-wide set of shardline metric families.
///
/// Cheap to clone (an `Arc`), `Send + Sync`. Create one per process with [`Metrics::new`],
/// give each shard its handles with [`Metrics::shard`] and [`crate::install_shard_monitor`],
/// and serve it with [`crate::serve`].
#[derive(Clone)]
pub struct Metrics {
    pub(crate) families: Arc<Families>,
}

/// All families; crate-internal so that shards go through pre-resolved handles.
pub(crate) struct Families {
    pub(crate) registry: Registry,
    // Reactor and stall detection.
    pub(crate) reactor_stalls: HistogramVec,
    pub(crate) stalls_preempted: IntCounterVec,
    pub(crate) preempted_seconds: CounterVec,
    pub(crate) quota_violations: CounterVec,
    pub(crate) stall_reported: IntCounterVec,
    pub(crate) stall_suppressed: IntCounterVec,
    pub(crate) reactor_busy: CounterVec,
    pub(crate) reactor_task_runtime: CounterVec,
    pub(crate) reactor_tasks_executed: IntCounterVec,
    pub(crate) reactor_scheduler_runs: IntCounterVec,
    pub(crate) reactor_utilization: GaugeVec,
    pub(crate) task_queue_runtime: CounterVec,
    pub(crate) task_queue_selected: IntCounterVec,
    pub(crate) task_queue_shares: IntGaugeVec,
    // Connections.
    pub(crate) connections_accepted: IntCounterVec,
    pub(crate) connections_active: IntGaugeVec,
    pub(crate) keyspace_keys: IntGaugeVec,
    pub(crate) keyspace_used_bytes: IntGaugeVec,
    pub(crate) connections_closed: IntCounterVec,
    pub(crate) connections_shed: IntCounterVec,
    pub(crate) evicted_keys: IntCounterVec,
    pub(crate) connections_rejected: IntCounterVec,
    // TLS.
    pub(crate) tls_started: IntCounterVec,
    pub(crate) tls_completed: IntCounterVec,
    pub(crate) tls_failed: IntCounterVec,
    pub(crate) tls_duration: HistogramVec,
    pub(crate) tls_ticket_key_rotations: IntCounter,
    pub(crate) users_reloads: IntCounterVec,
    // Logins.
    pub(crate) logins: IntCounterVec,
    pub(crate) login_wait: HistogramVec,
    pub(crate) password_hash_duration: HistogramVec,
    pub(crate) password_hash_batch_size: HistogramVec,
    pub(crate) offload_queue_depth: IntGauge,
    pub(crate) credentials_cache_hits: IntCounterVec,
    pub(crate) credentials_cache_misses: IntCounterVec,
    pub(crate) login_admission_waited: IntCounterVec,
    // Commands and traffic.
    pub(crate) commands: IntCounterVec,
    pub(crate) command_errors: IntCounterVec,
    pub(crate) received_bytes: IntCounterVec,
    pub(crate) sent_bytes: IntCounterVec,
    pub(crate) client_output_buffer: IntGaugeVec,
    pub(crate) aof_fsync_duration: HistogramVec,
    pub(crate) aof_written_bytes: IntCounterVec,
    pub(crate) aof_writes: IntCounterVec,
    pub(crate) aof_records: IntCounterVec,
    pub(crate) aof_fsynced_records: IntCounterVec,
    pub(crate) aof_cpu_yields: IntCounterVec,
    pub(crate) aof_size: IntGaugeVec,
    pub(crate) aof_replayed_records: IntGaugeVec,
    pub(crate) aof_rewrite_duration: HistogramVec,
    pub(crate) aof_rewrite_failures: IntCounterVec,
    pub(crate) aof_write_errors: IntCounterVec,
    pub(crate) cross_shard_transactions: IntCounterVec,
    pub(crate) cross_shard_batch: HistogramVec,
    pub(crate) cross_shard_reply_batch: HistogramVec,
}

/// Builds and registers families in one registry.
struct Builder<'r> {
    registry: &'r Registry,
}

impl Builder<'_> {
    fn opts(name: &str, help: &str) -> Opts {
        Opts::new(name, help).namespace(NAMESPACE)
    }

    fn int_counter(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
    ) -> prometheus::Result<IntCounterVec> {
        let family = IntCounterVec::new(Self::opts(name, help), labels)?;
        self.registry.register(Box::new(family.clone()))?;
        Ok(family)
    }

    fn counter(&self, name: &str, help: &str, labels: &[&str]) -> prometheus::Result<CounterVec> {
        let family = CounterVec::new(Self::opts(name, help), labels)?;
        self.registry.register(Box::new(family.clone()))?;
        Ok(family)
    }

    fn int_gauge(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
    ) -> prometheus::Result<IntGaugeVec> {
        let family = IntGaugeVec::new(Self::opts(name, help), labels)?;
        self.registry.register(Box::new(family.clone()))?;
        Ok(family)
    }

    fn gauge(&self, name: &str, help: &str, labels: &[&str]) -> prometheus::Result<GaugeVec> {
        let family = GaugeVec::new(Self::opts(name, help), labels)?;
        self.registry.register(Box::new(family.clone()))?;
        Ok(family)
    }

    fn histogram(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
        buckets: Vec<f64>,
    ) -> prometheus::Result<HistogramVec> {
        let opts = HistogramOpts::new(name, help)
            .namespace(NAMESPACE)
            .buckets(buckets);
        let family = HistogramVec::new(opts, labels)?;
        self.registry.register(Box::new(family.clone()))?;
        Ok(family)
    }
}

const SHARD: &[&str] = &["shard"];

impl Families {
    fn build(registry: Registry) -> prometheus::Result<Families> {
        let b = Builder {
            registry: &registry,
        };
        let families = Families {
            reactor_stalls: b.histogram(
                "reactor_stalls",
                "Reactor stalls: task runs (polls) longer than twice the task quota, by run time in seconds.",
                SHARD,
                reactor_stall_buckets(),
            )?,
            stalls_preempted: b.int_counter(
                "reactor_stalls_preempted_total",
                "Reactor stalls during which the shard thread was runnable but off its CPU (preempted) for more than half of the run.",
                SHARD,
            )?,
            preempted_seconds: b.counter(
                "reactor_preempted_seconds_total",
                "Time the shard thread was runnable but off its CPU (preempted) inside stalls, in seconds.",
                SHARD,
            )?,
            quota_violations: b.counter(
                "scheduler_time_spent_on_task_quota_violations_seconds_total",
                "Sum over stalls of (run time - task quota), in seconds, by task queue (group).",
                &["shard", "group"],
            )?,
            stall_reported: b.int_counter(
                "stall_detector_reported_total",
                "Stall reports logged (runs longer than the blocked-reactor notify threshold, after rate limiting).",
                SHARD,
            )?,
            stall_suppressed: b.int_counter(
                "stall_detector_suppressed_total",
                "Stall reports not logged because of the per-minute rate limit.",
                SHARD,
            )?,
            reactor_busy: b.counter(
                "reactor_busy_seconds_total",
                "Time the executor spent running tasks or polling for I/O (not sleeping or spinning), in seconds.",
                SHARD,
            )?,
            reactor_task_runtime: b.counter(
                "reactor_task_run_seconds_total",
                "Time the executor spent running tasks, in seconds.",
                SHARD,
            )?,
            reactor_tasks_executed: b.int_counter(
                "reactor_tasks_executed_total",
                "Task runs executed by the executor, over all task queues.",
                SHARD,
            )?,
            reactor_scheduler_runs: b.int_counter(
                "reactor_scheduler_runs_total",
                "Times the executor's scheduler selected a task queue to run.",
                SHARD,
            )?,
            reactor_utilization: b.gauge(
                "reactor_utilization_ratio",
                "Fraction (0..1) of wall-clock time the executor was busy during the last stats interval.",
                SHARD,
            )?,
            task_queue_runtime: b.counter(
                "task_queue_runtime_seconds_total",
                "Time spent running tasks of a task queue (group), in seconds.",
                &["shard", "group"],
            )?,
            task_queue_selected: b.int_counter(
                "task_queue_selected_total",
                "Times a task queue (group) was selected to run by the scheduler.",
                &["shard", "group"],
            )?,
            task_queue_shares: b.int_gauge(
                "task_queue_shares",
                "Current scheduling shares of a task queue (group).",
                &["shard", "group"],
            )?,
            connections_accepted: b.int_counter(
                "connections_accepted_total",
                "Client connections accepted.",
                SHARD,
            )?,
            connections_active: b.int_gauge(
                "connections_active",
                "Client connections currently open.",
                SHARD,
            )?,
            keyspace_keys: b.int_gauge(
                "keyspace_keys",
                "Keys the shard owns, over all its databases (expired keys not yet removed \
                 included), sampled once a second.",
                SHARD,
            )?,
            keyspace_used_bytes: b.int_gauge(
                "keyspace_used_bytes",
                "Estimated bytes of the shard's keys and values, the figure --maxmemory / smp \
                 limits, sampled once a second.",
                SHARD,
            )?,
            connections_closed: b.int_counter(
                "connections_closed_total",
                "Client connections closed, by reason.",
                &["shard", "reason"],
            )?,
            connections_shed: b.int_counter(
                "connections_shed_total",
                "Connections shed because they waited too long for login admission.",
                SHARD,
            )?,
            evicted_keys: b.int_counter(
                "evicted_keys_total",
                "Keys evicted to stay within the shard's share of --maxmemory (INFO evicted_keys).",
                SHARD,
            )?,
            connections_rejected: b.int_counter(
                "connections_rejected_total",
                "Connections closed right after accept, before any handshake, by reason (max_clients, fd_limit, system_fd_limit).",
                &["shard", "reason"],
            )?,
            tls_started: b.int_counter(
                "tls_handshakes_started_total",
                "TLS handshakes started.",
                SHARD,
            )?,
            tls_completed: b.int_counter(
                "tls_handshakes_completed_total",
                "TLS handshakes completed successfully, by whether they resumed a session (true) or were full handshakes (false).",
                &["shard", "resumed"],
            )?,
            tls_failed: b.int_counter(
                "tls_handshakes_failed_total",
                "TLS handshakes failed, by reason.",
                &["shard", "reason"],
            )?,
            tls_duration: b.histogram(
                "tls_handshake_duration_seconds",
                "Duration of successful TLS handshakes, in seconds.",
                SHARD,
                exponential_buckets(0.000_1, 2.0, 18)?,
            )?,
            tls_ticket_key_rotations: {
                let counter = IntCounter::with_opts(Builder::opts(
                    "tls_ticket_key_rotations_total",
                    "Rotations of the session-ticket keys shared by all shards (process-wide).",
                ))?;
                registry.register(Box::new(counter.clone()))?;
                counter
            },
            users_reloads: {
                let counter = IntCounterVec::new(
                    Builder::opts(
                        "users_reloads_total",
                        "Reloads of the users file on SIGHUP (process-wide), by result: ok, or \
                         refused (unreadable or invalid file; the users loaded before stay).",
                    ),
                    &["result"],
                )?;
                for result in crate::labels::users_reload::ALL {
                    counter.with_label_values(&[result]);
                }
                registry.register(Box::new(counter.clone()))?;
                counter
            },
            logins: b.int_counter(
                "logins_total",
                "Login attempts (AUTH / HELLO AUTH), by result.",
                &["shard", "result"],
            )?,
            login_wait: b.histogram(
                "login_wait_seconds",
                "Time connections waited for login admission, in seconds.",
                SHARD,
                exponential_buckets(0.000_1, 2.0, 21)?,
            )?,
            password_hash_duration: b.histogram(
                "password_hash_duration_seconds",
                "Time from starting a password verification to its result, in seconds, by hash mode.",
                &["shard", "mode"],
                exponential_buckets(0.000_1, 2.0, 18)?,
            )?,
            password_hash_batch_size: b.histogram(
                "password_hash_batch_size",
                "Password verifications hashed together (multi-buffer SHA-512, --hash-batch) in the batch each verification ran in, 1 = alone; observed once per verification, by hash mode.",
                &["shard", "mode"],
                vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
            )?,
            offload_queue_depth: {
                let gauge = IntGauge::with_opts(Builder::opts(
                    "password_hash_offload_queue_depth",
                    "Password hash jobs queued for or running on the offload threads (process-wide).",
                ))?;
                registry.register(Box::new(gauge.clone()))?;
                gauge
            },
            credentials_cache_hits: b.int_counter(
                "credentials_cache_hits_total",
                "Logins answered from the verified-credentials cache.",
                SHARD,
            )?,
            credentials_cache_misses: b.int_counter(
                "credentials_cache_misses_total",
                "Logins that had to hash because the credentials cache had no entry.",
                SHARD,
            )?,
            login_admission_waited: b.int_counter(
                "login_admission_waited_total",
                "Connections that had to wait for login admission (concurrent login limit reached).",
                SHARD,
            )?,
            commands: b.int_counter(
                "commands_total",
                "Commands executed, by lowercase command name.",
                &["shard", "command"],
            )?,
            command_errors: b.int_counter(
                "command_errors_total",
                "Error replies sent, by kind.",
                &["shard", "kind"],
            )?,
            received_bytes: b.int_counter(
                "network_received_bytes_total",
                "Bytes received from clients (after TLS decryption).",
                SHARD,
            )?,
            sent_bytes: b.int_counter(
                "network_sent_bytes_total",
                "Bytes sent to clients (before TLS encryption).",
                SHARD,
            )?,
            client_output_buffer: b.int_gauge(
                "client_output_buffer_bytes",
                "Encoded replies waiting to be written to this shard's clients (the sum of their \
                 CLIENT INFO omem), in bytes.",
                SHARD,
            )?,
            aof_fsync_duration: b.histogram(
                "aof_fsync_duration_seconds",
                "Duration of each fdatasync of the shard's append-only log, in seconds.",
                SHARD,
                (0..=16).map(|i| 0.000_064 * f64::from(1u32 << i)).collect(),
            )?,
            aof_written_bytes: b.int_counter(
                "aof_written_bytes_total",
                "Bytes written to the shard's append-only log.",
                SHARD,
            )?,
            aof_writes: b.int_counter(
                "aof_writes_total",
                "Writes to the shard's append-only log, each carrying every record appended \
                 since the previous one.",
                SHARD,
            )?,
            aof_records: b.int_counter(
                "aof_records_total",
                "Records (commands, MULTI/EXEC, expiry DELs) appended to the shard's append-only log.",
                SHARD,
            )?,
            aof_fsynced_records: b.int_counter(
                "aof_fsynced_records_total",
                "Records covered by an fdatasync of the log or by a write with RWF_DSYNC (under appendfsync always, divided by the fdatasync count it is the group size).",
                SHARD,
            )?,
            aof_cpu_yields: b.int_counter(
                "aof_cpu_yields_total",
                "Times the shard yielded its CPU (sched_yield) to the io_uring worker running its durable log write (appendfsync always, at most once per --aof-fsync-yield-us).",
                SHARD,
            )?,
            aof_size: b.int_gauge(
                "aof_size_bytes",
                "Size of the shard's append-only log, buffered bytes included.",
                SHARD,
            )?,
            aof_replayed_records: b.int_gauge(
                "aof_replayed_records",
                "Commands replayed from the shard's append-only log at start.",
                SHARD,
            )?,
            aof_rewrite_duration: b.histogram(
                "aof_rewrite_duration_seconds",
                "Duration of each successful rewrite of the shard's append-only log, in seconds.",
                SHARD,
                (0..=16).map(|i| 0.001 * f64::from(1u32 << i)).collect(),
            )?,
            aof_rewrite_failures: b.int_counter(
                "aof_rewrite_failures_total",
                "Rewrites of the shard's append-only log that failed.",
                SHARD,
            )?,
            aof_write_errors: b.int_counter(
                "aof_write_errors_total",
                "Failed writes and fdatasyncs of the shard's append-only log; each is retried a \
                 second later, and write commands are refused (MISCONF) until one succeeds.",
                SHARD,
            )?,
            cross_shard_transactions: b.int_counter(
                "cross_shard_transactions_total",
                "Transactions coordinated by the shard that took the gates of several shards \
                 (a multi-key command or MULTI/EXEC whose keys live on more than one shard).",
                SHARD,
            )?,
            cross_shard_batch: b.histogram(
                "cross_shard_batch_requests",
                "Requests per cross-shard message the shard received: another shard gathers \
                 what it forwards to this one during a poll and sends it as one message.",
                SHARD,
                (0..=10).map(|i| f64::from(1u32 << i)).collect(),
            )?,
            cross_shard_reply_batch: b.histogram(
                "cross_shard_reply_batch_replies",
                "Replies per cross-shard message the shard received: another shard gathers the \
                 replies it owes this one and sends them back as one message.",
                SHARD,
                (0..=10).map(|i| f64::from(1u32 << i)).collect(),
            )?,
            registry,
        };
        Ok(families)
    }
}

impl Metrics {
    /// Creates all families in a new registry, plus the process collector
    /// (`process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_open_fds`,
    /// … from the `prometheus` crate's `process` feature; Linux only).
    ///
    /// # Panics
    ///
    /// Only if the fixed family definitions were invalid, which the crate's tests rule out;
    /// use [`Metrics::try_new`] to get the error instead.
    pub fn new() -> Metrics {
        match Metrics::try_new() {
            Ok(metrics) => metrics,
            Err(err) => panic!("shardline metric definitions are invalid: {err}"),
        }
    }

    /// Like [`Metrics::new`], returning the registration error instead of panicking.
    ///
    /// # Errors
    ///
    /// A `prometheus::Error` if a family cannot be created or registered.
    pub fn try_new() -> prometheus::Result<Metrics> {
        let registry = Registry::new();
        #[cfg(target_os = "linux")]
        registry.register(Box::new(
            prometheus::process_collector::ProcessCollector::for_self(),
        ))?;
        Ok(Metrics {
            families: Arc::new(Families::build(registry)?),
        })
    }

    /// The per-shard handles for shard `shard_id`, with all unlabelled-per-shard children
    /// resolved now (so they are exported, at zero, from the start).
    ///
    /// Call once per shard and share the result inside the shard (e.g. in an `Rc`): its label
    /// caches are per handle, and it is `Send` but not `Sync`.
    pub fn shard(&self, shard_id: usize) -> ShardMetrics {
        ShardMetrics::new(&self.families, shard_id)
    }

    /// The process-wide gauge of password-hash jobs queued for or running on the offload
    /// pool (`shardline_password_hash_offload_queue_depth`). `Send + Sync`: the pool's
    /// submitters and threads update it directly.
    pub fn password_hash_offload_queue_depth(&self) -> IntGauge {
        self.families.offload_queue_depth.clone()
    }

    /// The process-wide counter of session-ticket key rotations
    /// (`shardline_tls_ticket_key_rotations_total`), for the rotating thread.
    pub fn tls_ticket_key_rotations(&self) -> IntCounter {
        self.families.tls_ticket_key_rotations.clone()
    }

    /// The process-wide counter of users-file reloads by result
    /// (`shardline_users_reloads_total{result}`, [`crate::labels::users_reload`]), for the
    /// thread that handles SIGHUP.
    pub fn users_reloads(&self) -> IntCounterVec {
        self.families.users_reloads.clone()
    }

    /// The underlying registry, e.g. to register further collectors.
    pub fn registry(&self) -> &Registry {
        &self.families.registry
    }

    /// Encodes every family in the Prometheus text format 0.0.4 (see
    /// [`TEXT_CONTENT_TYPE`]).
    ///
    /// # Errors
    ///
    /// A `prometheus::Error` if a collected family is malformed (not expected for the
    /// families defined here).
    pub fn encode_text(&self) -> prometheus::Result<Vec<u8>> {
        let families = self.families.registry.gather();
        let mut buf = Vec::with_capacity(16 * 1024);
        TextEncoder::new().encode(&families, &mut buf)?;
        Ok(buf)
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics")
            .field("namespace", &NAMESPACE)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_buckets_are_512us_doubling_to_33_5s() {
        let buckets = reactor_stall_buckets();
        assert_eq!(buckets.len(), 17);
        assert_eq!(buckets[0], 0.000_512);
        assert_eq!(buckets[1], 0.001_024);
        assert!((buckets[16] - 33.554_432).abs() < 1e-12);
        for pair in buckets.windows(2) {
            assert_eq!(pair[1], pair[0] * 2.0);
        }
    }

    #[test]
    fn families_are_namespaced_and_encodable() {
        let metrics = Metrics::new();
        let _shard = metrics.shard(0);
        let text = String::from_utf8(metrics.encode_text().expect("encode")).expect("utf-8");
        for name in [
            "shardline_reactor_stalls_count{shard=\"0\"} 0",
            "shardline_reactor_stalls_bucket{shard=\"0\",le=\"0.000512\"} 0",
            "shardline_stall_detector_reported_total{shard=\"0\"} 0",
            "shardline_connections_active{shard=\"0\"} 0",
            "shardline_password_hash_offload_queue_depth 0",
        ] {
            assert!(text.contains(name), "missing {name} in:\n{text}");
        }
        #[cfg(target_os = "linux")]
        assert!(text.contains("process_resident_memory_bytes "));
    }
}
