//! The comparison's results: what the JSON file holds and the Markdown and SVG are made from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::plan::{Persistence, Plan};
use super::procstat::CpuDelta;
use super::redis_benchmark::BenchResult;
use crate::load::probe::ProbeReport;
use crate::load::storm::StormReport;
use crate::stats::Summary;

/// Everything one `shardline-bench` invocation measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    /// When the comparison finished, seconds since the Unix epoch.
    pub finished_unix_s: u64,
    /// The machine it ran on.
    pub machine: Machine,
    /// The plan (sizes, counts, pinning).
    pub plan: Plan,
    /// The command line that produced these results.
    pub command: String,
    /// Headline table, one row per `--hash-mode`.
    pub headline: Vec<HeadlineRow>,
    /// TLS reconnect rate (`-k 0`) of shardline with and without the credentials cache and of
    /// redis-server.
    pub reconnect: Vec<ReconnectRow>,
    /// RPC table: persistent pipelined GET/SET, TLS on and off.
    pub rpc: Vec<RpcRow>,
    /// Persistent GETs with and without a `/metrics` scrape every 100 ms.
    #[serde(default)]
    pub scrape: Vec<ScrapeRow>,
    /// SET pipelined and unpipelined with the append-only log off, everysec and always,
    /// shardline and redis-server.
    #[serde(default)]
    pub durability: Vec<DurabilityRow>,
    /// Start-up replay time of a log of `plan.restart_keys` keys.
    #[serde(default)]
    pub restart: Vec<RestartRow>,
    /// Sorted sets (ZADD, ZRANGE) and Pub/Sub fan-out, shardline and redis-server (issue 14).
    #[serde(default)]
    pub types: Vec<TypesRow>,
    /// Each goal of issue 5 with its measured value.
    pub goals: Vec<Goal>,
    /// Parts that could not run and why.
    pub notes: Vec<String>,
}

/// The machine.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Machine {
    /// Online CPUs.
    pub cpus: usize,
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Kernel release.
    pub kernel: String,
    /// `redis-server --version`, if present.
    pub redis_version: Option<String>,
}

/// Per-shard deltas of shardline's metrics over one measured storm.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ShardDelta {
    /// `shardline_reactor_stalls_count` delta.
    pub stalls: f64,
    /// `shardline_reactor_stalls_preempted_total` delta: stalls during which the shard thread
    /// waited for its CPU more than half of the time (0 in results made before it existed).
    #[serde(default)]
    pub stalls_preempted: f64,
    /// `shardline_scheduler_time_spent_on_task_quota_violations_seconds_total` delta (all
    /// groups), milliseconds.
    pub quota_violation_ms: f64,
    /// Quota-violation milliseconds by task queue (group).
    pub quota_violation_ms_by_group: BTreeMap<String, f64>,
    /// `shardline_connections_accepted_total` delta.
    pub accepted: f64,
    /// `shardline_tls_handshakes_completed_total` delta.
    pub tls_handshakes: f64,
    /// `shardline_logins_total` delta by `result`.
    pub logins: BTreeMap<String, f64>,
}

/// One headline run (one fresh server).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HeadlineRun {
    /// The redis-benchmark `-k 0` storm.
    pub storm: BenchResult,
    /// Storm connections per second divided by the shards.
    pub conn_per_s_per_shard: f64,
    /// Metric deltas over the storm, by shard.
    pub shards: BTreeMap<String, ShardDelta>,
    /// p50 of `shardline_password_hash_duration_seconds` over the storm, ms.
    pub hash_p50_ms: Option<f64>,
    /// p99 of `shardline_password_hash_duration_seconds` over the storm, ms.
    pub hash_p99_ms: Option<f64>,
    /// Server CPU over the storm.
    pub server_cpu: CpuDelta,
    /// Cores that other processes used on the server's CPUs meanwhile (disturbance).
    pub others_on_server_cpus: Option<f64>,
    /// TCP segments retransmitted on the machine meanwhile.
    pub tcp_retransmits: Option<u64>,
    /// The GET probe that ran during the storm.
    pub probe: ProbeReport,
    /// The `shardline-load` cross-check storm (after the redis-benchmark storm).
    pub own_storm: StormReport,
    /// Mean size of the batches the verifications of the storm were hashed in: delta of
    /// `shardline_password_hash_batch_size_sum` ÷ delta of its `_count` (all shards and
    /// modes); `None` without verifications or from a server without the histogram.
    #[serde(default)]
    pub batch_size_mean: Option<f64>,
}

