//! `shardline-bench`: runs the whole comparison of issue 5 and prints it as Markdown.
//!
//! ```text
//! cargo build --release -p shardline -p shardline-benches && target/release/shardline-bench
//! target/debug/shardline-bench --smoke          # CI: one short run of everything
//! ```
//!
//! Writes `results.json`, `chart.svg` and `results.md` to `--out-dir`
//! (default `target/shardline-bench`). See benches/README.md.

use std::env;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use shardline_benches::harness::error::HarnessError;
use shardline_benches::harness::plan::{HashBatch, HashMode, Plan, Table};
use shardline_benches::harness::session::Tools;
use shardline_benches::harness::{markdown, run};

/// Login-storm, reconnect, RPC and durability comparison of shardline (and redis-server) on loopback.
#[derive(Debug, Parser)]
#[command(name = "shardline-bench", version)]
struct Cli {
    /// CI smoke mode: one run of everything, about a second each.
    #[arg(long)]
    smoke: bool,
    /// Runs per measurement (medians are reported). Default: 3, or 1 with --smoke.
    #[arg(long)]
    runs: Option<usize>,
    /// Tables to run (default: all).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "headline,reconnect,rpc,scrape,durability,restart,types"
    )]
    tables: Vec<Table>,
    /// Keys in the log of the restart table (default 1000000, or 10000 with --smoke).
    #[arg(long)]
    restart_keys: Option<u64>,
    /// Hash modes of the headline table.
    #[arg(long, value_delimiter = ',', default_value = "inline,yield,offload")]
    modes: Vec<HashMode>,
    /// shardline --hash-batch settings of the headline table: each hash mode runs with each.
    #[arg(long, value_delimiter = ',', default_value = "auto,off")]
    hash_batch: Vec<HashBatch>,
    /// Target length of one headline storm, seconds (default 6, or 1.5 with --smoke).
    #[arg(long)]
    storm_seconds: Option<f64>,
    /// Connections in flight during a storm (redis-benchmark -c, shardline-load --concurrency).
    #[arg(long)]
    storm_clients: Option<u32>,
    /// shardline --smp.
    #[arg(long, default_value_t = 1)]
    smp: usize,
    /// CPUs for the servers (taskset -c).
    #[arg(long, default_value = "0")]
    server_cpus: String,
    /// CPUs for the clients (taskset -c).
    #[arg(long, default_value = "1")]
    client_cpus: String,
    /// Do not pin servers and clients to CPUs (automatic with fewer than 2 CPUs).
    #[arg(long)]
    no_pin: bool,
    /// Output directory for results.json, chart.svg and results.md.
    #[arg(long, default_value = "target/shardline-bench")]
    out_dir: PathBuf,
    /// The shardline binary. Default: $SHARDLINE_BIN, else `shardline` next to this program.
    #[arg(long, env = "SHARDLINE_BIN")]
    shardline_bin: Option<PathBuf>,
    /// The shardline-load binary. Default: next to this program.
    #[arg(long)]
    load_bin: Option<PathBuf>,
    /// redis-benchmark. Default: from PATH.
    #[arg(long)]
    redis_benchmark: Option<PathBuf>,
    /// redis-server for the peer comparison. Default: from PATH (skipped when absent).
    #[arg(long)]
    redis_server: Option<PathBuf>,
    /// Skip the redis-server rows.
    #[arg(long)]
    no_redis: bool,
}

fn in_path(name: &str) -> Option<PathBuf> {
    env::var_os("PATH").and_then(|paths| {
        env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

fn sibling(name: &str) -> Option<PathBuf> {
    let exe = env::current_exe().ok()?;
    let candidate = exe.parent()?.join(name);
    candidate.is_file().then_some(candidate)
}

fn require(path: Option<PathBuf>, what: &str, hint: &str) -> Result<PathBuf, HarnessError> {
    match path {
        Some(p) if p.is_file() => Ok(p),
        Some(p) => Err(HarnessError::Config(format!(
            "{what} not found at {}",
            p.display()
        ))),
        None => Err(HarnessError::Config(format!("{what} not found: {hint}"))),
    }
}

fn plan(cli: &Cli) -> Result<Plan, HarnessError> {
    let mut plan = if cli.smoke {
        Plan::smoke()
    } else {
        Plan::full()
    };
    if let Some(runs) = cli.runs {
        plan.runs = runs;
    }
    if let Some(s) = cli.storm_seconds {
        if !(s.is_finite() && s > 0.0) {
            return Err(HarnessError::Config(format!("--storm-seconds {s}")));
        }
        plan.storm_seconds = s;
    }
    if let Some(c) = cli.storm_clients {
        plan.storm_clients = c.max(1);
    }
    if let Some(keys) = cli.restart_keys {
        plan.restart_keys = keys.max(1);
    }
    plan.tables = cli.tables.clone();
    plan.modes = cli.modes.clone();
    plan.hash_batches = cli.hash_batch.clone();
    plan.smp = cli.smp;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cli.no_pin || cpus < 2 {
        plan.server_cpus = None;
        plan.client_cpus = None;
    } else {
        plan.server_cpus = Some(cli.server_cpus.clone());
        plan.client_cpus = Some(cli.client_cpus.clone());
    }
    Ok(plan)
}

fn tools(cli: &Cli) -> Result<Tools, HarnessError> {
    Ok(Tools {
        shardline: require(
            cli.shardline_bin.clone().or_else(|| sibling("shardline")),
            "shardline",
            "build it (cargo build --release -p shardline) or pass --shardline-bin / SHARDLINE_BIN",
        )?,
        load: require(
            cli.load_bin.clone().or_else(|| sibling("shardline-load")),
            "shardline-load",
            "build it (cargo build -p shardline-benches) or pass --load-bin",
        )?,
        redis_benchmark: require(
            cli.redis_benchmark
                .clone()
                .or_else(|| in_path("redis-benchmark")),
            "redis-benchmark",
            "install it (apt-get install redis-tools) or pass --redis-benchmark",
        )?,
        redis_server: if cli.no_redis {
            None
        } else {
            cli.redis_server.clone().or_else(|| in_path("redis-server"))
        },
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let command = env::args().collect::<Vec<_>>().join(" ");
    let prepared = plan(&cli).and_then(|p| Ok((p, tools(&cli)?)));
    let (plan, tools) = match prepared {
        Ok(x) => x,
        Err(err) => {
            eprintln!("shardline-bench: {err}");
            return ExitCode::from(2);
        }
    };
    let wanted_modes = if plan.runs_table(Table::Headline) {
        plan.modes.len() * plan.hash_batches.len()
    } else {
        0
    };
    let out_dir: &Path = &cli.out_dir;
    match run(plan, tools, out_dir, command) {
        Ok((results, outputs)) => {
            println!("{}", markdown::render(&results));
            eprintln!(
                "shardline-bench: wrote {}, {} and {}",
                outputs.json.display(),
                outputs.svg.display(),
                outputs.markdown.display()
            );
            if results.headline.len() == wanted_modes {
                ExitCode::SUCCESS
            } else {
                eprintln!("shardline-bench: some headline modes failed (see Notes)");
                ExitCode::FAILURE
            }
        }
        Err(err) => {
            eprintln!("shardline-bench: {err}");
            ExitCode::FAILURE
        }
    }
}
