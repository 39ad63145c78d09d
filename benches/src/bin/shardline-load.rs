//! `shardline-load`: our own load client for shardline and any Redis-compatible TLS server.
//!
//! ```text
//! shardline-load --port 6380 --cacert cert.pem --user bench --password pw storm --concurrency 16 --duration-s 5
//! shardline-load --port 6380 --cacert cert.pem --user bench --password pw probe --rate 200 --until-stdin-eof
//! shardline-load --port 6380 --cacert cert.pem --user bench --password pw pipeline --requests 1000000
//! ```
//!
//! Prints one JSON report on stdout (`StormReport`, `ProbeReport` or `PipelineReport`); progress goes to stderr.
//! Targets must be loopback addresses; every run is bounded by `--duration-s`.

use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use shardline_benches::load::conn::Connector;
use shardline_benches::load::{pipeline, probe, storm, Credentials, LoadError, Target, TlsTarget};

/// Load client: connection-per-request storms and a persistent-connection GET probe.
#[derive(Debug, Parser)]
#[command(name = "shardline-load", version)]
struct Cli {
    /// Server address (loopback only).
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Server port.
    #[arg(long)]
    port: u16,
    /// `on`: TLS on every connection (needs --cacert); `off`: plain TCP.
    #[arg(long, value_enum, default_value_t = Tls::On)]
    tls: Tls,
    /// PEM file of the CA or self-signed certificate that signed the server's certificate.
    #[arg(long)]
    cacert: Option<PathBuf>,
    /// TLS server name (SNI and certificate check).
    #[arg(long, default_value = "localhost")]
    sni: String,
    /// User for `AUTH user password` on every new connection (needs --password).
    #[arg(long, default_value = "default")]
    user: String,
    /// Password; without it no AUTH is sent.
    #[arg(long, env = "SHARDLINE_LOAD_PASSWORD")]
    password: Option<String>,
    /// TCP connect time-out, milliseconds.
    #[arg(long, default_value_t = 2_000)]
    connect_timeout_ms: u64,
    /// Read/write time-out of one socket operation, milliseconds.
    #[arg(long, default_value_t = 10_000)]
    io_timeout_ms: u64,
    /// Also stop when standard input reaches end of file (lets a harness end the run).
    #[arg(long)]
    until_stdin_eof: bool,
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Tls {
    On,
    Off,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// New connection (TCP + TLS handshake + AUTH) for every request.
    Storm {
        /// Client threads (connections in progress at once).
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        /// Longest run, seconds.
        #[arg(long, default_value_t = 5.0)]
        duration_s: f64,
        /// Stop after this many requests.
        #[arg(long)]
        requests: Option<u64>,
        /// Extra attempts when a connect or handshake fails.
        #[arg(long, default_value_t = 3)]
        retries: u32,
        /// Pause before a retry, milliseconds.
        #[arg(long, default_value_t = 10)]
        retry_delay_ms: u64,
        /// Impatient clients: give up a request not done within this many milliseconds
        /// (connect, handshake, AUTH, command), close it and retry at once on a new
        /// connection. Prints the completed logins of every second.
        #[arg(long)]
        give_up_after_ms: Option<u64>,
        /// Command sent after AUTH (default: GET shardline:storm).
        command: Vec<String>,
    },
    /// Persistent connections sending GETs at a fixed rate, latency in an HDR histogram.
    Probe {
        /// Persistent connections.
        #[arg(long, default_value_t = 2)]
        connections: usize,
        /// GETs per second over all connections.
        #[arg(long, default_value_t = 200.0)]
        rate: f64,
        /// Longest run, seconds.
        #[arg(long, default_value_t = 10.0)]
        duration_s: f64,
        /// Key set once and then read.
        #[arg(long, default_value = "shardline:probe")]
        key: String,
        /// Reconnects allowed per connection after an error.
        #[arg(long, default_value_t = 3)]
        retries: u32,
    },
    /// One connection writes every GET before reading any reply, then checks each reply.
    Pipeline {
        /// GETs in the pipeline.
        #[arg(long, default_value_t = 1_000_000)]
        requests: usize,
        /// Bytes of the value every GET reads.
        #[arg(long, default_value_t = 100)]
        value_bytes: usize,
        /// Key set once and then read.
        #[arg(long, default_value = "shardline:pipeline")]
        key: String,
    },
}

fn duration_s(seconds: f64) -> Result<Duration, LoadError> {
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| LoadError::Config(format!("bad duration {seconds} s")))
}

