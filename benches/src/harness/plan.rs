//! What a comparison runs: the full plan (≥ 3 runs, ~9 minutes) and the CI smoke plan
//! (1 run, seconds).

use std::fmt;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// shardline's `--hash-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum HashMode {
    /// Hash to the end in one poll.
    Inline,
    /// Hash on the shard, yielding when the task quota is used up.
    Yield,
    /// Hash on the offload thread(s).
    Offload,
}

impl HashMode {
    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            HashMode::Inline => "inline",
            HashMode::Yield => "yield",
            HashMode::Offload => "offload",
        }
    }
}

impl fmt::Display for HashMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// shardline's `--hash-batch`: batch queued password verifications on the widest SHA-512
/// kernel (`auto`, the server's default) or hash them one at a time (`off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum HashBatch {
    /// Up to the kernel's lanes (8 with AVX-512F) queued verifications hashed together.
    Auto,
    /// One verification at a time.
    Off,
}

impl HashBatch {
    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            HashBatch::Auto => "auto",
            HashBatch::Off => "off",
        }
    }
}

impl fmt::Display for HashBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn both_hash_batches() -> Vec<HashBatch> {
    vec![HashBatch::Auto, HashBatch::Off]
}

/// How a server keeps its writes: nothing, or an append-only log with Redis's `appendfsync`
/// policy (shardline `--appendonly/--appendfsync`, redis-server `appendonly/appendfsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Persistence {
    /// `appendonly no`: nothing survives a restart.
    Off,
    /// `appendonly yes`, `appendfsync everysec`: fdatasync once a second, replies do not wait.
    Everysec,
    /// `appendonly yes`, `appendfsync always`: a reply leaves after its write is fdatasync'ed.
    Always,
}

impl Persistence {
    /// Every setting, in table order.
    pub const ALL: [Persistence; 3] =
        [Persistence::Off, Persistence::Everysec, Persistence::Always];

    /// The `appendfsync` value, `None` for [`Persistence::Off`].
    pub fn appendfsync(self) -> Option<&'static str> {
        match self {
            Persistence::Off => None,
            Persistence::Everysec => Some("everysec"),
            Persistence::Always => Some("always"),
        }
    }

    /// The server arguments shared by shardline and redis-server (the same names in both):
    /// `--appendonly no`, or `--appendonly yes --appendfsync P --auto-aof-rewrite-percentage 0`.
    /// The automatic log rewrite is off so that a run measures the write path alone (both
    /// servers would otherwise start one when the log passes 64 MB, redis-server in a fork).
    pub fn server_args(self) -> Vec<&'static str> {
        match self.appendfsync() {
            None => vec!["--appendonly", "no"],
            Some(policy) => vec![
                "--appendonly",
                "yes",
                "--appendfsync",
                policy,
                "--auto-aof-rewrite-percentage",
                "0",
            ],
        }
    }
}

impl fmt::Display for Persistence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.appendfsync().unwrap_or("off"))
    }
}

/// The tables a comparison can run (`shardline-bench --tables`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Table {
    /// Login storm per hash mode.
    Headline,
    /// TLS reconnect rate, shardline vs redis-server.
    Reconnect,
    /// Persistent pipelined GET/SET, TLS on and off.
    Rpc,
    /// Scraping `/metrics` under load.
    Scrape,
    /// SET throughput and CPU per request with the append-only log off, everysec, always.
    Durability,
    /// Start-up replay time of a log of `restart_keys` keys.
    Restart,
    /// Sorted sets (ZADD, ZRANGE) and Pub/Sub fan-out (PUBLISH to subscribers), shardline and
    /// redis-server.
    Types,
}

impl Table {
    /// Every table, in the order they run.
    pub const ALL: [Table; 7] = [
        Table::Headline,
        Table::Reconnect,
        Table::Rpc,
        Table::Scrape,
        Table::Durability,
        Table::Restart,
        Table::Types,
    ];
}

fn all_tables() -> Vec<Table> {
    Table::ALL.to_vec()
}

fn default_durability_seconds() -> f64 {
    3.0
}

fn default_durability_calibration_requests() -> u64 {
    10_000
}

fn default_durability_metrics_wait_ms() -> u64 {
    1_100
}

fn default_restart_keys() -> u64 {
    1_000_000
}

