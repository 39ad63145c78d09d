//! What a comparison runs: the full plan (≥ 3 runs, ~5 minutes) and the CI smoke plan
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
    /// Also run Debian's redis-server as the peer.
    pub with_redis: bool,
}

fn default_scrape_interval_ms() -> u64 {
    100
}

impl Plan {
    /// The full comparison: 3 runs of everything, about 5 minutes on 2 cores.
    pub fn full() -> Plan {
        Plan {
            runs: 3,
            smp: 1,
            server_cpus: Some("0".into()),
            client_cpus: Some("1".into()),
            modes: vec![HashMode::Inline, HashMode::Yield, HashMode::Offload],
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
            ..Plan::full()
        }
    }
}
