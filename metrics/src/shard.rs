//! Per-shard metric handles ([`ShardMetrics`]).

use std::cell::Cell;
use std::fmt;
use std::time::{Duration, Instant};

use prometheus::{Counter, Gauge, Histogram, IntCounter, IntGauge};

use crate::label_cache::{LabelCache, LabelCase};
use crate::registry::Families;

/// Running totals of a shard's append-only log writer, for [`ShardMetrics::record_aof`].
#[derive(Debug, Default, Clone, Copy)]
pub struct AofTotals {
    /// Records appended since start.
    pub records: u64,
    /// Bytes written since start.
    pub bytes_written: u64,
    /// Writes (each of every record gathered since the last one) since start.
    pub writes: u64,
    /// Records covered by fdatasyncs since start.
    pub records_synced: u64,
    /// Times the shard yielded its CPU to its durable log write, since start.
    pub cpu_yields: u64,
    /// Failed writes and fdatasyncs since start.
    pub write_errors: u64,
}

/// The metric handles of one shard, with every `{shard}` child resolved up front.
///
/// Methods take `&self`, touch only this shard's children (uncontended atomics), and never
/// allocate after the first use of a label value. Labelled methods take `&'static str`
/// values, which keeps label cardinality bounded by the server's code, never by client
/// input; [`crate::labels`] lists the recommended values. The handle is `Send` but not
/// `Sync` (its label caches are shard-local): build it with [`crate::Metrics::shard`] once
/// per shard and share it inside the shard, e.g. in an `Rc`.
///
/// Durations are taken as [`Duration`] and exported in seconds; byte counts in bytes.
///
/// Creating the handles also exports this shard's `reactor_stalls` and `stall_detector_*`
/// series at zero; the stall monitor ([`crate::install_shard_monitor`]) updates them.
pub struct ShardMetrics {
    shard: usize,
    pub(crate) last_executor_stats: Cell<Instant>,
    offload_queue_depth: IntGauge,
    pub(crate) reactor_busy: Counter,
    pub(crate) reactor_task_runtime: Counter,
    pub(crate) reactor_tasks_executed: IntCounter,
    pub(crate) reactor_scheduler_runs: IntCounter,
    pub(crate) reactor_utilization: Gauge,
    pub(crate) task_queue_runtime: LabelCache<Counter>,
    pub(crate) task_queue_selected: LabelCache<IntCounter>,
    pub(crate) task_queue_shares: LabelCache<IntGauge>,
    /// Only to export each task queue's series at zero ([`ShardMetrics::export_task_queues`]);
    /// the stall monitor adds to the same series.
    quota_violations: LabelCache<Counter>,
    connections_accepted: IntCounter,
    connections_active: IntGauge,
    keyspace_keys: IntGauge,
    keyspace_used_bytes: IntGauge,
    connections_closed: LabelCache<IntCounter>,
    connections_shed: IntCounter,
    evicted_keys: IntCounter,
    connections_rejected: LabelCache<IntCounter>,
    tls_started: IntCounter,
    tls_completed_full: IntCounter,
    tls_completed_resumed: IntCounter,
    tls_failed: LabelCache<IntCounter>,
    tls_duration: Histogram,
    logins: LabelCache<IntCounter>,
    login_wait: Histogram,
    password_hash_duration: LabelCache<Histogram>,
    password_hash_batch_size: LabelCache<Histogram>,
    credentials_cache_hits: IntCounter,
    credentials_cache_misses: IntCounter,
    login_admission_waited: IntCounter,
    commands: LabelCache<IntCounter>,
    command_errors: LabelCache<IntCounter>,
    received_bytes: IntCounter,
    sent_bytes: IntCounter,
    client_output_buffer: IntGauge,
    aof_fsync_duration: Histogram,
    aof_written_bytes: IntCounter,
    aof_writes: IntCounter,
    aof_records: IntCounter,
    aof_fsynced_records: IntCounter,
    aof_cpu_yields: IntCounter,
    aof_size: IntGauge,
    aof_replayed_records: IntGauge,
    aof_rewrite_duration: Histogram,
    aof_rewrite_failures: IntCounter,
    aof_write_errors: IntCounter,
    cross_shard_transactions: IntCounter,
    cross_shard_batch: Histogram,
    cross_shard_reply_batch: Histogram,
}