impl HeadlineRow {
    /// The row's label: the hash mode, with `, batch off` when batching was off.
    pub fn label(&self) -> String {
        match self.hash_batch.as_deref() {
            None | Some("auto") => self.mode.clone(),
            Some(other) => format!("{}, batch {other}", self.mode),
        }
    }

    /// Whether the row ran with batching off.
    pub fn batch_off(&self) -> bool {
        self.hash_batch.as_deref() == Some("off")
    }
}

/// One row of the headline table: medians over runs, with min–max.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HeadlineRow {
    /// `--hash-mode`.
    pub mode: String,
    /// `--hash-batch` (`auto`, `off`); `None` in results made before issue 15 (the server
    /// then had no batching).
    #[serde(default)]
    pub hash_batch: Option<String>,
    /// Mean batch size of the storm's verifications (see [`HeadlineRun::batch_size_mean`]).
    #[serde(default)]
    pub batch_size_mean: Option<Summary>,
    /// New connections per second per shard, each with TLS handshake + AUTH (redis-benchmark).
    pub conn_per_s_per_shard: Summary,
    /// Reactor stalls per shard over the storm.
    pub stalls_per_shard: Summary,
    /// Of those, stalls preempted by the machine per shard (`None` in results made before
    /// the server counted them).
    #[serde(default)]
    pub stalls_preempted_per_shard: Option<Summary>,
    /// Quota-violation milliseconds per shard over the storm.
    pub quota_violation_ms_per_shard: Summary,
    /// Client-side login p99 (connect → AUTH reply) from `shardline-load`, ms.
    pub login_p99_ms: Summary,
    /// Server-side p99 of one password verification (start → result), ms.
    pub hash_p99_ms: Option<Summary>,
    /// The same storm by `shardline-load` (cross-check), connections per second per shard.
    pub own_conn_per_s_per_shard: Summary,
    /// GET probe p50 during the storm, ms.
    pub probe_p50_ms: Summary,
    /// GET probe p99 during the storm, ms.
    pub probe_p99_ms: Summary,
    /// GET probe maximum during the storm, ms.
    pub probe_max_ms: Summary,
    /// Server CPU per wall second during the storm (1.0 = one core).
    pub server_cpu_util: Summary,
    /// Server CPU (user + system) per new connection during the storm, ms.
    pub server_cpu_ms_per_conn: Summary,
    /// Cores other processes used on the server's CPUs during the storm.
    pub others_on_server_cpus: Summary,
    /// Every run.
    pub runs: Vec<HeadlineRun>,
}

/// One reconnect-rate run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ReconnectRun {
    /// The redis-benchmark `-k 0` result.
    pub bench: BenchResult,
    /// Server CPU over it.
    pub server_cpu: CpuDelta,
    /// Cores that other processes used on the server's CPUs meanwhile (disturbance).
    pub others_on_server_cpus: Option<f64>,
    /// TCP segments retransmitted on the machine meanwhile.
    pub tcp_retransmits: Option<u64>,
}

/// One row of the reconnect comparison.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReconnectRow {
    /// Which server and settings.
    pub server: String,
    /// CPU cores the server had (shards, or 1 for redis-server).
    pub cores: usize,
    /// Reconnects (TLS handshake + AUTH + GET) per second per core.
    pub conn_per_s_per_core: Summary,
    /// Reconnects per second of server CPU time (robust when the client is the bottleneck).
    pub conn_per_server_cpu_s: Summary,
    /// Server CPU per wall second.
    pub server_cpu_util: Summary,
    /// Server user CPU per connection, µs.
    pub user_us_per_conn: Summary,
    /// Server system CPU per connection, µs.
    pub sys_us_per_conn: Summary,
    /// Server context switches per connection.
    pub ctxsw_per_conn: Summary,
    /// TCP segments retransmitted on the machine per run (loopback drops).
    pub tcp_retransmits: Summary,
    /// redis-benchmark CPU per wall second.
    pub client_cpu_util: Summary,
    /// Median conn/s per core relative to redis-server's (wall-clock rate; both can be capped
    /// by the client when it saturates its CPU).
    pub ratio_to_redis: Option<f64>,
    /// Median connections per server CPU-second relative to redis-server's: the rate each
    /// server would reach on one fully busy core.
    pub cpu_ratio_to_redis: Option<f64>,
    /// Every run.
    pub runs: Vec<ReconnectRun>,
}

