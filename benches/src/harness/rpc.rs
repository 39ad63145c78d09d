//! The RPC table (Kudu's rpc-bench): persistent connections, pipelined SET then GET, TLS on
//! and off, with the server's CPU and context switches per request from `/proc`.

use super::error::HarnessError;
use super::plan::HashMode;
use super::procstat;
use super::redis_benchmark::Workload;
use super::results::{RpcRow, RpcRun};
use super::server::ServerSpec;
use super::session::Session;
use crate::stats::Summary;

/// Commands measured, in order (SET first so GETs find keys).
pub const COMMANDS: [&str; 2] = ["set", "get"];

/// Server label of shardline rows.
pub const SHARDLINE: &str = "shardline";
/// Server label of redis-server rows.
pub const REDIS: &str = "redis-server 7";

/// The RPC workload of `test` (`set` or `get`) with the plan's sizes.
pub fn workload(session: &Session, test: &str) -> Workload {
    let plan = &session.plan;
    Workload {
        test: test.to_owned(),
        clients: plan.rpc_clients,
        requests: plan.rpc_calibration_requests,
        keepalive: true,
        pipeline: plan.rpc_pipeline,
        keyspace: Some(plan.rpc_keyspace),
        data_size: plan.rpc_value_bytes,
        command: Vec::new(),
    }
}

/// One server start: every command once. Returns a run per command.
fn one_server_run(session: &Session, spec: &ServerSpec) -> Result<Vec<RpcRun>, HarnessError> {
    let plan = &session.plan;
    let server = spec.start(&session.files)?;
    let ep = server.endpoint().clone();
    let timeout = session.timeout(plan.rpc_seconds);
    let mut out = Vec::new();
    for test in COMMANDS {
        let work = session.calibrate_rpc(&ep, &workload(session, test), timeout)?;
        let meter = procstat::Meter::start(server.pid(), spec.cpus())?;
        let bench = session.bench.run(&ep, &work, timeout)?;
        let metered = meter.stop()?;
        out.push(RpcRun {
            bench,
            server_cpu: metered.process,
            others_on_server_cpus: metered.others_on_server_cpus,
            tcp_retransmits: metered.tcp_retransmits,
        });
    }
    server.stop();
    Ok(out)
}

fn rows(
    session: &Session,
    server: &str,
    tls: bool,
    spec: &ServerSpec,
) -> Result<Vec<RpcRow>, HarnessError> {
    let mut per_command: Vec<Vec<RpcRun>> = vec![Vec::new(); COMMANDS.len()];
    for i in 1..=session.plan.runs {
        let runs = session.with_retry(&format!("{server} run {i}"), || {
            one_server_run(session, spec)
        })?;
        for (slot, run) in per_command.iter_mut().zip(runs) {
            session.progress(&format!(
                "  {server} TLS {} {} run {i}: {:.0} req/s, {:.3} ctxsw/req",
                if tls { "on" } else { "off" },
                run.bench.test,
                run.bench.rps,
                run.server_cpu.ctxt_switches() as f64 / run.bench.requests.max(1) as f64
            ));
            slot.push(run);
        }
    }
    Ok(COMMANDS
        .iter()
        .zip(per_command)
        .map(|(command, runs)| {
            let per_req = |f: &dyn Fn(&RpcRun) -> f64| {
                Summary::collect(runs.iter().map(|r| f(r) / r.bench.requests.max(1) as f64))
            };
            RpcRow {
                server: server.to_owned(),
                tls,
                command: command.to_uppercase(),
                req_per_s: Summary::collect(runs.iter().map(|r| r.bench.rps)),
                user_us_per_req: per_req(&|r| r.server_cpu.user_s * 1e6),
                sys_us_per_req: per_req(&|r| r.server_cpu.sys_s * 1e6),
                ctxsw_per_req: per_req(&|r| r.server_cpu.ctxt_switches() as f64),
                server_cpu_util: Summary::collect(runs.iter().map(|r| r.server_cpu.utilisation())),
                client_cpu_util: Summary::collect(runs.iter().map(|r| r.bench.client_cpu_util)),
                runs,
            }
        })
        .collect())
}

/// Runs the RPC table: shardline TLS on/off, then redis-server TLS on/off when available.
/// Servers that fail are reported in `notes`.
pub fn run(session: &Session, notes: &mut Vec<String>) -> Vec<RpcRow> {
    let mut specs = vec![
        // The credentials cache keeps the 50 logins of every redis-benchmark invocation (one
        // hash each) out of the per-request figures: this table is about steady-state cost.
        (
            SHARDLINE,
            true,
            ServerSpec::Shardline(session.shardline(
                HashMode::Yield,
                true,
                session.plan.cache_ttl_ms,
            )),
        ),
        (
            SHARDLINE,
            false,
            ServerSpec::Shardline(session.shardline(
                HashMode::Yield,
                false,
                session.plan.cache_ttl_ms,
            )),
        ),
    ];
    for tls in [true, false] {
        if let Some(redis) = session.redis(tls) {
            specs.push((REDIS, tls, ServerSpec::Redis(redis)));
        }
    }
    let mut out = Vec::new();
    for (server, tls, spec) in specs {
        match rows(session, server, tls, &spec) {
            Ok(r) => out.extend(r),
            Err(err) => notes.push(format!(
                "RPC rows of {server} (TLS {}) failed: {err}",
                if tls { "on" } else { "off" }
            )),
        }
    }
    out
}
