//! From a parsed command line to running shards: data directory, dev certificate and users on
//! first run, metrics endpoint, signal handling.

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use rand::distributions::{Alphanumeric, DistString};
use shardline_auth::{OffloadPool, Users, UsersLimits};
use shardline_metrics::labels::users_reload;
use shardline_metrics::{EndpointLimits, Metrics};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use tracing::{error, info, warn};

use crate::accept::{ClientSlots, SpareDescriptors};
use crate::aof::AppendOnly;
use crate::config::{ServerConfig, TlsSwitch};
use crate::cpus::{allowed_cpus, helper_cpus, pin_current_thread, shard_cpus};
use crate::fd_limit::{adjust_open_files_limit, reserved_fds, show_limit, FdBudget};
use crate::listener::bind_reuseport;
use crate::server::{run_shards, Shared};
use crate::tls::{ensure_dev_certificate, ServerTls, TlsFiles};

/// Smallest `--task-quota-ms`: at 0.01 ms glommio's preempt timer fired so often that the
/// shard answered nothing (a fresh-user trial); 0.05 ms still serves.
const MIN_TASK_QUOTA_MS: f64 = 0.05;
/// Largest `--task-quota-ms` (a stall is a poll longer than twice it).
const MAX_TASK_QUOTA_MS: f64 = 1000.0;

