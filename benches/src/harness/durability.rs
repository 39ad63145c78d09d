//! The durability table (issue 9): redis-benchmark SET, pipelined and unpipelined, against
//! shardline and redis-server 7 with the same append-only log setting (off, `everysec`,
//! `always`), TLS on. Each run starts a fresh server on a fresh data directory (same file
//! system for both servers) and reads the server's CPU per request from `/proc` and, for
//! shardline, the reactor-stall, quota-violation and log counters from `/metrics`.

use std::thread;
use std::time::{Duration, Instant};

use super::error::HarnessError;
use super::plan::{HashMode, Persistence};
use super::procstat;
use super::prom::Scrape;
use super::redis_benchmark::Workload;
use super::results::{DurabilityRow, DurabilityRun};
use super::rpc::{REDIS, SHARDLINE};
use super::server::ServerSpec;
use super::session::Session;
use crate::stats::Summary;

const STALLS: &str = "shardline_reactor_stalls_count";
const QUOTA: &str = "shardline_scheduler_time_spent_on_task_quota_violations_seconds_total";
const LOG_RECORDS: &str = "shardline_aof_records_total";
const FSYNCS: &str = "shardline_aof_fsync_duration_seconds_count";

/// The server of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    Shardline,
    Redis,
}

impl Server {
    fn label(self) -> &'static str {
        match self {
            Server::Shardline => SHARDLINE,
            Server::Redis => REDIS,
        }
    }
}

/// One row's settings.
#[derive(Debug, Clone, Copy)]
struct Case {
    server: Server,
    persistence: Persistence,
    pipeline: u32,
}

/// The SET workload with `pipeline` requests in flight per connection, RPC sizes otherwise;
/// `requests` is the calibration size (the RPC table's when pipelined, a smaller one when not:
/// unpipelined SETs with `always` run at a few thousand per second).
fn workload(session: &Session, pipeline: u32) -> Workload {
    let plan = &session.plan;
    Workload {
        test: "set".into(),
        clients: plan.rpc_clients,
        requests: if pipeline > 1 {
            plan.rpc_calibration_requests
        } else {
            plan.durability_calibration_requests
        },
        keepalive: true,
        pipeline,
        keyspace: Some(plan.rpc_keyspace),
        data_size: plan.rpc_value_bytes,
        command: Vec::new(),
    }
}

/// Pipeline depths of the table: the RPC table's `-P`, then unpipelined.
pub fn pipelines(session: &Session) -> [u32; 2] {
    [session.plan.rpc_pipeline, 1]
}

/// The server of `case` with its data directory in `dir`.
fn spec(session: &Session, case: Case, dir: &std::path::Path) -> Option<ServerSpec> {
    Some(match case.server {
        // The credentials cache keeps the 50 logins of each invocation out of the figures.
        Server::Shardline => ServerSpec::Shardline(super::shardline::ShardlineOptions {
            persistence: case.persistence,
            data_dir: Some(dir.to_owned()),
            ..session.shardline(HashMode::Yield, true, session.plan.cache_ttl_ms)
        }),
        Server::Redis => ServerSpec::Redis(super::redis::RedisOptions {
            persistence: case.persistence,
            dir: dir.to_owned(),
            ..session.redis(true)?
        }),
    })
}

/// Sum over every series of `name` in `after` minus in `before`.
fn delta(before: &Scrape, after: &Scrape, name: &str) -> f64 {
    after.sum_where(name, &[]) - before.sum_where(name, &[])
}

fn one_run(session: &Session, case: Case) -> Result<DurabilityRun, HarnessError> {
    let plan = &session.plan;
    let dir = session.fresh_dir(&format!(
        "durability-{}-{}-",
        case.server.label().split(' ').next().unwrap_or("server"),
        case.persistence
    ))?;
    let spec = spec(session, case, dir.path())
        .ok_or_else(|| HarnessError::Config("no redis-server".into()))?;
    let server = spec.start(&session.files)?;
    let ep = server.endpoint().clone();
    let timeout = session.timeout(plan.durability_seconds);
    let calibration = workload(session, case.pipeline);
    let (_warm, work) = session.bench.calibrate(
        &ep,
        &calibration,
        calibration.requests,
        plan.durability_seconds,
        (plan.rpc_requests_min, plan.rpc_requests_max),
        timeout,
    )?;
    // shardline publishes its `aof_*` series once a second: the scrape after the run waits for
    // the run's last update. The one before does not wait, so those deltas may include up to
    // a second of the calibration run, the same workload: the ratio records per fdatasync is
    // what the table shows.
    let scrape = |wait: Duration| -> Result<Option<(Scrape, Instant)>, HarnessError> {
        let Some(url) = server.metrics_url() else {
            return Ok(None);
        };
        if case.persistence != Persistence::Off {
            thread::sleep(wait);
        }
        Ok(Some((Scrape::fetch(url)?, Instant::now())))
    };
    let m0 = scrape(Duration::ZERO)?;
    let meter = procstat::Meter::start(server.pid(), spec.cpus())?;
    let bench = session.bench.run(&ep, &work, timeout);
    let metered = meter.stop();
    let m1 = scrape(Duration::from_millis(plan.durability_metrics_wait_ms));
    server.stop();
    let (bench, metered, m1) = (bench?, metered?, m1?);
    let counters = m0.zip(m1);
    let counter = |name: &str| counters.as_ref().map(|((a, _), (b, _))| delta(a, b, name));
    let logged = |name: &str| counter(name).filter(|_| case.persistence != Persistence::Off);
    Ok(DurabilityRun {
        bench,
        server_cpu: metered.process,
        others_on_server_cpus: metered.others_on_server_cpus,
        stalls: counter(STALLS),
        quota_violation_ms: counter(QUOTA).map(|s| s * 1000.0),
        log_records: logged(LOG_RECORDS),
        fsyncs: logged(FSYNCS),
        metrics_window_s: counters
            .as_ref()
            .map(|((_, t0), (_, t1))| t1.duration_since(*t0).as_secs_f64()),
    })
}

