//! Starting and stopping Debian's redis-server 7 as the peer: TLS on a loopback ephemeral
//! port, an ACL user, no RDB snapshots, the append-only file as the run asks.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use super::certs::CertFiles;
use super::endpoint::Endpoint;
use super::error::{HarnessError, IoContext};
use super::plan::Persistence;
use super::process::{pinned_command, Managed};

/// Settings of one redis-server run.
#[derive(Debug, Clone)]
pub struct RedisOptions {
    /// The `redis-server` binary.
    pub bin: PathBuf,
    /// CPUs for `taskset -c`, if pinned.
    pub cpus: Option<String>,
    /// TLS on (`--tls-port`, `--port 0`) or plain TCP (`--port`).
    pub tls: bool,
    /// Certificate, key and CA (the same self-signed file).
    pub cert: CertFiles,
    /// Working directory (`--dir`): the append-only files go there (`appendonlydir/`).
    pub dir: PathBuf,
    /// `--appendonly`/`--appendfsync` ([`Persistence::server_args`]).
    pub persistence: Persistence,
    /// ACL user created with `--user NAME on >PASSWORD ~* +@all`.
    pub user: String,
    /// Its password.
    pub password: String,
}

/// A free loopback port, found by binding port 0 (a small race with other programs remains;
/// start-up is retried on failure).
///
/// # Errors
/// [`HarnessError::Io`] when no port can be bound.
pub fn free_port() -> Result<u16, HarnessError> {
    let listener =
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context(|| "binding port 0".into())?;
    Ok(listener
        .local_addr()
        .context(|| "reading a bound address".into())?
        .port())
}

/// A running redis-server; stopped (SIGTERM) when dropped.
pub struct RedisServer {
    process: Managed,
    endpoint: Endpoint,
}

fn arg_path(p: &Path) -> String {
    p.display().to_string()
}

impl RedisServer {
    /// Starts redis-server and waits until its port accepts connections (three attempts with
    /// fresh ports).
    ///
    /// # Errors
    /// [`HarnessError::Process`] when it does not come up.
    pub fn start(opts: &RedisOptions) -> Result<RedisServer, HarnessError> {
        let mut last = None;
        for _ in 0..3 {
            match Self::try_start(opts) {
                Ok(server) => return Ok(server),
                Err(err) => last = Some(err),
            }
        }
        Err(last.unwrap_or_else(|| HarnessError::Config("redis-server never started".into())))
    }

    fn try_start(opts: &RedisOptions) -> Result<RedisServer, HarnessError> {
        let port = free_port()?;
        let mut cmd = pinned_command(&opts.bin, opts.cpus.as_deref());
        cmd.args(["--bind", "127.0.0.1", "--save", ""])
            .args(opts.persistence.server_args())
            .args([
                "--daemonize",
                "no",
                "--logfile",
                "",
                "--protected-mode",
                "yes",
            ])
            .arg("--dir")
            .arg(&opts.dir)
            .args(["--user", &opts.user, "on", &format!(">{}", opts.password)])
            .args(["~*", "&*", "+@all"]);
        if opts.tls {
            cmd.args(["--port", "0", "--tls-port", &port.to_string()])
                .args(["--tls-cert-file", &arg_path(&opts.cert.cert)])
                .args(["--tls-key-file", &arg_path(&opts.cert.key)])
                .args(["--tls-ca-cert-file", &arg_path(&opts.cert.cert)])
                .args(["--tls-auth-clients", "no"]);
        } else {
            cmd.args(["--port", &port.to_string()]);
        }
        let mut process = Managed::spawn("redis-server", cmd, false)?;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                break;
            }
            if !process.is_running() || Instant::now() >= deadline {
                return Err(HarnessError::Process {
                    what: "redis-server".into(),
                    detail: format!("did not listen on {addr}\n{}", process.output_tail(10)),
                });
            }
            thread::sleep(Duration::from_millis(20));
        }
        Ok(RedisServer {
            process,
            endpoint: Endpoint {
                port,
                tls_ca: opts.tls.then(|| opts.cert.cert.clone()),
                user: opts.user.clone(),
                password: opts.password.clone(),
            },
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

    /// The server process (its log lines, e.g. for
    /// [`RunningServer::wait_for_line`](super::server::RunningServer::wait_for_line)).
    pub(super) fn process_mut(&mut self) -> &mut Managed {
        &mut self.process
    }

    /// Stops the server (SIGTERM, SIGKILL after 10 s).
    pub fn stop(mut self) {
        self.process.stop(Duration::from_secs(10));
    }
}