/// Runs the server with `config` until SIGINT/SIGTERM. Errors are one-line explanations for
/// the operator (bad flag values, unreadable files, ports in use, locked-memory limit).
pub fn run(config: ServerConfig) -> Result<(), String> {
    if config.disable_thp == crate::thp::DisableThp::Yes {
        crate::thp::disable_for_process().map_err(|err| {
            format!("prctl(PR_SET_THP_DISABLE) failed: {err} (start with --disable-thp no)")
        })?;
    }
    let allowed = allowed_cpus().map_err(|err| format!("sched_getaffinity failed: {err}"))?;
    let cpus = shard_cpus(&allowed, config.smp)?;
    if !(MIN_TASK_QUOTA_MS..=MAX_TASK_QUOTA_MS).contains(&config.task_quota_ms) {
        return Err(format!(
            "--task-quota-ms must be between {MIN_TASK_QUOTA_MS} and {MAX_TASK_QUOTA_MS} \
             milliseconds, got {} (below, the preempt timer leaves no time to run tasks; \
             above, no poll would ever count as a stall)",
            config.task_quota_ms
        ));
    }
    if config.handshake_max_ms < config.handshake_timeout_ms {
        return Err(format!(
            "--handshake-max-ms ({}) must be at least --handshake-timeout-ms ({})",
            config.handshake_max_ms, config.handshake_timeout_ms
        ));
    }

    crate::io_uring_probe::check()?;
    // The addresses first: a port in use must stop the start before anything is written
    // (certificate, users file) or printed (a password and a connect line for someone
    // else's port).
    let (sockets, bound) = bind_reuseport(config.bind, config.backlog, cpus.len())
        .map_err(|err| format!("cannot listen on {}: {err}", config.bind))?;

    // Threads spawned from here on (metrics endpoint, offload pool, signals) inherit this
    // mask; each shard thread pins itself to its own CPU.
    let helpers = helper_cpus(&allowed, &cpus);
    pin_current_thread(&helpers)
        .map_err(|err| format!("cannot pin helper threads to CPU(s) {helpers:?}: {err}"))?;
    let metrics = Metrics::new();
    // Every per-shard series whose labels are known now exists, at 0, before the endpoint
    // answers its first scrape: shards register theirs (again, idempotently) only once they
    // start, after their log replay.
    for id in 0..cpus.len() {
        let shard = metrics.shard(id);
        shard.export_task_queues(&crate::shard::TaskQueues::GROUPS);
        shard.export_password_hash_mode(config.hash_mode.as_str());
    }
    let metrics_server = shardline_metrics::serve_with(
        config.metrics_bind,
        metrics.clone(),
        EndpointLimits {
            max_concurrent_scrapes: config.metrics_max_concurrent_scrapes,
            request_timeout: Duration::from_millis(config.metrics_request_timeout_ms),
        },
    )
    .map_err(|err| err.to_string())?;
    shardline_metrics::start_stall_watchdog(Duration::from_millis(
        config.blocked_reactor_notify_ms,
    ));

    let tls = prepare_tls(&config)?;
    let users_path = config.users_path();
    prepare_users(&config, &users_path, bound)?;
    let limits = users_limits(&config);
    let users = Users::load(&users_path, &limits).map_err(|err| err.to_string())?;
    let libraries = crate::scripting::library_store::load(&crate::scripting::library_store::path(
        &config.data_dir,
    ))
    .map_err(|err| format!("cannot load the function libraries: {err}"))?;

    // Held (open and locked) until `run` returns.
    let _data_dir_lock = match config.appendonly {
        AppendOnly::Yes => {
            ensure_data_dir(&config)?;
            Some(lock_data_dir(&config)?)
        }
        AppendOnly::No => None,
    };
    let reshard_from = if config.appendonly == AppendOnly::Yes {
        crate::aof::reshard::prepare(&config.data_dir, cpus.len())?
    } else {
        let logs = crate::aof::log_dir(&config.data_dir);
        if logs.is_dir() {
            warn!(
                "--appendonly no: the append-only logs in {} are neither loaded nor written; \
                 the server starts empty and keeps nothing (they are loaded again by a start \
                 with --appendonly yes)",
                logs.display()
            );
        }
        None
    };
    if let Some(old) = reshard_from {
        info!(
            "the logs were written by {old} shard(s), this start has {}: moving every key to \
             its new owner shard",
            cpus.len()
        );
    }
    let fd_budget = raise_open_files_limit(&config, cpus.len())?;
    let offload = match config.hash_mode {
        shardline_auth::HashMode::Offload => Some(
            OffloadPool::with_batching(
                config.hash_threads.max(1),
                config.hash_queue_capacity,
                config.hash_batch.kernel(),
            )
            .map_err(|err| format!("cannot start hashing threads: {err}"))?,
        ),
        _ => None,
    };

    info!(
        "shardline {} starting: {} shard(s) on CPU(s) {:?}, other threads on CPU(s) {:?}, \
         listening on {} ({}), metrics on http://{}/metrics, hash mode {} (batching: {}), task \
         quota {} ms, \
         cert {}, users {}",
        env!("CARGO_PKG_VERSION"),
        cpus.len(),
        cpus,
        helpers,
        bound,
        tls.as_ref()
            .map(|t| format!("TLS by {}", t.provider()))
            .unwrap_or_else(|| "plain TCP".into()),
        metrics_server.local_addr(),
        config.hash_mode,
        config
            .hash_batch
            .kernel()
            .map(|k| format!("{} lanes, {}", k.lanes(), k.as_str()))
            .unwrap_or_else(|| "off".into()),
        config.task_quota_ms,
        tls.as_ref()
            .map(|t| t.files.cert.display().to_string())
            .unwrap_or_else(|| "none (--tls off)".into()),
        users_path.display(),
    );

    let spare_fds = SpareDescriptors::new(cpus.len());
    let blocking_in_flight = (0..cpus.len())
        .map(|_| std::sync::atomic::AtomicUsize::new(0))
        .collect();
    let shared = Arc::new(Shared {
        scripts: crate::scripting::Scripts::new(cpus.len(), libraries),
        config,
        blocking_in_flight,
        users: ArcSwap::from_pointee(users),
        requirepass: Default::default(),
        active_expire: std::sync::atomic::AtomicBool::new(true),
        metrics,
        offload,
        shutdown: Default::default(),
        tls,
        next_client_id: AtomicU64::new(1),
        started: Instant::now(),
        cpus,
        bound,
        clients: ClientSlots::new(fd_budget.max_clients),
        spare_fds,
        startup_error: Default::default(),
        reshard: crate::server::Reshard {
            from: reshard_from,
            ..Default::default()
        },
    });
    if let Some(tls) = &shared.tls {
        let rotations = shared.metrics.tls_ticket_key_rotations();
        tls.spawn_rotation(move || rotations.inc())
            .map_err(|err| format!("cannot start the ticket-key rotation thread: {err}"))?;
    }
    let signals = spawn_signal_thread(shared.clone(), users_path, limits)?;
    let result = run_shards(shared.clone(), sockets);
    signals.close();
    metrics_server.shutdown();
    if result.is_ok() {
        info!("shardline stopped");
    }
    result
}