/// Sizes and counts of one comparison.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// Repetitions of every measurement (medians are reported; ≥ 3 for the real table).
    pub runs: usize,
    /// shardline `--smp`.
    pub smp: usize,
    /// CPUs the servers are pinned to (`taskset -c`), `None` = not pinned.
    pub server_cpus: Option<String>,
    /// CPUs the clients are pinned to, `None` = not pinned.
    pub client_cpus: Option<String>,
    /// Hash modes of the headline table.
    pub modes: Vec<HashMode>,
    /// `--hash-batch` settings of the headline table: every mode runs with each (issue 15).
    #[serde(default = "both_hash_batches")]
    pub hash_batches: Vec<HashBatch>,
    /// redis-benchmark `-c` of the login storms.
    pub storm_clients: u32,
    /// Target length of one headline storm, seconds.
    pub storm_seconds: f64,
    /// Requests of the warm-up/calibration storm before each measured storm.
    pub storm_warmup_requests: u64,
    /// Bounds on the requests of a measured storm.
    pub storm_requests_min: u64,
    /// Bounds on the requests of a measured storm.
    pub storm_requests_max: u64,
    /// Length of the `shardline-load` cross-check storm, seconds.
    pub own_storm_seconds: f64,
    /// Persistent connections of the GET probe.
    pub probe_connections: u32,
    /// GETs per second of the probe (all connections).
    pub probe_rate: f64,
    /// Target length of one reconnect-rate run (peer comparison), seconds.
    pub reconnect_seconds: f64,
    /// `--credentials-cache-ttl-ms` of the cached shardline row.
    pub cache_ttl_ms: u64,
    /// redis-benchmark `-c` of the RPC table.
    pub rpc_clients: u32,
    /// redis-benchmark `-P` of the RPC table.
    pub rpc_pipeline: u32,
    /// Target length of one RPC run, seconds.
    pub rpc_seconds: f64,
    /// Requests of the RPC calibration run.
    pub rpc_calibration_requests: u64,
    /// Bounds on the requests of an RPC run.
    pub rpc_requests_min: u64,
    /// Bounds on the requests of an RPC run.
    pub rpc_requests_max: u64,
    /// `-r` key space of the RPC table.
    pub rpc_keyspace: u64,
    /// `-d` value size of the RPC table, bytes.
    pub rpc_value_bytes: u32,
    /// Interval of the scraper in the scrape-under-load comparison, ms.
    #[serde(default = "default_scrape_interval_ms")]
    pub scrape_interval_ms: u64,
    /// Target length of one durability run (SET with the log off, everysec, always), seconds.
    #[serde(default = "default_durability_seconds")]
    pub durability_seconds: f64,
    /// Requests of the calibration run before each unpipelined durability run (pipelined ones
    /// use `rpc_calibration_requests`).
    #[serde(default = "default_durability_calibration_requests")]
    pub durability_calibration_requests: u64,
    /// Wait after a durability run before the `/metrics` scrape, ms: shardline publishes its
    /// `aof_*` series once a second.
    #[serde(default = "default_durability_metrics_wait_ms")]
    pub durability_metrics_wait_ms: u64,
    /// Distinct keys in the log whose start-up replay the restart table times.
    #[serde(default = "default_restart_keys")]
    pub restart_keys: u64,
    /// Tables to run.
    #[serde(default = "all_tables")]
    pub tables: Vec<Table>,
    /// Also run Debian's redis-server as the peer.
    pub with_redis: bool,
}

fn default_scrape_interval_ms() -> u64 {
    100
}

impl Plan {
    /// Whether `table` is part of this comparison.
    pub fn runs_table(&self, table: Table) -> bool {
        self.tables.contains(&table)
    }

    /// The full comparison: 3 runs of everything, about 9 minutes on 2 cores.
    pub fn full() -> Plan {
        Plan {
            runs: 3,
            smp: 1,
            server_cpus: Some("0".into()),
            client_cpus: Some("1".into()),
            modes: vec![HashMode::Inline, HashMode::Yield, HashMode::Offload],
            hash_batches: both_hash_batches(),
            storm_clients: 16,
            storm_seconds: 6.0,
            storm_warmup_requests: 300,
            storm_requests_min: 200,
            storm_requests_max: 500_000,
            own_storm_seconds: 4.0,
            probe_connections: 2,
            probe_rate: 200.0,
            reconnect_seconds: 5.0,
            cache_ttl_ms: 60_000,
            rpc_clients: 50,
            rpc_pipeline: 16,
            rpc_seconds: 3.0,
            rpc_calibration_requests: 100_000,
            rpc_requests_min: 10_000,
            rpc_requests_max: 50_000_000,
            rpc_keyspace: 100_000,
            rpc_value_bytes: 16,
            scrape_interval_ms: default_scrape_interval_ms(),
            durability_seconds: default_durability_seconds(),
            durability_calibration_requests: default_durability_calibration_requests(),
            durability_metrics_wait_ms: default_durability_metrics_wait_ms(),
            restart_keys: default_restart_keys(),
            tables: all_tables(),
            with_redis: true,
        }
    }

    /// The CI smoke plan: one short run of everything (under 40 s against a debug build).
    pub fn smoke() -> Plan {
        Plan {
            runs: 1,
            // Few clients: against a debug build a login costs ~100 ms, and every connection
            // still queued when a storm ends must drain before the server stops.
            storm_clients: 4,
            storm_seconds: 1.0,
            storm_warmup_requests: 8,
            storm_requests_min: 10,
            storm_requests_max: 20_000,
            own_storm_seconds: 0.5,
            probe_rate: 100.0,
            reconnect_seconds: 0.5,
            rpc_seconds: 0.5,
            rpc_calibration_requests: 2_000,
            rpc_requests_min: 1_000,
            rpc_requests_max: 500_000,
            durability_seconds: 0.3,
            durability_calibration_requests: 1_000,
            // Log counters may then miss the run's last second: smoke checks the rows exist.
            durability_metrics_wait_ms: 0,
            restart_keys: 10_000,
            ..Plan::full()
        }
    }
}