impl ShardMetrics {
    pub(crate) fn new(f: &Families, shard: usize) -> ShardMetrics {
        let label = shard.to_string();
        let l = label.as_str();
        let one = [l];
        let as_given = LabelCase::AsGiven;
        // The stall monitor updates these; resolve them here too so that every shard
        // exports them (at zero) even before `install_shard_monitor` runs.
        let _ = f.reactor_stalls.with_label_values(&one);
        let _ = f.stall_reported.with_label_values(&one);
        let _ = f.stall_suppressed.with_label_values(&one);
        let _ = f.stalls_preempted.with_label_values(&one);
        let _ = f.preempted_seconds.with_label_values(&one);
        // Labelled counters with a known set of values are exported at zero from the start,
        // so an alert on their rate sees 0 rather than no series.
        let with_all = |family, values: &[&'static str]| {
            let cache = LabelCache::new(family, l, as_given);
            for value in values {
                cache.with(value, |_| ());
            }
            cache
        };
        let connections_rejected =
            with_all(&f.connections_rejected, &crate::labels::reject_reason::ALL);
        let connections_closed = with_all(&f.connections_closed, &crate::labels::close_reason::ALL);
        let tls_failed = with_all(&f.tls_failed, &crate::labels::tls_failure::ALL);
        let logins = with_all(&f.logins, &crate::labels::login_result::ALL);
        let command_errors = with_all(&f.command_errors, &crate::labels::error_kind::ALL);
        let commands = LabelCache::new(&f.commands, l, LabelCase::Lowercase);
        for name in crate::labels::command::AUTH_PATH {
            commands.with(name, |_| ());
        }
        ShardMetrics {
            shard,
            last_executor_stats: Cell::new(Instant::now()),
            offload_queue_depth: f.offload_queue_depth.clone(),
            reactor_busy: f.reactor_busy.with_label_values(&one),
            reactor_task_runtime: f.reactor_task_runtime.with_label_values(&one),
            reactor_tasks_executed: f.reactor_tasks_executed.with_label_values(&one),
            reactor_scheduler_runs: f.reactor_scheduler_runs.with_label_values(&one),
            reactor_utilization: f.reactor_utilization.with_label_values(&one),
            task_queue_runtime: LabelCache::new(&f.task_queue_runtime, l, as_given),
            task_queue_selected: LabelCache::new(&f.task_queue_selected, l, as_given),
            task_queue_shares: LabelCache::new(&f.task_queue_shares, l, as_given),
            quota_violations: LabelCache::new(&f.quota_violations, l, as_given),
            connections_accepted: f.connections_accepted.with_label_values(&one),
            connections_active: f.connections_active.with_label_values(&one),
            keyspace_keys: f.keyspace_keys.with_label_values(&one),
            keyspace_used_bytes: f.keyspace_used_bytes.with_label_values(&one),
            connections_closed,
            connections_shed: f.connections_shed.with_label_values(&one),
            evicted_keys: f.evicted_keys.with_label_values(&one),
            connections_rejected,
            tls_started: f.tls_started.with_label_values(&one),
            tls_completed_full: f.tls_completed.with_label_values(&[l, "false"]),
            tls_completed_resumed: f.tls_completed.with_label_values(&[l, "true"]),
            tls_failed,
            tls_duration: f.tls_duration.with_label_values(&one),
            logins,
            login_wait: f.login_wait.with_label_values(&one),
            password_hash_duration: LabelCache::new(&f.password_hash_duration, l, as_given),
            password_hash_batch_size: LabelCache::new(&f.password_hash_batch_size, l, as_given),
            credentials_cache_hits: f.credentials_cache_hits.with_label_values(&one),
            credentials_cache_misses: f.credentials_cache_misses.with_label_values(&one),
            login_admission_waited: f.login_admission_waited.with_label_values(&one),
            commands,
            command_errors,
            received_bytes: f.received_bytes.with_label_values(&one),
            sent_bytes: f.sent_bytes.with_label_values(&one),
            client_output_buffer: f.client_output_buffer.with_label_values(&one),
            aof_fsync_duration: f.aof_fsync_duration.with_label_values(&one),
            aof_written_bytes: f.aof_written_bytes.with_label_values(&one),
            aof_writes: f.aof_writes.with_label_values(&one),
            aof_records: f.aof_records.with_label_values(&one),
            aof_fsynced_records: f.aof_fsynced_records.with_label_values(&one),
            aof_cpu_yields: f.aof_cpu_yields.with_label_values(&one),
            aof_size: f.aof_size.with_label_values(&one),
            aof_replayed_records: f.aof_replayed_records.with_label_values(&one),
            aof_rewrite_duration: f.aof_rewrite_duration.with_label_values(&one),
            aof_rewrite_failures: f.aof_rewrite_failures.with_label_values(&one),
            aof_write_errors: f.aof_write_errors.with_label_values(&one),
            cross_shard_transactions: f.cross_shard_transactions.with_label_values(&one),
            cross_shard_batch: f.cross_shard_batch.with_label_values(&one),
            cross_shard_reply_batch: f.cross_shard_reply_batch.with_label_values(&one),
        }
    }

