//! The orchestrator behind `shardline-bench`: starts servers on loopback, drives them with
//! redis-benchmark and `shardline-load`, scrapes `/metrics` and `/proc` around every run, and
//! writes Markdown, JSON and SVG.
//!
//! One concern per module: processes ([`process`]), certificates ([`certs`]), each server
//! ([`shardline`], [`redis`], [`server`]), each client ([`redis_benchmark`],
//! [`load_client`]), each measurement source ([`prom`], [`procstat`]), each table
//! ([`headline`], [`reconnect`], [`rpc`], [`scrape`], [`durability`], [`restart`], [`types`]), and each
//! output ([`markdown`], [`chart`], JSON via serde in [`results`]).

pub mod certs;
pub mod chart;
pub mod durability;
pub mod endpoint;
pub mod error;
pub mod goals;
pub mod headline;
pub mod load_client;
pub mod markdown;
pub mod plan;
pub mod process;
pub mod procstat;
pub mod prom;
pub mod reconnect;
pub mod redis;
pub mod redis_benchmark;
pub mod restart;
pub mod results;
pub mod rpc;
pub mod scrape;
pub mod server;
pub mod session;
pub mod shardline;
pub mod types;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use error::{HarnessError, IoContext};
use plan::{Plan, Table};
use results::{Machine, Results};
use session::{Session, Tools};

/// Where a comparison's outputs went.
#[derive(Debug, Clone)]
pub struct Outputs {
    /// The results as JSON.
    pub json: PathBuf,
    /// The chart.
    pub svg: PathBuf,
    /// The Markdown tables (also printed on stdout).
    pub markdown: PathBuf,
}

fn machine(redis_server: Option<&Path>) -> Machine {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    Machine {
        cpus: cpuinfo
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count(),
        cpu_model: cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_default(),
        kernel: fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_default(),
        redis_version: redis_server.and_then(|bin| {
            let out = Command::new(bin).arg("--version").output().ok()?;
            Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        }),
    }
}

/// Other work on the server CPUs above this many cores during a run is reported.
const DISTURBANCE_CORES: f64 = 0.05;

/// A note when other processes used the server's CPUs during some runs.
fn disturbance_note(r: &Results) -> Option<String> {
    let all: Vec<f64> = r
        .headline
        .iter()
        .flat_map(|r| r.runs.iter().map(|x| x.others_on_server_cpus))
        .chain(
            r.reconnect
                .iter()
                .flat_map(|r| r.runs.iter().map(|x| x.others_on_server_cpus)),
        )
        .chain(
            r.rpc
                .iter()
                .flat_map(|r| r.runs.iter().map(|x| x.others_on_server_cpus)),
        )
        .chain(
            r.durability
                .iter()
                .flat_map(|r| r.runs.iter().map(|x| x.others_on_server_cpus)),
        )
        .chain(
            r.types
                .iter()
                .flat_map(|r| r.runs.iter().map(|x| x.others_on_server_cpus)),
        )
        .flatten()
        .collect();
    let disturbed: Vec<f64> = all
        .iter()
        .copied()
        .filter(|v| *v > DISTURBANCE_CORES)
        .collect();
    let worst = disturbed.iter().copied().fold(0.0, f64::max);
    (!disturbed.is_empty()).then(|| {
        format!(
            "{} of {} runs had other processes using more than {DISTURBANCE_CORES} core of the \
             server CPU(s) (worst {worst:.2}); see `others_on_server_cpus` in the JSON",
            disturbed.len(),
            all.len()
        )
    })
}

/// The two storm clients may disagree by this factor before a note is written.
const CROSS_CHECK_FACTOR: f64 = 1.5;

/// A note when redis-benchmark and `shardline-load` measured very different login rates.
fn cross_check_note(row: &results::HeadlineRow) -> Option<String> {
    let (rb, own) = (
        row.conn_per_s_per_shard.median,
        row.own_conn_per_s_per_shard.median,
    );
    let disagree = rb > 0.0 && own > 0.0 && (own / rb).max(rb / own) > CROSS_CHECK_FACTOR;
    disagree.then(|| {
        format!(
            "hash mode {}: redis-benchmark measured {rb:.1} conn/s per shard but shardline-load \
             {own:.1}; one client is stalled by something the other avoids (compare the \
             latency fields of `storm` and `own_storm` in the JSON)",
            row.label()
        )
    })
}