fn row(case: Case, runs: Vec<DurabilityRun>) -> DurabilityRow {
    let per_req = |f: &dyn Fn(&DurabilityRun) -> f64| {
        Summary::collect(runs.iter().map(|r| f(r) / r.bench.requests.max(1) as f64))
    };
    let optional = |f: &dyn Fn(&DurabilityRun) -> Option<f64>| {
        Summary::of(&runs.iter().filter_map(f).collect::<Vec<_>>())
    };
    DurabilityRow {
        server: case.server.label().to_owned(),
        persistence: case.persistence,
        pipeline: case.pipeline,
        req_per_s: Summary::collect(runs.iter().map(|r| r.bench.rps)),
        ratio_to_redis: None,
        cpu_us_per_req: per_req(&|r| (r.server_cpu.user_s + r.server_cpu.sys_s) * 1e6),
        user_us_per_req: per_req(&|r| r.server_cpu.user_s * 1e6),
        sys_us_per_req: per_req(&|r| r.server_cpu.sys_s * 1e6),
        server_cpu_util: Summary::collect(runs.iter().map(|r| r.server_cpu.utilisation())),
        client_cpu_util: Summary::collect(runs.iter().map(|r| r.bench.client_cpu_util)),
        stalls: optional(&|r| r.stalls),
        quota_violation_ms: optional(&|r| r.quota_violation_ms),
        records_per_fsync: optional(&|r| {
            let (records, fsyncs) = (r.log_records?, r.fsyncs?);
            (fsyncs > 0.0).then(|| records / fsyncs)
        }),
        runs,
    }
}

/// Sets each shardline row's ratio to the redis-server row with the same settings.
fn set_ratios(rows: &mut [DurabilityRow]) {
    let redis: Vec<(Persistence, u32, f64)> = rows
        .iter()
        .filter(|r| r.server == REDIS)
        .map(|r| (r.persistence, r.pipeline, r.req_per_s.median))
        .collect();
    for row in rows.iter_mut().filter(|r| r.server == SHARDLINE) {
        row.ratio_to_redis = redis
            .iter()
            .find(|(p, pipe, _)| *p == row.persistence && *pipe == row.pipeline)
            .and_then(|(_, _, rps)| (*rps > 0.0).then(|| row.req_per_s.median / rps));
    }
}

/// Runs the durability table: for every run, every persistence setting and pipeline depth,
/// shardline then redis-server (interleaved, so slow drifts of a shared machine hit both
/// alike). Rows whose runs fail are left out and reported in `notes`.
pub fn run(session: &Session, notes: &mut Vec<String>) -> Vec<DurabilityRow> {
    let mut servers = vec![Server::Shardline];
    if session.tools.redis_server.is_some() {
        servers.push(Server::Redis);
    }
    let cases: Vec<Case> = Persistence::ALL
        .into_iter()
        .flat_map(|persistence| {
            pipelines(session).into_iter().flat_map({
                let servers = servers.clone();
                move |pipeline| {
                    servers.clone().into_iter().map(move |server| Case {
                        server,
                        persistence,
                        pipeline,
                    })
                }
            })
        })
        .collect();
    let mut runs: Vec<Option<Vec<DurabilityRun>>> = vec![Some(Vec::new()); cases.len()];
    for i in 1..=session.plan.runs {
        for (case, slot) in cases.iter().zip(runs.iter_mut()) {
            if slot.is_none() {
                continue;
            }
            let what = format!(
                "{} {} -P {} run {i}",
                case.server.label(),
                case.persistence,
                case.pipeline
            );
            match session.with_retry(&what, || one_run(session, *case)) {
                Ok(run) => {
                    session.progress(&format!(
                        "  {what}: {:.0} req/s, {:.2} µs CPU/req, {} stalls",
                        run.bench.rps,
                        (run.server_cpu.user_s + run.server_cpu.sys_s) * 1e6
                            / run.bench.requests.max(1) as f64,
                        run.stalls.map_or_else(|| "–".into(), |s| format!("{s:.0}"))
                    ));
                    if let Some(runs) = slot {
                        runs.push(run);
                    }
                }
                Err(err) => {
                    notes.push(format!("durability row {what} failed: {err}"));
                    *slot = None;
                }
            }
        }
    }
    let mut rows: Vec<DurabilityRow> = cases
        .into_iter()
        .zip(runs)
        .filter_map(|(case, runs)| runs.map(|r| row(case, r)))
        .collect();
    set_ratios(&mut rows);
    rows
}