/// One RPC run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RpcRun {
    /// The redis-benchmark result.
    pub bench: BenchResult,
    /// Server CPU and context switches over it.
    pub server_cpu: CpuDelta,
    /// Cores that other processes used on the server's CPUs meanwhile (disturbance).
    pub others_on_server_cpus: Option<f64>,
    /// TCP segments retransmitted on the machine meanwhile.
    pub tcp_retransmits: Option<u64>,
}

/// One run of a types-table workload.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TypesRun {
    /// The redis-benchmark result (`test` is the row's workload label).
    pub bench: BenchResult,
    /// Server CPU and context switches over it (for the fan-out, until the subscribers had
    /// every message).
    pub server_cpu: CpuDelta,
    /// Cores that other processes used on the server's CPUs meanwhile (disturbance).
    pub others_on_server_cpus: Option<f64>,
    /// Subscribers of the fan-out; `None` for the other workloads.
    pub subscribers: Option<u32>,
    /// Messages the subscribers received during the measured run (all subscribers).
    pub delivered: Option<u64>,
    /// PUBLISH requests × subscribers.
    pub expected_deliveries: Option<u64>,
    /// Seconds from the start of the publishers to the last message received.
    pub delivery_s: Option<f64>,
}

/// One row of the types table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TypesRow {
    /// Which server.
    pub server: String,
    /// `ZADD`, `ZRANGE 0 9 WITHSCORES` or `PUBLISH fan-out`.
    pub workload: String,
    /// Requests (PUBLISH calls for the fan-out) per second, redis-benchmark's.
    pub req_per_s: Summary,
    /// Messages delivered to subscribers per second (fan-out only).
    pub deliveries_per_s: Option<Summary>,
    /// Server user + system CPU per request, or per delivered message for the fan-out, µs.
    pub cpu_us_per_op: Summary,
    /// redis-benchmark CPU per wall second.
    pub client_cpu_util: Summary,
    /// shardline's median req/s ÷ redis-server's (shardline rows with a redis-server row).
    pub ratio_to_redis: Option<f64>,
    /// Every run.
    pub runs: Vec<TypesRun>,
}

/// One row of the RPC table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RpcRow {
    /// Which server.
    pub server: String,
    /// TLS on or off.
    pub tls: bool,
    /// `GET` or `SET`.
    pub command: String,
    /// Requests per second.
    pub req_per_s: Summary,
    /// Server user CPU per request, µs.
    pub user_us_per_req: Summary,
    /// Server system CPU per request, µs.
    pub sys_us_per_req: Summary,
    /// Server context switches (voluntary + involuntary, all threads) per request.
    pub ctxsw_per_req: Summary,
    /// Server CPU per wall second.
    pub server_cpu_util: Summary,
    /// redis-benchmark CPU per wall second.
    pub client_cpu_util: Summary,
    /// Every run.
    pub runs: Vec<RpcRun>,
}

/// One run of the scrape-under-load comparison.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ScrapeRun {
    /// Interval of the scraper, ms; `None` = no scraping during this run.
    pub scrape_interval_ms: Option<u64>,
    /// GET requests per second.
    pub req_per_s: f64,
    /// `shardline_reactor_stalls_count` delta (all shards).
    pub stalls: f64,
    /// Quota-violation time delta (all shards and groups), ms.
    pub quota_violation_ms: f64,
    /// Successful scrapes during the run.
    pub scrapes: u64,
    /// Scrapes that failed (timeout, error status).
    pub failed_scrapes: u64,
}