/// The rows of `table` made by `rows`, or none when the plan leaves the table out.
fn table<T>(session: &Session, table: Table, what: &str, rows: impl FnOnce() -> Vec<T>) -> Vec<T> {
    if !session.plan.runs_table(table) {
        return Vec::new();
    }
    session.progress(what);
    rows()
}

/// Runs the whole comparison described by `plan` and writes `results.json`, `chart.svg` and
/// `results.md` into `out_dir` (scratch files go to `out_dir/work`). Parts that fail are
/// recorded in [`Results::notes`] (a headline mode that failed has no row: callers compare
/// `headline.len()` with `plan.modes.len() × plan.hash_batches.len()`).
///
/// # Errors
/// Set-up failures or unwritable outputs.
pub fn run(
    plan: Plan,
    tools: Tools,
    out_dir: &Path,
    command: String,
) -> Result<(Results, Outputs), HarnessError> {
    fs::create_dir_all(out_dir).context(|| format!("creating {}", out_dir.display()))?;
    let session = Session::prepare(plan, tools, &out_dir.join("work"))?;
    let plan = &session.plan;
    let mut notes = Vec::new();
    let mut headline = Vec::new();
    if plan.runs_table(Table::Headline) {
        for &mode in &plan.modes {
            for &batch in &plan.hash_batches {
                session.progress(&format!(
                    "login storm, --hash-mode {mode} --hash-batch {batch}"
                ));
                match headline::run(&session, mode, batch) {
                    Ok(row) => headline.push(row),
                    Err(err) => notes.push(format!(
                        "headline mode {mode}, --hash-batch {batch} failed: {err}"
                    )),
                }
            }
        }
    }
    let reconnect = table(
        &session,
        Table::Reconnect,
        "TLS reconnect rate, shardline vs redis-server",
        || reconnect::run(&session, &mut notes),
    );
    let rpc = table(
        &session,
        Table::Rpc,
        "RPC table (persistent, pipelined)",
        || rpc::run(&session, &mut notes),
    );
    let scrape = table(
        &session,
        Table::Scrape,
        "scraping /metrics under load",
        || {
            scrape::run(&session).unwrap_or_else(|err| {
                notes.push(format!("scrape-under-load rows failed: {err}"));
                Vec::new()
            })
        },
    );
    let durability = table(
        &session,
        Table::Durability,
        "durability: SET with the append-only log off, everysec, always",
        || durability::run(&session, &mut notes),
    );
    let restart = table(
        &session,
        Table::Restart,
        &format!("restart: replay of a log of {} keys", plan.restart_keys),
        || restart::run(&session, &mut notes),
    );
    let types = table(
        &session,
        Table::Types,
        "types: ZADD, ZRANGE and PUBLISH fan-out, shardline vs redis-server",
        || types::run(&session, &mut notes),
    );
    let goals = goals::evaluate(
        &headline,
        &reconnect,
        &rpc,
        &durability,
        &reconnect::cached_label(&session),
    );
    let mut results = Results {
        finished_unix_s: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        machine: machine(session.tools.redis_server.as_deref()),
        plan: session.plan.clone(),
        command,
        headline,
        reconnect,
        rpc,
        scrape,
        durability,
        restart,
        types,
        goals,
        notes,
    };
    let more: Vec<String> = disturbance_note(&results)
        .into_iter()
        .chain(results.headline.iter().filter_map(cross_check_note))
        .collect();
    results.notes.extend(more);
    let outputs = Outputs {
        json: out_dir.join("results.json"),
        svg: out_dir.join("chart.svg"),
        markdown: out_dir.join("results.md"),
    };
    let json = serde_json::to_string_pretty(&results).map_err(|e| HarnessError::Parse {
        what: "results (encoding JSON)".into(),
        detail: e.to_string(),
    })?;
    fs::write(&outputs.json, json).context(|| format!("writing {}", outputs.json.display()))?;
    fs::write(&outputs.markdown, markdown::render(&results))
        .context(|| format!("writing {}", outputs.markdown.display()))?;
    chart::write(&results.headline, &outputs.svg)?;
    Ok((results, outputs))
}