fn run(cli: Cli) -> Result<String, LoadError> {
    let tls = match (cli.tls, cli.cacert) {
        (Tls::Off, _) => None,
        (Tls::On, Some(ca_file)) => Some(TlsTarget {
            ca_file,
            server_name: cli.sni,
        }),
        (Tls::On, None) => {
            return Err(LoadError::Config(
                "--tls on needs --cacert (or use --tls off)".into(),
            ))
        }
    };
    // Impatient clients give up a handshake as early as any other step.
    let patience = match &cli.mode {
        Mode::Storm {
            give_up_after_ms: Some(ms),
            ..
        } => Some(*ms),
        _ => None,
    };
    let limit = |ms: u64| Duration::from_millis(patience.map_or(ms, |p| p.min(ms)));
    let target = Target {
        addr: SocketAddr::new(cli.host, cli.port),
        tls,
        credentials: cli.password.map(|password| Credentials {
            user: cli.user,
            password,
        }),
        connect_timeout: limit(cli.connect_timeout_ms),
        io_timeout: limit(cli.io_timeout_ms),
    };
    let connector = Arc::new(Connector::new(target)?);
    let stop = Arc::new(AtomicBool::new(false));
    if cli.until_stdin_eof {
        let stop = Arc::clone(&stop);
        thread::spawn(move || {
            let mut sink = [0u8; 256];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
            stop.store(true, Ordering::Relaxed);
        });
    }
    let json = match cli.mode {
        Mode::Storm {
            concurrency,
            duration_s: secs,
            requests,
            retries,
            retry_delay_ms,
            give_up_after_ms,
            command,
        } => {
            let command = if command.is_empty() {
                vec!["GET".to_owned(), "shardline:storm".to_owned()]
            } else {
                command
            };
            let config = storm::StormConfig {
                concurrency,
                duration: duration_s(secs)?,
                max_requests: requests,
                retries,
                retry_delay: Duration::from_millis(retry_delay_ms),
                command,
                give_up_after: give_up_after_ms.map(Duration::from_millis),
            };
            let report = storm::run(connector, &config, stop)?;
            eprintln!(
                "shardline-load: storm {} completed in {:.2} s = {:.1} conn/s, {} failed, {} given up",
                report.completed,
                report.elapsed_s,
                report.conn_per_s,
                report.failures.values().sum::<u64>(),
                report.gave_up
            );
            if config.give_up_after.is_some() {
                let rates: Vec<String> = report.per_second.iter().map(u64::to_string).collect();
                eprintln!("shardline-load: logins per second: {}", rates.join(" "));
            }
            serde_json::to_string_pretty(&report)
        }
        Mode::Probe {
            connections,
            rate,
            duration_s: secs,
            key,
            retries,
        } => {
            let config = probe::ProbeConfig {
                connections,
                rate_per_s: rate,
                duration: duration_s(secs)?,
                key,
                retries,
            };
            let report = probe::run(connector, &config, stop, || {
                eprintln!("shardline-load: probe ready");
            })?;
            eprintln!(
                "shardline-load: probe {} GETs, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms, {} errors",
                report.completed,
                report.latency.p50_ms,
                report.latency.p99_ms,
                report.latency.max_ms,
                report.errors
            );
            serde_json::to_string_pretty(&report)
        }
        Mode::Pipeline {
            requests,
            value_bytes,
            key,
        } => {
            let config = pipeline::PipelineConfig {
                requests,
                value_bytes,
                key,
            };
            let report = pipeline::run(&connector, &config)?;
            eprintln!(
                "shardline-load: pipeline {} GETs written before reading, all {} replies in {:.2} s",
                report.requests, report.replies_ok, report.elapsed_s
            );
            serde_json::to_string_pretty(&report)
        }
    };
    json.map_err(|e| LoadError::Config(format!("cannot encode the report: {e}")))
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("shardline-load: {err}");
            ExitCode::FAILURE
        }
    }
}