/// Scrape-under-load row: the persistent GET workload without or with scraping.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScrapeRow {
    /// Interval of the scraper, ms; `None` = no scraping.
    pub scrape_interval_ms: Option<u64>,
    /// GET requests per second.
    pub req_per_s: Summary,
    /// Reactor stalls during the run.
    pub stalls: Summary,
    /// Quota-violation time during the run, ms.
    pub quota_violation_ms: Summary,
    /// Scrapes during the run.
    pub scrapes: Summary,
    /// Every run.
    pub runs: Vec<ScrapeRun>,
}

/// One durability run: one fresh server with a fresh data directory, one SET workload.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DurabilityRun {
    /// The redis-benchmark result.
    pub bench: BenchResult,
    /// Server CPU over it.
    pub server_cpu: CpuDelta,
    /// Cores that other processes used on the server's CPUs meanwhile (disturbance).
    pub others_on_server_cpus: Option<f64>,
    /// shardline: `shardline_reactor_stalls_count` delta (all shards); `None` for redis-server.
    pub stalls: Option<f64>,
    /// shardline: quota-violation time delta (all shards and groups), ms.
    pub quota_violation_ms: Option<f64>,
    /// shardline: `shardline_aof_records_total` delta (records appended to the log).
    pub log_records: Option<f64>,
    /// shardline: `shardline_aof_fsync_duration_seconds_count` delta (fdatasyncs).
    pub fsyncs: Option<f64>,
    /// Wall time between the two `/metrics` scrapes, seconds (the run plus the wait for the
    /// once-a-second `aof_*` update).
    pub metrics_window_s: Option<f64>,
}

/// One row of the durability table: one server, persistence setting and pipeline depth.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DurabilityRow {
    /// Which server.
    pub server: String,
    /// The append-only log setting (the same for both servers).
    pub persistence: Persistence,
    /// redis-benchmark `-P`.
    pub pipeline: u32,
    /// SETs per second.
    pub req_per_s: Summary,
    /// Median requests/s relative to redis-server's row with the same settings.
    pub ratio_to_redis: Option<f64>,
    /// Server CPU (user + system) per request, µs.
    pub cpu_us_per_req: Summary,
    /// Server user CPU per request, µs.
    pub user_us_per_req: Summary,
    /// Server system CPU per request, µs.
    pub sys_us_per_req: Summary,
    /// Server CPU per wall second.
    pub server_cpu_util: Summary,
    /// redis-benchmark CPU per wall second.
    pub client_cpu_util: Summary,
    /// shardline: reactor stalls per run.
    pub stalls: Option<Summary>,
    /// shardline: quota-violation ms per run.
    pub quota_violation_ms: Option<Summary>,
    /// shardline: log records per fdatasync (the group size under `always`).
    pub records_per_fsync: Option<Summary>,
    /// Every run.
    pub runs: Vec<DurabilityRun>,
}

/// One restart: the server started on the same log again.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RestartRun {
    /// Load time the server logged (shardline: the slowest shard's "replayed … in T";
    /// redis-server: "DB loaded from append only file: T seconds"), seconds.
    pub load_s: f64,
    /// From spawning the process to the first DBSIZE answered with a count, seconds.
    pub ready_s: f64,
    /// DBSIZE after the restart.
    pub keys: u64,
}

/// One row of the restart table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RestartRow {
    /// Which server.
    pub server: String,
    /// Distinct keys written (one SET each, `appendfsync everysec`).
    pub keys_written: u64,
    /// Bytes of the data directory after the writes (the log files).
    pub log_bytes: u64,
    /// Load time the server logged, seconds.
    pub load_s: Summary,
    /// Spawn → first DBSIZE answered, seconds.
    pub ready_s: Summary,
    /// Every restart.
    pub runs: Vec<RestartRun>,
}

/// One goal of the issue.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Goal {
    /// What is compared.
    pub name: String,
    /// The target, e.g. `≥ 0.97`.
    pub target: String,
    /// The measured value (same unit as the target), if it could be measured.
    pub measured: Option<f64>,
    /// Whether the target is met.
    pub met: Option<bool>,
}
