//! The headline table (benches/README.md): per `--hash-mode`, a login storm of new TLS
//! connections with AUTH on each (redis-benchmark `-k 0`), reactor stalls and quota-violation
//! time from `/metrics` deltas, a persistent-connection GET probe during the storm, and a
//! cross-check storm by `shardline-load`.

use std::collections::BTreeMap;
use std::time::Duration;

use super::error::HarnessError;
use super::plan::{HashBatch, HashMode};
use super::procstat;
use super::prom::{self, Scrape};
use super::redis_benchmark::Workload;
use super::results::{HeadlineRow, HeadlineRun, ShardDelta};
use super::session::Session;
use super::shardline::ShardlineServer;
use crate::stats::Summary;

const STALLS: &str = "shardline_reactor_stalls_count";
const STALLS_PREEMPTED: &str = "shardline_reactor_stalls_preempted_total";
const QUOTA: &str = "shardline_scheduler_time_spent_on_task_quota_violations_seconds_total";
const ACCEPTED: &str = "shardline_connections_accepted_total";
const HANDSHAKES: &str = "shardline_tls_handshakes_completed_total";
const LOGINS: &str = "shardline_logins_total";
const HASH: &str = "shardline_password_hash_duration_seconds";
const BATCH_SUM: &str = "shardline_password_hash_batch_size_sum";
const BATCH_COUNT: &str = "shardline_password_hash_batch_size_count";

/// Mean batch size between two scrapes: delta of the histogram's `_sum` ÷ delta of its
/// `_count`, over every shard and mode. `None` without verifications in between.
pub fn batch_size_mean(before: &Scrape, after: &Scrape) -> Option<f64> {
    let count = after.sum_where(BATCH_COUNT, &[]) - before.sum_where(BATCH_COUNT, &[]);
    let sum = after.sum_where(BATCH_SUM, &[]) - before.sum_where(BATCH_SUM, &[]);
    (count > 0.0).then(|| sum / count)
}

/// The login-storm workload: `-t get -k 0`, one request per connection.
pub fn storm_workload(clients: u32) -> Workload {
    Workload {
        test: "get".into(),
        clients,
        requests: 0,
        keepalive: false,
        pipeline: 1,
        keyspace: None,
        data_size: 3,
        command: Vec::new(),
    }
}

/// Per-shard deltas of the storm metrics between two scrapes.
pub fn shard_deltas(before: &Scrape, after: &Scrape) -> BTreeMap<String, ShardDelta> {
    let mut shards: BTreeMap<String, ShardDelta> = BTreeMap::new();
    for (shard, v) in prom::delta_by(before, after, STALLS, "shard") {
        shards.entry(shard).or_default().stalls = v;
    }
    for (shard, v) in prom::delta_by(before, after, STALLS_PREEMPTED, "shard") {
        shards.entry(shard).or_default().stalls_preempted = v;
    }
    for ((shard, group), v) in prom::delta_by_pair(before, after, QUOTA, ("shard", "group")) {
        let d = shards.entry(shard).or_default();
        d.quota_violation_ms += v * 1000.0;
        d.quota_violation_ms_by_group.insert(group, v * 1000.0);
    }
    for (shard, v) in prom::delta_by(before, after, ACCEPTED, "shard") {
        shards.entry(shard).or_default().accepted = v;
    }
    for (shard, v) in prom::delta_by(before, after, HANDSHAKES, "shard") {
        shards.entry(shard).or_default().tls_handshakes = v;
    }
    for ((shard, result), v) in prom::delta_by_pair(before, after, LOGINS, ("shard", "result")) {
        shards.entry(shard).or_default().logins.insert(result, v);
    }
    shards
}

