//! The goals of issues 5 and 9, evaluated on medians.

use super::plan::Persistence;
use super::reconnect::REDIS_LABEL;
use super::results::{DurabilityRow, Goal, HeadlineRow, ReconnectRow, RpcRow};
use super::rpc::SHARDLINE;

fn goal(name: &str, target: &str, measured: Option<f64>, ok: impl Fn(f64) -> bool) -> Goal {
    let measured = measured.filter(|v| v.is_finite());
    Goal {
        name: name.to_owned(),
        target: target.to_owned(),
        measured,
        met: measured.map(ok),
    }
}

/// The row of hash mode `name` with batching on (the server's default).
fn mode<'a>(rows: &'a [HeadlineRow], name: &str) -> Option<&'a HeadlineRow> {
    rows.iter().find(|r| r.mode == name && !r.batch_off())
}

/// The row of hash mode `name` with `--hash-batch off`.
fn mode_batch_off<'a>(rows: &'a [HeadlineRow], name: &str) -> Option<&'a HeadlineRow> {
    rows.iter().find(|r| r.mode == name && r.batch_off())
}

/// Issue 15: per hash mode, conn/s with batching ≥ 2× without; in yield mode, reactor stalls
/// and quota-violation time with batching no worse than without.
fn batching_goals(headline: &[HeadlineRow]) -> Vec<Goal> {
    let mut goals = Vec::new();
    for name in ["inline", "yield", "offload"] {
        let Some((on, off)) = mode(headline, name).zip(mode_batch_off(headline, name)) else {
            continue;
        };
        let ratio = (off.conn_per_s_per_shard.median > 0.0)
            .then(|| on.conn_per_s_per_shard.median / off.conn_per_s_per_shard.median);
        goals.push(goal(
            &format!("{name}: conn/s per shard, batch auto ÷ batch off"),
            "≥ 2.0",
            ratio,
            |v| v >= 2.0,
        ));
        if name == "yield" {
            goals.push(goal(
                "yield: reactor stalls per shard, batch auto − batch off",
                "≤ 0",
                Some(on.stalls_per_shard.median - off.stalls_per_shard.median),
                |v| v <= 0.0,
            ));
            goals.push(goal(
                "yield: quota-violation ms per shard, batch auto − batch off",
                "≤ 0",
                Some(
                    on.quota_violation_ms_per_shard.median
                        - off.quota_violation_ms_per_shard.median,
                ),
                |v| v <= 0.0,
            ));
        }
    }
    goals
}

fn rpc<'a>(rows: &'a [RpcRow], tls: bool, command: &str) -> Option<&'a RpcRow> {
    rows.iter()
        .find(|r| r.server == SHARDLINE && r.tls == tls && r.command == command)
}

/// Evaluates every goal that the results allow; unmeasurable ones have `measured: None`.
pub fn evaluate(
    headline: &[HeadlineRow],
    reconnect: &[ReconnectRow],
    rpc_rows: &[RpcRow],
    durability: &[DurabilityRow],
    cached_label: &str,
) -> Vec<Goal> {
    let inline = mode(headline, "inline");
    let yielding = mode(headline, "yield");
    let conn_ratio = inline.zip(yielding).and_then(|(i, y)| {
        (i.conn_per_s_per_shard.median > 0.0)
            .then(|| y.conn_per_s_per_shard.median / i.conn_per_s_per_shard.median)
    });
    let stall_ratio = inline.zip(yielding).and_then(|(i, y)| {
        (i.stalls_per_shard.median > 0.0)
            .then(|| y.stalls_per_shard.median / i.stalls_per_shard.median)
    });
    let tls_ratio = |command: &str| {
        rpc(rpc_rows, true, command)
            .zip(rpc(rpc_rows, false, command))
            .and_then(|(on, off)| {
                (off.req_per_s.median > 0.0).then(|| on.req_per_s.median / off.req_per_s.median)
            })
    };
    let ctxsw = ["GET", "SET"]
        .iter()
        .filter_map(|c| rpc(rpc_rows, true, c).map(|r| r.ctxsw_per_req.median))
        .reduce(f64::max);
    // Per core = per server CPU-second: on two cores the client (one CPU, doing the other half
    // of every handshake) can cap the wall-clock rate of both servers alike.
    let redis = reconnect
        .iter()
        .find(|r| r.server == REDIS_LABEL)
        .map(|r| r.conn_per_server_cpu_s.median);
    let cached = reconnect
        .iter()
        .find(|r| r.server == cached_label)
        .map(|r| r.conn_per_server_cpu_s.median);
    let peer_ratio = cached
        .zip(redis)
        .and_then(|(c, r)| (r > 0.0).then(|| c / r));
    let shardline_durability = || durability.iter().filter(|r| r.server == SHARDLINE);
    // Issue 9: at least Redis's throughput per core in every row.
    let per_row = shardline_durability().map(|r| {
        goal(
            &format!(
                "durability: shardline ÷ redis-server SET/s, appendfsync {}, -P {}",
                r.persistence, r.pipeline
            ),
            "≥ 1.0",
            r.ratio_to_redis,
            |v| v >= 1.0,
        )
    });
    // Issue 9: a run of writes with `always` adds no reactor stall.
    let always_stalls = shardline_durability()
        .filter(|r| r.persistence == Persistence::Always)
        .filter_map(|r| r.stalls.as_ref().map(|s| s.median))
        .reduce(f64::max);
    let mut goals = vec![
        goal(
            "yield conn/s ÷ inline conn/s",
            "≥ 0.97",
            conn_ratio,
            |v| v >= 0.97,
        ),
        goal(
            "yield stalls ÷ inline stalls",
            "≤ 0.01",
            stall_ratio,
            |v| v <= 0.01,
        ),
        goal(
            "TLS-on ÷ TLS-off throughput, GET (persistent, pipelined)",
            "≥ 0.85",
            tls_ratio("GET"),
            |v| v >= 0.85,
        ),
        goal(
            "TLS-on ÷ TLS-off throughput, SET (persistent, pipelined)",
            "≥ 0.85",
            tls_ratio("SET"),
            |v| v >= 0.85,
        ),
        goal(
            "context switches per request (TLS on, worst of GET/SET)",
            "≤ 0.05",
            ctxsw,
            |v| v <= 0.05,
        ),
        goal(
            "TLS reconnects per server CPU-second, shardline with credentials cache ÷ redis-server",
            "≥ 1.5",
            peer_ratio,
            |v| v >= 1.5,
        ),
    ];
    goals.extend(batching_goals(headline));
    goals.extend(per_row);
    goals.push(goal(
        "reactor stalls during a run of SETs with appendfsync always (worst row's median)",
        "= 0",
        always_stalls,
        |v| v == 0.0,
    ));
    goals
}
