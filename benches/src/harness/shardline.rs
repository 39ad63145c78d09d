//! Starting and stopping a shardline server for one run.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::certs::CertFiles;
use super::endpoint::Endpoint;
use super::error::HarnessError;
use super::plan::{HashBatch, HashMode, Persistence};
use super::process::{pinned_command, Managed};

/// Longest a server may take to print its start-up line (a debug build is slow).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Everything that differs between shardline runs.
#[derive(Debug, Clone)]
pub struct ShardlineOptions {
    /// The `shardline` binary.
    pub bin: PathBuf,
    /// Shards (`--smp`).
    pub smp: usize,
    /// CPUs for `taskset -c`, if pinned.
    pub cpus: Option<String>,
    /// `--hash-mode`.
    pub hash_mode: HashMode,
    /// `--hash-batch`; `None` = not passed (the server's default, `auto`).
    pub hash_batch: Option<HashBatch>,
    /// TLS on (`false` = `--tls off`).
    pub tls: bool,
    /// `--credentials-cache-ttl-ms` (0 = cache off).
    pub cache_ttl_ms: u64,
    /// `--appendonly`/`--appendfsync` ([`Persistence::server_args`]).
    pub persistence: Persistence,
    /// `--data-dir` of this run; `None` = the session's shared [`ShardlineFiles::data_dir`]
    /// (fine while nothing is persisted; runs that log need a fresh directory each).
    pub data_dir: Option<PathBuf>,
}

/// Files shared by every shardline run of a session.
#[derive(Debug, Clone)]
pub struct ShardlineFiles {
    /// Certificate and key passed as `--tls-cert/--tls-key`.
    pub cert: CertFiles,
    /// Users file holding the benchmark user.
    pub users: PathBuf,
    /// `--data-dir`.
    pub data_dir: PathBuf,
    /// Benchmark user.
    pub user: String,
    /// Its password.
    pub password: String,
}

/// Adds `user` with `password` to `users` with `shardline passwd` (password on stdin).
///
/// # Errors
/// [`HarnessError::Process`] when `shardline passwd` fails.
pub fn add_user(bin: &Path, users: &Path, user: &str, password: &str) -> Result<(), HarnessError> {
    let mut cmd = std::process::Command::new(bin);
    cmd.arg("passwd").arg(user).arg("--users").arg(users);
    let mut process = Managed::spawn("shardline passwd", cmd, true)?;
    process.write_stdin(format!("{password}\n").as_bytes())?;
    process.close_stdin();
    let status = process.wait(Duration::from_secs(60))?;
    if !status.success() {
        return Err(HarnessError::Process {
            what: "shardline passwd".into(),
            detail: format!("{status}\n{}", process.output_tail(10)),
        });
    }
    Ok(())
}

/// Finds `SocketAddr` after `marker` in a log line (e.g. `listening on 127.0.0.1:6380`).
pub fn addr_after(line: &str, marker: &str) -> Option<SocketAddr> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let token: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '[' | ']'))
        .collect();
    token.parse().ok()
}

/// A running shardline; stopped (SIGTERM) when dropped.
pub struct ShardlineServer {
    process: Managed,
    endpoint: Endpoint,
    metrics_url: String,
}

impl ShardlineServer {
    /// Starts shardline on ephemeral loopback ports and waits for its start-up line.
    ///
    /// # Errors
    /// [`HarnessError::Process`] when it exits or prints no start-up line within a minute.
    pub fn start(
        opts: &ShardlineOptions,
        files: &ShardlineFiles,
    ) -> Result<ShardlineServer, HarnessError> {
        let mut cmd = pinned_command(&opts.bin, opts.cpus.as_deref());
        cmd.arg("--smp")
            .arg(opts.smp.to_string())
            .arg("--hash-mode")
            .arg(opts.hash_mode.as_str())
            .arg("--bind")
            .arg("127.0.0.1:0")
            .arg("--metrics-bind")
            .arg("127.0.0.1:0")
            .arg("--tls-cert")
            .arg(&files.cert.cert)
            .arg("--tls-key")
            .arg(&files.cert.key)
            .arg("--users")
            .arg(&files.users)
            .arg("--data-dir")
            .arg(opts.data_dir.as_ref().unwrap_or(&files.data_dir))
            .arg("--credentials-cache-ttl-ms")
            .arg(opts.cache_ttl_ms.to_string())
            .args(opts.persistence.server_args())
            .env("NO_COLOR", "1");
        if let Some(batch) = opts.hash_batch {
            cmd.arg("--hash-batch").arg(batch.as_str());
        }
        if !opts.tls {
            cmd.arg("--tls").arg("off");
        }
        let mut process = Managed::spawn("shardline", cmd, false)?;
        let (port, metrics) = process.wait_for_line(STARTUP_TIMEOUT, |line| {
            let listen = addr_after(line, "listening on ")?;
            let metrics = addr_after(line, "metrics on http://")?;
            Some((listen.port(), metrics))
        })?;
        Ok(ShardlineServer {
            process,
            endpoint: Endpoint {
                port,
                tls_ca: opts.tls.then(|| files.cert.cert.clone()),
                user: files.user.clone(),
                password: files.password.clone(),
            },
            metrics_url: format!("http://{metrics}/metrics"),
        })
    }

    /// Client endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Process id (for `/proc` accounting).
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// URL of the Prometheus endpoint.
    pub fn metrics_url(&self) -> &str {
        &self.metrics_url
    }

    /// The server process (its log lines, e.g. for
    /// [`RunningServer::wait_for_line`](super::server::RunningServer::wait_for_line)).
    pub(super) fn process_mut(&mut self) -> &mut Managed {
        &mut self.process
    }

    /// Fails when the server has died (e.g. crashed under load).
    ///
    /// # Errors
    /// [`HarnessError::Process`] with the tail of its log.
    pub fn check_alive(&mut self) -> Result<(), HarnessError> {
        if self.process.is_running() {
            Ok(())
        } else {
            Err(HarnessError::Process {
                what: "shardline".into(),
                detail: format!("died during the run\n{}", self.process.output_tail(20)),
            })
        }
    }

    /// Stops the server (SIGTERM, SIGKILL after 10 s).
    pub fn stop(mut self) {
        self.process.stop(Duration::from_secs(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_addresses_in_the_startup_line() {
        let line = "2026-11-30T15:00:00Z INFO shardline 0.1.0 starting: 1 shard(s) on CPU(s) [0], \
                    other threads on CPU(s) [1], listening on 127.0.0.1:40123 (TLS), metrics on http://127.0.0.1:40124/metrics, hash mode yield";
        assert_eq!(
            addr_after(line, "listening on ").map(|a| a.port()),
            Some(40123)
        );
        assert_eq!(
            addr_after(line, "metrics on http://").map(|a| a.port()),
            Some(40124)
        );
        assert_eq!(addr_after("nothing here", "listening on "), None);
    }
}