/// Raises RLIMIT_NOFILE for `--maxclients` and logs what it got (Redis 7: lowers maxclients
/// with a warning when the hard limit is too low).
fn raise_open_files_limit(config: &ServerConfig, shards: usize) -> Result<FdBudget, String> {
    let reserved = reserved_fds(shards, config.metrics_max_concurrent_scrapes);
    let budget = adjust_open_files_limit(config.maxclients, reserved)?;
    let limits = format!(
        "open files limit {} (was {}, hard limit {})",
        budget.limit,
        budget.previous,
        show_limit(budget.hard)
    );
    if budget.max_clients < config.maxclients {
        warn!(
            "{limits}: --maxclients {} needs {} file descriptors ({reserved} reserved for the \
             server itself); maxclients lowered to {}. Raise the limit with `ulimit -n`, \
             `LimitNOFILE=` in the systemd unit or `--ulimit nofile=` for containers",
            config.maxclients,
            config.maxclients as u64 + reserved,
            budget.max_clients
        );
    } else {
        info!(
            "{limits}: room for --maxclients {} and {reserved} descriptors reserved for the \
             server itself",
            config.maxclients
        );
    }
    Ok(budget)
}

fn users_limits(config: &ServerConfig) -> UsersLimits {
    UsersLimits {
        max_hash_rounds: config.max_hash_rounds,
    }
}

/// Name of the lock file in the data directory.
pub const LOCK_FILE: &str = "shardline.lock";

/// Takes an exclusive lock (`flock(2)`) on `<data-dir>/shardline.lock`, held while the
/// returned file is open: a second server on the same data directory would append to the same
/// logs and one's rewrite would discard the other's acknowledged writes.
///
/// Errors: the lock is held by another process (naming the directory and what to do), or the
/// file cannot be opened.
fn lock_data_dir(config: &ServerConfig) -> Result<fs::File, String> {
    let path = config.data_dir.join(LOCK_FILE);
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|err| format!("cannot open {}: {err}", path.display()))?;
    // SAFETY: flock only takes the descriptor, which `file` keeps open.
    let rc = unsafe {
        libc::flock(
            std::os::fd::AsRawFd::as_raw_fd(&file),
            libc::LOCK_EX | libc::LOCK_NB,
        )
    };
    if rc == 0 {
        return Ok(file);
    }
    let err = std::io::Error::last_os_error();
    if err.kind() == std::io::ErrorKind::WouldBlock {
        return Err(format!(
            "data dir {} is in use by another shardline process (it holds the lock on {}): two \
             servers appending to the same logs would lose acknowledged writes. Stop that \
             server, or give this one another --data-dir",
            config.data_dir.display(),
            path.display()
        ));
    }
    Err(format!("cannot lock {}: {err}", path.display()))
}

fn ensure_data_dir(config: &ServerConfig) -> Result<(), String> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&config.data_dir)
        .map_err(|err| {
            format!(
                "cannot create data dir {}: {err}",
                config.data_dir.display()
            )
        })
}

fn prepare_tls(config: &ServerConfig) -> Result<Option<ServerTls>, String> {
    if config.tls == TlsSwitch::Off {
        warn!("--tls off: connections are NOT encrypted; use only to measure TLS overhead");
        return Ok(None);
    }
    let files = match (&config.tls_cert, &config.tls_key) {
        (Some(cert), Some(key)) => TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: config.tls_ca.clone(),
        },
        (None, None) => {
            ensure_data_dir(config)?;
            let files = TlsFiles {
                cert: config.data_dir.join("cert.pem"),
                key: config.data_dir.join("key.pem"),
                client_ca: config.tls_ca.clone(),
            };
            if ensure_dev_certificate(&files.cert, &files.key).map_err(|err| err.to_string())? {
                info!(
                    "generated a self-signed development certificate {} (clients: --cacert {})",
                    files.cert.display(),
                    files.cert.display()
                );
            }
            files
        }
        _ => return Err("--tls-cert and --tls-key must be given together".into()),
    };
    // Fail at start-up, not on the first connection; a missing file gets a plain message
    // rather than OpenSSL's error queue.
    for (flag, path) in [
        ("--tls-cert", Some(&files.cert)),
        ("--tls-key", Some(&files.key)),
        ("--tls-ca", files.client_ca.as_ref()),
    ] {
        if let Some(path) = path {
            fs::metadata(path)
                .map_err(|err| format!("cannot read {flag} {}: {err}", path.display()))?;
        }
    }
    if let Ok(meta) = fs::metadata(&files.key) {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if key_mode_is_loose(mode) {
            warn!(
                path = %files.key.display(),
                mode = format!("{mode:o}"),
                "TLS private key is accessible to others; chmod 600 it (640 with the server's group)"
            );
        }
    }
    ServerTls::new(config.tls_provider, files, config.tls_ticket_key_rotation)
        .map(Some)
        .map_err(|err| err.to_string())
}