fn one_run(
    session: &Session,
    mode: HashMode,
    batch: HashBatch,
) -> Result<HeadlineRun, HarnessError> {
    let plan = &session.plan;
    let opts = super::shardline::ShardlineOptions {
        hash_batch: Some(batch),
        ..session.shardline(mode, true, 0)
    };
    let mut server = ShardlineServer::start(&opts, &session.files)?;
    let ep = server.endpoint().clone();
    let timeout = session.timeout(plan.storm_seconds);
    let (_warm, work) = session.bench.calibrate(
        &ep,
        &storm_workload(plan.storm_clients),
        plan.storm_warmup_requests,
        plan.storm_seconds,
        (plan.storm_requests_min, plan.storm_requests_max),
        timeout,
    )?;
    let probe = session
        .load
        .start_probe(&ep, plan.probe_connections, plan.probe_rate, timeout)?;
    let m0 = Scrape::fetch(server.metrics_url())?;
    let meter = procstat::Meter::start(server.pid(), plan.server_cpus.as_deref())?;
    let storm = session.bench.run(&ep, &work, timeout);
    let c1 = meter.stop();
    let m1 = Scrape::fetch(server.metrics_url());
    let probe = probe.finish();
    server.check_alive()?;
    let (storm, c1, m1, probe) = (storm?, c1?, m1?, probe?);
    let own_storm = session.load.storm(
        &ep,
        plan.storm_clients,
        Duration::from_secs_f64(plan.own_storm_seconds),
    )?;
    server.check_alive()?;
    server.stop();

    let hash = prom::bucket_delta(&m0, &m1, HASH);
    Ok(HeadlineRun {
        conn_per_s_per_shard: storm.rps / plan.smp as f64,
        storm,
        shards: shard_deltas(&m0, &m1),
        batch_size_mean: batch_size_mean(&m0, &m1),
        hash_p50_ms: prom::quantile(&hash, 0.50).map(|s| s * 1000.0),
        hash_p99_ms: prom::quantile(&hash, 0.99).map(|s| s * 1000.0),
        server_cpu: c1.process,
        others_on_server_cpus: c1.others_on_server_cpus,
        tcp_retransmits: c1.tcp_retransmits,
        probe,
        own_storm,
    })
}

/// Runs `plan.runs` headline runs of `mode` with `--hash-batch batch` (fresh server each)
/// and summarises them.
///
/// # Errors
/// The first failing run's error.
pub fn run(
    session: &Session,
    mode: HashMode,
    batch: HashBatch,
) -> Result<HeadlineRow, HarnessError> {
    let smp = session.plan.smp as f64;
    let label = format!("{mode}, batch {batch}");
    let mut runs = Vec::new();
    for i in 1..=session.plan.runs {
        let run = session.with_retry(&format!("{label} run {i}"), || {
            one_run(session, mode, batch)
        })?;
        let stalls: f64 = run.shards.values().map(|s| s.stalls).sum();
        session.progress(&format!(
            "  {label} run {i}: {:.1} conn/s per shard, {:.0} stalls, probe p99 {:.2} ms, own client {:.1} conn/s, mean batch {:.2}",
            run.conn_per_s_per_shard,
            stalls,
            run.probe.latency.p99_ms,
            run.own_storm.conn_per_s,
            run.batch_size_mean.unwrap_or(f64::NAN)
        ));
        runs.push(run);
    }
    let per_shard = |f: fn(&ShardDelta) -> f64| {
        Summary::collect(
            runs.iter()
                .map(|r| r.shards.values().map(f).sum::<f64>() / smp),
        )
    };
    let hash_p99: Vec<f64> = runs.iter().filter_map(|r| r.hash_p99_ms).collect();
    Ok(HeadlineRow {
        mode: mode.to_string(),
        hash_batch: Some(batch.to_string()),
        batch_size_mean: Summary::of(
            &runs
                .iter()
                .filter_map(|r| r.batch_size_mean)
                .collect::<Vec<_>>(),
        ),
        conn_per_s_per_shard: Summary::collect(runs.iter().map(|r| r.conn_per_s_per_shard)),
        stalls_per_shard: per_shard(|s| s.stalls),
        stalls_preempted_per_shard: Some(per_shard(|s| s.stalls_preempted)),
        quota_violation_ms_per_shard: per_shard(|s| s.quota_violation_ms),
        login_p99_ms: Summary::collect(runs.iter().map(|r| r.own_storm.login.p99_ms)),
        hash_p99_ms: Summary::of(&hash_p99),
        own_conn_per_s_per_shard: Summary::collect(
            runs.iter().map(|r| r.own_storm.conn_per_s / smp),
        ),
        probe_p50_ms: Summary::collect(runs.iter().map(|r| r.probe.latency.p50_ms)),
        probe_p99_ms: Summary::collect(runs.iter().map(|r| r.probe.latency.p99_ms)),
        probe_max_ms: Summary::collect(runs.iter().map(|r| r.probe.latency.max_ms)),
        server_cpu_util: Summary::collect(runs.iter().map(|r| r.server_cpu.utilisation())),
        server_cpu_ms_per_conn: Summary::collect(runs.iter().map(|r| {
            (r.server_cpu.user_s + r.server_cpu.sys_s) * 1000.0 / r.storm.requests.max(1) as f64
        })),
        others_on_server_cpus: Summary::collect(
            runs.iter().filter_map(|r| r.others_on_server_cpus),
        ),
        runs,
    })
}