    /// Exports, at zero, the series of each task queue in `groups` (its `group` label) that
    /// otherwise appear only at its first event: `task_queue_runtime_seconds_total`,
    /// `task_queue_selected_total` and
    /// `scheduler_time_spent_on_task_quota_violations_seconds_total`. Call it once the
    /// shard's queues exist, so that dashboards and `rate()` alerts see them from the start.
    pub fn export_task_queues(&self, groups: &[&'static str]) {
        for group in groups {
            self.task_queue_runtime.with(group, |_| ());
            self.task_queue_selected.with(group, |_| ());
            self.quota_violations.with(group, |_| ());
        }
    }

    /// Exports, at zero, the `password_hash_duration_seconds{mode}` and
    /// `password_hash_batch_size{mode}` histograms of the server's hash mode (see
    /// [`crate::labels::hash_mode`]), which otherwise appear at the first hash.
    pub fn export_password_hash_mode(&self, mode: &'static str) {
        self.password_hash_duration.with(mode, |_| ());
        self.password_hash_batch_size.with(mode, |_| ());
    }

    /// The shard id these handles are labelled with.
    pub fn shard(&self) -> usize {
        self.shard
    }

    // ---- connections -------------------------------------------------------------------

    /// A client connection was accepted: `connections_accepted_total` +1 and
    /// Sets `keyspace_keys` and `keyspace_used_bytes` (estimated bytes) of this shard.
    pub fn set_keyspace(&self, keys: u64, used_bytes: u64) {
        self.keyspace_keys
            .set(i64::try_from(keys).unwrap_or(i64::MAX));
        self.keyspace_used_bytes
            .set(i64::try_from(used_bytes).unwrap_or(i64::MAX));
    }

    /// `connections_active` +1. Pair with exactly one [`ShardMetrics::connection_closed`].
    pub fn connection_accepted(&self) {
        self.connections_accepted.inc();
        self.connections_active.inc();
    }

    /// A connection counted by [`ShardMetrics::connection_accepted`] closed:
    /// `connections_closed_total{reason}` +1 and `connections_active` −1.
    /// `reason` e.g. [`crate::labels::close_reason::CLIENT_CLOSED`].
    pub fn connection_closed(&self, reason: &'static str) {
        self.connections_closed.with(reason, IntCounter::inc);
        self.connections_active.dec();
    }

    /// A connection was shed after waiting too long for login admission:
    /// `connections_shed_total` +1 (close it with [`ShardMetrics::connection_closed`] too).
    pub fn connection_shed(&self) {
        self.connections_shed.inc();
    }

    /// A connection was closed right after accept(2), before any handshake:
    /// `connections_rejected_total{reason}` +1 (`reason` from
    /// [`crate::labels::reject_reason`]). Not paired with
    /// [`ShardMetrics::connection_accepted`]: a rejected connection is never active.
    pub fn connection_rejected(&self, reason: &'static str) {
        self.connections_rejected.with(reason, IntCounter::inc);
    }

    // ---- TLS ---------------------------------------------------------------------------

    /// A TLS handshake started: `tls_handshakes_started_total` +1.
    pub fn tls_handshake_started(&self) {
        self.tls_started.inc();
    }

    /// A TLS handshake succeeded after `took` (from start to established), resuming a
    /// session (`resumed`) or not: `tls_handshakes_completed_total{resumed}` +1 and one
    /// `tls_handshake_duration_seconds` observation.
    pub fn tls_handshake_completed(&self, took: Duration, resumed: bool) {
        if resumed {
            self.tls_completed_resumed.inc();
        } else {
            self.tls_completed_full.inc();
        }
        self.tls_duration.observe(took.as_secs_f64());
    }

    /// A TLS handshake failed: `tls_handshakes_failed_total{reason}` +1 (`reason` e.g.
    /// [`crate::labels::tls_failure::TIMEOUT`]).
    pub fn tls_handshake_failed(&self, reason: &'static str) {
        self.tls_failed.with(reason, IntCounter::inc);
    }

    // ---- logins ------------------------------------------------------------------------

    /// A login attempt finished: `logins_total{result}` +1 (`result` from
    /// [`crate::labels::login_result`]).
    pub fn login(&self, result: &'static str) {
        self.logins.with(result, IntCounter::inc);
    }

    /// A connection waited `waited` for login admission (observe also zero waits if every
    /// admission should count): one `login_wait_seconds` observation.
    pub fn login_wait(&self, waited: Duration) {
        self.login_wait.observe(waited.as_secs_f64());
    }

    /// A connection found the concurrent-login limit reached and had to wait:
    /// `login_admission_waited_total` +1.
    pub fn login_admission_waited(&self) {
        self.login_admission_waited.inc();
    }

    /// A password verification in hash mode `mode` (`inline`, `yield`, `offload`; see
    /// [`crate::labels::hash_mode`]) took `took` from start to result, including any wait
    /// for the offload pool: one `password_hash_duration_seconds{mode}` observation.
    pub fn password_hash(&self, mode: &'static str, took: Duration) {
        self.password_hash_duration
            .with(mode, |h| h.observe(took.as_secs_f64()));
    }

    /// A password verification in hash mode `mode` ran in a batch of `size` verifications
    /// (1 = alone): one `password_hash_batch_size{mode}` observation.
    pub fn password_hash_batch(&self, mode: &'static str, size: usize) {
        self.password_hash_batch_size
            .with(mode, |h| h.observe(size as f64));
    }

    /// Sets the process-wide `password_hash_offload_queue_depth` gauge (jobs queued for or
    /// running on the offload pool). Any shard may set it; it has no shard label. See also
    /// [`crate::Metrics::password_hash_offload_queue_depth`].
    pub fn set_password_hash_offload_queue_depth(&self, depth: usize) {
        self.offload_queue_depth
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    /// The verified-credentials cache answered a login: `credentials_cache_hits_total` +1.
    pub fn credentials_cache_hit(&self) {
        self.credentials_cache_hits.inc();
    }

    /// The verified-credentials cache had no entry: `credentials_cache_misses_total` +1.
    pub fn credentials_cache_miss(&self) {
        self.credentials_cache_misses.inc();
    }

    // ---- commands and traffic ----------------------------------------------------------

    /// A command was executed: `commands_total{command}` +1, with the name exported in
    /// lowercase (`"GET"` → `command="get"`).
    ///
    /// Cost: a scan of this shard's small cache comparing `&'static str` addresses (then
    /// contents), and one atomic add; the lowercase label is built only on first use. Pass
    /// names from the server's command table, and one fixed name (e.g. `"unknown"`) for
    /// commands it does not know, never client bytes.
    #[inline]
    pub fn command(&self, name: &'static str) {
        self.commands.with(name, IntCounter::inc);
    }

    /// This shard coordinated a transaction over several shards' gates:
    /// `cross_shard_transactions_total` +1.
    pub fn cross_shard_transaction(&self) {
        self.cross_shard_transactions.inc();
    }

    /// A message of `requests` requests arrived from another shard:
    /// `cross_shard_batch_requests` observes the count.
    pub fn cross_shard_batch(&self, requests: usize) {
        self.cross_shard_batch.observe(requests as f64);
    }

    /// A message of `replies` replies to requests this shard forwarded arrived from their
    /// owner shard: `cross_shard_reply_batch_replies` observes the count.
    pub fn cross_shard_reply_batch(&self, replies: usize) {
        self.cross_shard_reply_batch.observe(replies as f64);
    }

    /// An error reply was sent: `command_errors_total{kind}` +1 (`kind` from
    /// [`crate::labels::error_kind`], e.g. `"unknown_command"`).
    pub fn command_error(&self, kind: &'static str) {
        self.command_errors.with(kind, IntCounter::inc);
    }

    /// `bytes` were read from a client (plaintext, after TLS):
    /// `network_received_bytes_total` +bytes.
    pub fn bytes_received(&self, bytes: usize) {
        self.received_bytes.inc_by(bytes as u64);
    }

    /// `bytes` were written to a client (plaintext, before TLS):
    /// `network_sent_bytes_total` +bytes.
    pub fn bytes_sent(&self, bytes: usize) {
        self.sent_bytes.inc_by(bytes as u64);
    }

    /// A client's queue of encoded, unwritten replies grew (`delta` > 0) or shrank, in bytes:
    /// `client_output_buffer_bytes` +delta. Each connection reports its own changes and
    /// subtracts what it still holds when it closes, so the gauge is the shard's sum.
    pub fn client_output_buffer_changed(&self, delta: i64) {
        self.client_output_buffer.add(delta);
    }

    /// The append-only log's state, from the writer's running totals (records and bytes
    /// since start, writes, records covered by fdatasyncs, CPU yields to the durable write,
    /// failed writes and fdatasyncs) and the fdatasync durations (µs) measured since the last
    /// call: `aof_records_total`, `aof_written_bytes_total`, `aof_writes_total`,
    /// `aof_fsynced_records_total`,
    /// `aof_cpu_yields_total`, `aof_write_errors_total` are raised to the totals, `aof_size_bytes` set to `size` (bytes), each duration observed in
    /// `aof_fsync_duration_seconds`.
    pub fn record_aof(&self, totals: AofTotals, size: u64, fsync_durations_us: &[u64]) {
        for (counter, total) in [
            (&self.aof_records, totals.records),
            (&self.aof_written_bytes, totals.bytes_written),
            (&self.aof_writes, totals.writes),
            (&self.aof_fsynced_records, totals.records_synced),
            (&self.aof_cpu_yields, totals.cpu_yields),
            (&self.aof_write_errors, totals.write_errors),
        ] {
            counter.inc_by(total.saturating_sub(counter.get()));
        }
        self.aof_size.set(size as i64);
        for us in fsync_durations_us {
            self.aof_fsync_duration.observe(*us as f64 / 1e6);
        }
    }

    /// A log rewrite ended after `took`: observed in `aof_rewrite_duration_seconds` when it
    /// succeeded, else `aof_rewrite_failures_total` +1.
    pub fn aof_rewrite_done(&self, took: Duration, ok: bool) {
        if ok {
            self.aof_rewrite_duration.observe(took.as_secs_f64());
        } else {
            self.aof_rewrite_failures.inc();
        }
    }

    /// `evicted_keys_total` +1 (a key evicted for `--maxmemory`).
    pub fn key_evicted(&self) {
        self.evicted_keys.inc();
    }

    /// `aof_replayed_records` = `records` (commands replayed at start).
    pub fn aof_replayed(&self, records: u64) {
        self.aof_replayed_records.set(records as i64);
    }
}

impl fmt::Debug for ShardMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardMetrics")
            .field("shard", &self.shard)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{assert_close, sample};
    use crate::Metrics;

    fn assert_send<T: Send>() {}

    #[test]
    fn shard_metrics_is_send() {
        assert_send::<ShardMetrics>();
    }

    #[test]
    fn connection_lifecycle_counts_exactly() {
        let metrics = Metrics::new();
        let shard = metrics.shard(2);
        shard.connection_accepted();
        shard.connection_accepted();
        shard.connection_accepted();
        shard.connection_closed("client_quit");
        shard.connection_closed("client_quit");
        shard.connection_closed("timeout");
        shard.connection_accepted();
        shard.connection_shed();
        let s = |name: &str, labels: &[(&str, &str)]| sample(&metrics, name, labels);
        assert_eq!(
            s("shardline_connections_accepted_total", &[("shard", "2")]),
            Some(4.0)
        );
        assert_eq!(
            s("shardline_connections_active", &[("shard", "2")]),
            Some(1.0)
        );
        assert_eq!(
            s(
                "shardline_connections_closed_total",
                &[("shard", "2"), ("reason", "client_quit")]
            ),
            Some(2.0)
        );
        assert_eq!(
            s(
                "shardline_connections_closed_total",
                &[("shard", "2"), ("reason", "timeout")]
            ),
            Some(1.0)
        );
        assert_eq!(
            s("shardline_connections_shed_total", &[("shard", "2")]),
            Some(1.0)
        );
        // Every rejection reason is exported at zero from the start.
        for reason in crate::labels::reject_reason::ALL {
            let labels = [("shard", "2"), ("reason", reason)];
            assert_eq!(
                s("shardline_connections_rejected_total", &labels),
                Some(0.0)
            );
        }
        // So are the other counters with a known set of label values (a reason counted
        // above excepted).
        let known = [
            (
                "shardline_connections_closed_total",
                "reason",
                &crate::labels::close_reason::ALL[..],
            ),
            (
                "shardline_tls_handshakes_failed_total",
                "reason",
                &crate::labels::tls_failure::ALL[..],
            ),
            (
                "shardline_logins_total",
                "result",
                &crate::labels::login_result::ALL[..],
            ),
        ];
        for (name, key, values) in known {
            for value in values {
                let got = s(name, &[("shard", "2"), (key, value)]);
                assert!(got.is_some(), "{name}{{{key}={value}}} not exported");
            }
        }
        shard.connection_rejected(crate::labels::reject_reason::FD_LIMIT);
        shard.connection_rejected(crate::labels::reject_reason::FD_LIMIT);
        shard.connection_rejected(crate::labels::reject_reason::MAX_CLIENTS);
        let rejected = |reason| {
            s(
                "shardline_connections_rejected_total",
                &[("shard", "2"), ("reason", reason)],
            )
        };
        assert_eq!(rejected("fd_limit"), Some(2.0));
        assert_eq!(rejected("max_clients"), Some(1.0));
        assert_eq!(rejected("system_fd_limit"), Some(0.0));
        // A rejection never touches the active gauge.
        assert_eq!(
            s("shardline_connections_active", &[("shard", "2")]),
            Some(1.0)
        );
        // Another shard's children are untouched.
        let _other = metrics.shard(3);
        assert_eq!(
            s("shardline_connections_accepted_total", &[("shard", "3")]),
            Some(0.0)
        );
    }

    #[test]
    fn series_known_at_start_are_exported_at_zero() {
        let metrics = Metrics::new();
        let shard = metrics.shard(1);
        shard.export_task_queues(&["main", "auth"]);
        shard.export_password_hash_mode(crate::labels::hash_mode::YIELD);
        let s = |name: &str, labels: &[(&str, &str)]| sample(&metrics, name, labels);
        for group in ["main", "auth"] {
            let labels = [("shard", "1"), ("group", group)];
            for name in [
                "shardline_task_queue_runtime_seconds_total",
                "shardline_task_queue_selected_total",
                "shardline_scheduler_time_spent_on_task_quota_violations_seconds_total",
            ] {
                assert_eq!(s(name, &labels), Some(0.0), "{name} {group}");
            }
        }
        for command in crate::labels::command::AUTH_PATH {
            let labels = [("shard", "1"), ("command", command)];
            assert_eq!(s("shardline_commands_total", &labels), Some(0.0));
        }
        for kind in crate::labels::error_kind::ALL {
            let labels = [("shard", "1"), ("kind", kind)];
            assert_eq!(s("shardline_command_errors_total", &labels), Some(0.0));
        }
        let text = String::from_utf8(metrics.encode_text().expect("encode")).expect("utf8");
        assert!(text.contains(
            "shardline_password_hash_duration_seconds_count{mode=\"yield\",shard=\"1\"} 0"
        ));
    }

    #[test]
    fn command_names_are_lowercased_and_cached_once() {
        let metrics = Metrics::new();
        let shard = metrics.shard(0);
        for _ in 0..3 {
            shard.command("GET");
        }
        shard.command("SET");
        // Same name from a different `&'static str` (e.g. another literal) hits by content.
        let owned: &'static str = Box::leak(String::from("GET").into_boxed_str());
        shard.command(owned);
        // get, set, and the login path's auth and hello, exported at zero from the start.
        assert_eq!(shard.commands.len(), 4);
        let s = |cmd: &str| {
            sample(
                &metrics,
                "shardline_commands_total",
                &[("shard", "0"), ("command", cmd)],
            )
        };
        assert_eq!(s("get"), Some(4.0));
        assert_eq!(s("set"), Some(1.0));
        assert_eq!(s("GET"), None);
        shard.command_error("wrongtype");
        shard.command_error("wrongtype");
        assert_eq!(
            sample(
                &metrics,
                "shardline_command_errors_total",
                &[("shard", "0"), ("kind", "wrongtype")]
            ),
            Some(2.0)
        );
    }

    #[test]
    fn tls_login_and_traffic_values() {
        let metrics = Metrics::new();
        let shard = metrics.shard(1);
        shard.tls_handshake_started();
        shard.tls_handshake_started();
        shard.tls_handshake_completed(Duration::from_millis(3), false);
        shard.tls_handshake_completed(Duration::from_millis(1), true);
        shard.tls_handshake_failed("timeout");
        shard.login("accepted");
        shard.login("accepted");
        shard.login("rejected");
        shard.login_admission_waited();
        shard.login_wait(Duration::from_millis(250));
        shard.password_hash("yield", Duration::from_micros(1500));
        shard.password_hash("yield", Duration::from_micros(500));
        shard.credentials_cache_hit();
        shard.credentials_cache_miss();
        shard.credentials_cache_miss();
        shard.bytes_received(100);
        shard.bytes_received(23);
        shard.bytes_sent(7);
        shard.set_password_hash_offload_queue_depth(4);
        let one = [("shard", "1")];
        let s = |name: &str, labels: &[(&str, &str)]| sample(&metrics, name, labels);
        assert_eq!(s("shardline_tls_handshakes_started_total", &one), Some(2.0));
        assert_eq!(
            s(
                "shardline_tls_handshakes_completed_total",
                &[("shard", "1"), ("resumed", "false")]
            ),
            Some(1.0)
        );
        assert_eq!(
            s(
                "shardline_tls_handshakes_completed_total",
                &[("shard", "1"), ("resumed", "true")]
            ),
            Some(1.0)
        );
        assert_eq!(
            s(
                "shardline_tls_handshakes_failed_total",
                &[("shard", "1"), ("reason", "timeout")]
            ),
            Some(1.0)
        );
        assert_eq!(
            s("shardline_tls_handshake_duration_seconds_count", &one),
            Some(2.0)
        );
        assert_close(
            s("shardline_tls_handshake_duration_seconds_sum", &one),
            0.004,
        );
        assert_eq!(
            s(
                "shardline_logins_total",
                &[("shard", "1"), ("result", "accepted")]
            ),
            Some(2.0)
        );
        assert_eq!(
            s(
                "shardline_logins_total",
                &[("shard", "1"), ("result", "rejected")]
            ),
            Some(1.0)
        );
        assert_eq!(s("shardline_login_admission_waited_total", &one), Some(1.0));
        assert_close(s("shardline_login_wait_seconds_sum", &one), 0.25);
        let yield_mode = [("shard", "1"), ("mode", "yield")];
        assert_eq!(
            s(
                "shardline_password_hash_duration_seconds_count",
                &yield_mode
            ),
            Some(2.0)
        );
        assert_close(
            s("shardline_password_hash_duration_seconds_sum", &yield_mode),
            0.002,
        );
        assert_eq!(s("shardline_credentials_cache_hits_total", &one), Some(1.0));
        assert_eq!(
            s("shardline_credentials_cache_misses_total", &one),
            Some(2.0)
        );
        assert_eq!(
            s("shardline_network_received_bytes_total", &one),
            Some(123.0)
        );
        assert_eq!(s("shardline_network_sent_bytes_total", &one), Some(7.0));
        assert_eq!(
            s("shardline_password_hash_offload_queue_depth", &[]),
            Some(4.0)
        );
    }
}