/// Whether a private key file's permission bits (`st_mode & 0o777`) let users other than its
/// owner and group read or write it.
fn key_mode_is_loose(mode: u32) -> bool {
    mode & 0o007 != 0
}

/// Creates the users file with user `default` and a random password, printed once with a
/// redis-cli line for the listening address `bound`, unless a users file exists or was named.
fn prepare_users(
    config: &ServerConfig,
    path: &std::path::Path,
    bound: std::net::SocketAddr,
) -> Result<(), String> {
    if path.exists() || config.users.is_some() {
        return Ok(());
    }
    ensure_data_dir(config)?;
    let password = zeroize::Zeroizing::new(Alphanumeric.sample_string(&mut rand::thread_rng(), 24));
    shardline_auth::set_user_password(path, "default", password.as_bytes(), 5000)
        .map_err(|err| format!("cannot create users file {}: {err}", path.display()))?;
    // Printed once, on stdout, so it can be captured; it is not stored in clear anywhere. A
    // closed stdout is not an error worth dying for (println! would panic).
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "shardline: created {} with user 'default' and password: {}",
        path.display(),
        password.as_str()
    );
    let _ = writeln!(
        out,
        "shardline: connect with: redis-cli {}-h {} -p {} --user default --pass {}",
        match config.tls {
            TlsSwitch::On => format!(
                "--tls --cacert {} ",
                config
                    .tls_cert
                    .clone()
                    .unwrap_or_else(|| config.data_dir.join("cert.pem"))
                    .display()
            ),
            TlsSwitch::Off => String::new(),
        },
        client_host(bound.ip()),
        bound.port(),
        password.as_str()
    );
    let _ = out.flush();
    Ok(())
}

/// The address a local client uses to reach `bind`: loopback for a wildcard bind.
fn client_host(bind: std::net::IpAddr) -> std::net::IpAddr {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    match bind {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    }
}

fn spawn_signal_thread(
    shared: Arc<Shared>,
    users_path: std::path::PathBuf,
    limits: UsersLimits,
) -> Result<signal_hook::iterator::Handle, String> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])
        .map_err(|err| format!("cannot install signal handlers: {err}"))?;
    let handle = signals.handle();
    let reloads = shared.metrics.users_reloads();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                match signal {
                    SIGHUP => match Users::load(&users_path, &limits) {
                        Ok(users) => {
                            let count = users.len();
                            shared.users.store(Arc::new(users));
                            reloads.with_label_values(&[users_reload::OK]).inc();
                            info!("reloaded {} ({count} users)", users_path.display());
                        }
                        Err(err) => {
                            reloads.with_label_values(&[users_reload::REFUSED]).inc();
                            error!("users file not reloaded, keeping the old users: {err}");
                        }
                    },
                    _ => {
                        // Act first, log last: logging to a closed pipe must not keep the
                        // process alive.
                        shared.shutdown.request();
                        let timeout = shared.config.shutdown_timeout;
                        std::thread::spawn(move || {
                            std::thread::sleep(timeout + Duration::from_millis(200));
                            warn!(
                                "shutdown timeout ({timeout:?}) expired: exiting with work \
                                 unfinished (a shard is blocked or a reply was not sent)"
                            );
                            std::process::exit(0);
                        });
                        info!("signal {signal}: shutting down (timeout {timeout:?})");
                    }
                }
            }
        })
        .map_err(|err| format!("cannot start the signal thread: {err}"))?;
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use super::key_mode_is_loose;

    #[test]
    fn a_key_readable_by_others_is_loose_and_by_its_group_is_not() {
        assert!(key_mode_is_loose(0o644));
        assert!(key_mode_is_loose(0o602));
        assert!(!key_mode_is_loose(0o600));
        assert!(!key_mode_is_loose(0o640));
        assert!(!key_mode_is_loose(0o440));
    }
}
