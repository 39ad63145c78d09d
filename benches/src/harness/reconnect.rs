//! The reconnect comparison: redis-benchmark `-k 0` (TLS handshake + AUTH + GET per
//! connection) against shardline with and without the credentials cache and against
//! redis-server 7 with TLS and an ACL user, same client and flags.

use super::error::HarnessError;
use super::headline::storm_workload;
use super::plan::HashMode;
use super::procstat;
use super::results::{ReconnectRow, ReconnectRun};
use super::server::ServerSpec;
use super::session::Session;
use crate::stats::Summary;

/// Label of the redis-server row (ratios are taken against it).
pub const REDIS_LABEL: &str = "redis-server 7 (TLS, ACL user)";

/// Label of the shardline row with the credentials cache on.
pub fn cached_label(session: &Session) -> String {
    format!(
        "shardline yield, credentials cache {} s",
        session.plan.cache_ttl_ms / 1000
    )
}

fn one_run(session: &Session, spec: &ServerSpec) -> Result<ReconnectRun, HarnessError> {
    let plan = &session.plan;
    let server = spec.start(&session.files)?;
    let ep = server.endpoint().clone();
    let timeout = session.timeout(plan.reconnect_seconds);
    // The calibration storm also fills the credentials cache when it is on.
    let (_warm, work) = session.bench.calibrate(
        &ep,
        &storm_workload(plan.storm_clients),
        plan.storm_warmup_requests,
        plan.reconnect_seconds,
        (plan.storm_requests_min, plan.storm_requests_max),
        timeout,
    )?;
    let meter = procstat::Meter::start(server.pid(), spec.cpus())?;
    let bench = session.bench.run(&ep, &work, timeout)?;
    let metered = meter.stop()?;
    server.stop();
    Ok(ReconnectRun {
        bench,
        server_cpu: metered.process,
        others_on_server_cpus: metered.others_on_server_cpus,
        tcp_retransmits: metered.tcp_retransmits,
    })
}

fn row(session: &Session, label: String, spec: &ServerSpec) -> Result<ReconnectRow, HarnessError> {
    let cores = spec.cores();
    let mut runs = Vec::new();
    for i in 1..=session.plan.runs {
        let run = session.with_retry(&format!("{label} run {i}"), || one_run(session, spec))?;
        session.progress(&format!(
            "  {label} run {i}: {:.1} conn/s, server CPU {:.2}, client CPU {:.2}",
            run.bench.rps,
            run.server_cpu.utilisation(),
            run.bench.client_cpu_util
        ));
        runs.push(run);
    }
    Ok(ReconnectRow {
        server: label,
        cores,
        conn_per_s_per_core: Summary::collect(runs.iter().map(|r| r.bench.rps / cores as f64)),
        conn_per_server_cpu_s: Summary::collect(
            runs.iter()
                .map(|r| r.bench.rps / r.server_cpu.utilisation().max(1e-9)),
        ),
        server_cpu_util: Summary::collect(runs.iter().map(|r| r.server_cpu.utilisation())),
        user_us_per_conn: Summary::collect(
            runs.iter()
                .map(|r| r.server_cpu.user_s * 1e6 / r.bench.requests.max(1) as f64),
        ),
        sys_us_per_conn: Summary::collect(
            runs.iter()
                .map(|r| r.server_cpu.sys_s * 1e6 / r.bench.requests.max(1) as f64),
        ),
        ctxsw_per_conn: Summary::collect(
            runs.iter()
                .map(|r| r.server_cpu.ctxt_switches() as f64 / r.bench.requests.max(1) as f64),
        ),
        client_cpu_util: Summary::collect(runs.iter().map(|r| r.bench.client_cpu_util)),
        tcp_retransmits: Summary::collect(
            runs.iter()
                .filter_map(|r| r.tcp_retransmits.map(|n| n as f64)),
        ),
        ratio_to_redis: None,
        cpu_ratio_to_redis: None,
        runs,
    })
}

/// Runs the rows (shardline cached, shardline uncached, redis-server when available) and
/// fills in the ratios to redis-server. Rows that fail are reported in `notes`.
pub fn run(session: &Session, notes: &mut Vec<String>) -> Vec<ReconnectRow> {
    let mut specs = vec![
        (
            cached_label(session),
            ServerSpec::Shardline(session.shardline(
                HashMode::Yield,
                true,
                session.plan.cache_ttl_ms,
            )),
        ),
        (
            "shardline yield, no cache".to_owned(),
            ServerSpec::Shardline(session.shardline(HashMode::Yield, true, 0)),
        ),
    ];
    if let Some(redis) = session.redis(true) {
        specs.push((REDIS_LABEL.to_owned(), ServerSpec::Redis(redis)));
    }
    let mut rows = Vec::new();
    for (label, spec) in specs {
        match row(session, label.clone(), &spec) {
            Ok(r) => rows.push(r),
            Err(err) => notes.push(format!("reconnect row {label:?} failed: {err}")),
        }
    }
    let redis = rows
        .iter()
        .find(|r| r.server == REDIS_LABEL)
        .map(|r| (r.conn_per_s_per_core.median, r.conn_per_server_cpu_s.median));
    if let Some((rate, per_cpu)) = redis {
        for r in &mut rows {
            r.ratio_to_redis = (rate > 0.0).then(|| r.conn_per_s_per_core.median / rate);
            r.cpu_ratio_to_redis =
                (per_cpu > 0.0).then(|| r.conn_per_server_cpu_s.median / per_cpu);
        }
    }
    rows
}
