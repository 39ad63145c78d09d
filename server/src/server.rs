//! Process start-up: shared state, one pinned executor per shard, the channel mesh, accept
//! loops, maintenance, and graceful shutdown.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use glommio::channels::channel_mesh::MeshBuilder;
use glommio::{LocalExecutorBuilder, Placement};
use shardline_auth::{CacheConfig, LoginGate, OffloadPool, Users, Verifier, VerifierConfig};
use shardline_metrics::Metrics;
use socket2::Socket;
use tracing::{error, info, warn};

use crate::accept::{accept_loop, ClientSlots, SpareDescriptors};
use crate::aof::{Aof, AppendOnly};
use crate::config::ServerConfig;
use crate::connection::{PlaintextLog, SilentConnections};
use crate::forward::{
    serve_peer_replies, serve_peer_requests, Peers, ReplyBatch, ShardBatch, BATCHES_IN_FLIGHT,
};
use crate::keyspace::Db;
use crate::runtime::RuntimeConfig;
use crate::shard::{InfoCounters, Shard, TaskQueues, EXPIRE_SWEEP_PERIOD};
use crate::shutdown::Shutdown;
use crate::slowlog::Slowlog;
use crate::tls::ServerTls;

/// Process-wide state shared by all shards (read-mostly; shards keep their hot state local).
pub struct Shared {
    /// The parsed command line.
    pub config: ServerConfig,
    /// Cached scripts and running scripts, for every shard ([`crate::scripting`]).
    pub scripts: crate::scripting::Scripts,
    /// Per shard: blocking commands of other shards' connections on their way to queue on
    /// that shard's keys ([`crate::blocking`]); while any is, the shard defers serving its
    /// waiters, so one that came first is not overtaken by a later one queued locally.
    pub blocking_in_flight: Vec<std::sync::atomic::AtomicUsize>,
    /// The users file as last loaded; SIGHUP swaps in a new one without dropping connections.
    pub users: ArcSwap<Users>,
    /// The password last given to `CONFIG SET requirepass` (empty before any, or after
    /// `""`), for CONFIG GET, as Redis keeps it: in memory only, never written in clear. Its
    /// lock also orders concurrent CONFIG SET requirepass rewrites of the users file.
    pub requirepass: std::sync::Mutex<zeroize::Zeroizing<Vec<u8>>>,
    /// Whether the maintenance loop sweeps expired keys (Redis `active_expire_enabled`; off
    /// only after `DEBUG SET-ACTIVE-EXPIRE 0`). Keys still expire when touched.
    pub active_expire: std::sync::atomic::AtomicBool,
    /// All Prometheus metric families.
    pub metrics: Metrics,
    /// Hashing threads for `--hash-mode offload`.
    pub offload: Option<OffloadPool>,
    /// Set by SIGINT/SIGTERM.
    pub shutdown: Shutdown,
    /// The TLS provider's process-wide setup (files, ticket keys); `None` with `--tls off`.
    pub tls: Option<ServerTls>,
    /// Source of CLIENT ID values (unique across shards).
    pub next_client_id: AtomicU64,
    /// When the server started (INFO uptime).
    pub started: Instant,
    /// CPU of each shard, by shard index.
    pub cpus: Vec<usize>,
    /// Address the listeners are bound to (with the real port when `--bind` said 0).
    pub bound: SocketAddr,
    /// Connected clients against `--maxclients` (process-wide, as in Redis).
    pub clients: ClientSlots,
    /// Descriptors held in reserve to refuse connections when descriptors run out.
    pub spare_fds: SpareDescriptors,
    /// The first error that stopped a shard while starting (a corrupt log): the process
    /// exits with it.
    pub startup_error: std::sync::Mutex<Option<String>>,
    /// A change of shard count in progress at start.
    pub reshard: Reshard,
}

/// A restart with another `--smp` ([`crate::aof::reshard`]): the old shard count and how far
/// the new shards are.
#[derive(Debug, Default)]
pub struct Reshard {
    /// Shard count of the existing logs when it differs from this start's.
    pub from: Option<usize>,
    /// New shards whose log is built.
    pub loaded: std::sync::atomic::AtomicUsize,
    /// Shard 0 has made the new logs the log.
    pub committed: std::sync::atomic::AtomicBool,
}

/// Each new shard builds its log from the old shards' logs; shard 0 commits when all are
/// done; every shard waits for the commit (polling: it happens once, before serving).
/// The configured thresholds of small hashes.
fn hash_limits(config: &ServerConfig) -> crate::keyspace::HashLimits {
    crate::keyspace::HashLimits {
        entries: config.hash_max_listpack_entries,
        value: config.hash_max_listpack_value,
    }
}

async fn reshard(shared: &Shared, id: usize, shards: usize, old: usize) -> Result<(), String> {
    use std::sync::atomic::Ordering;
    let data_dir = &shared.config.data_dir;
    let keys = crate::aof::reshard::load(
        data_dir,
        id,
        shards,
        old,
        shared.config.databases,
        hash_limits(&shared.config),
    )
    .await?;
    info!("shard {id}: took {keys} key(s) from the logs of {old} old shard(s)");
    shared.reshard.loaded.fetch_add(1, Ordering::SeqCst);
    let wait = Duration::from_millis(5);
    if id == 0 {
        while shared.reshard.loaded.load(Ordering::SeqCst) < shards {
            if shared.shutdown.is_requested() {
                return Err("stopped while the keys were moved to their new shards".into());
            }
            glommio::timer::sleep(wait).await;
        }
        crate::aof::reshard::commit(data_dir, shards)?;
        shared.reshard.committed.store(true, Ordering::SeqCst);
    }
    while !shared.reshard.committed.load(Ordering::SeqCst) {
        if shared.shutdown.is_requested() {
            return Err("stopped while the keys were moved to their new shards".into());
        }
        glommio::timer::sleep(wait).await;
    }
    Ok(())
}

impl Shared {
    /// Records `message` as the reason the server stops, logs it and requests shutdown.
    pub fn fail_start(&self, message: String) {
        error!("{message}");
        if let Ok(mut slot) = self.startup_error.lock() {
            slot.get_or_insert(message);
        }
        self.shutdown.request();
    }
}

/// Runs all shards until shutdown; returns when every shard has stopped.
///
/// `sockets` holds one listening socket per shard (see [`crate::listener::bind_reuseport`]).
/// Errors: an executor that cannot be created (e.g. RLIMIT_MEMLOCK too low) or has panicked.
pub fn run_shards(shared: Arc<Shared>, sockets: Vec<Socket>) -> Result<(), String> {
    let nr_shards = sockets.len();
    let mesh = MeshBuilder::<ShardBatch, _>::full(nr_shards, BATCHES_IN_FLIGHT);
    let reply_mesh = MeshBuilder::<ReplyBatch, _>::full(nr_shards, BATCHES_IN_FLIGHT);
    let mut handles = Vec::with_capacity(nr_shards);
    let shared_for_errors = shared.clone();
    for (index, socket) in sockets.into_iter().enumerate() {
        let cpu = shared.cpus[index];
        let shared = shared.clone();
        let meshes = (mesh.clone(), reply_mesh.clone());
        let builder = LocalExecutorBuilder::new(Placement::Fixed(cpu))
            .name(&format!("shard-{index}"))
            .preempt_timer(shared.config.task_quota())
            // Sockets do not use glommio's registered buffers; keep the locked memory small so
            // the default RLIMIT_MEMLOCK (8 MiB) suffices.
            .io_memory(64 << 10)
            .ring_depth(1024);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let handle = std::thread::Builder::new()
            .name(format!("shard-{index}"))
            .spawn(move || {
                let executor = match builder.make() {
                    Ok(executor) => executor,
                    Err(err) => {
                        let _ = ready_tx.send(Err(executor_error(index, cpu, &err.to_string())));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                executor.run(shard_main(index, shared, meshes, socket));
            })
            .map_err(|err| format!("cannot start shard {index}: {err}"))?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(message)) => {
                shared_for_errors.shutdown.request();
                return Err(message);
            }
            Err(_) => return Err(format!("shard {index} died while starting")),
        }
        handles.push(handle);
    }
    let mut failed = Vec::new();
    for (index, handle) in handles.into_iter().enumerate() {
        if handle.join().is_err() {
            failed.push(index);
        }
    }
    if let Some(message) = shared_for_errors
        .startup_error
        .lock()
        .ok()
        .and_then(|mut slot| slot.take())
    {
        return Err(message);
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("shard(s) {failed:?} stopped abnormally"))
    }
}

fn executor_error(index: usize, cpu: usize, err: &str) -> String {
    let mut text = format!("cannot start shard {index} on CPU {cpu}: {err}");
    let memlock = ["MemLock", "memlock", "Cannot allocate memory", "ENOMEM"];
    if memlock.iter().any(|needle| err.contains(needle)) {
        text.push_str(
            ". glommio needs at least 512 KiB of locked memory per shard: raise the limit with \
             `ulimit -l 65536` in the shell, `LimitMEMLOCK=64M` in the systemd unit, or \
             `--ulimit memlock=67108864` for containers",
        );
    }
    text
}

async fn shard_main(
    index: usize,
    shared: Arc<Shared>,
    (mesh, reply_mesh): (
        MeshBuilder<ShardBatch, glommio::channels::channel_mesh::Full>,
        MeshBuilder<ReplyBatch, glommio::channels::channel_mesh::Full>,
    ),
    socket: Socket,
) {
    // Every shard joins both meshes before anything can fail, so no peer waits on a join.
    let joined = (mesh.join().await, reply_mesh.join().await);
    let ((senders, receivers), (reply_senders, reply_receivers)) = match joined {
        (Ok(requests), Ok(replies)) => (requests, replies),
        _ => {
            error!("shard {index}: cannot join the cross-shard channel mesh");
            return;
        }
    };
    let id = senders.peer_id();
    if id != index {
        warn!("shard {index} got mesh peer id {id}; using the peer id as shard id");
    }
    let config = &shared.config;
    let tls = match &shared.tls {
        Some(setup) => match setup.shard_tls() {
            Ok(tls) => Some(tls),
            Err(err) => {
                error!("shard {id}: {err}");
                shared.shutdown.request();
                return;
            }
        },
        None => None,
    };
    let metrics = shared.metrics.shard(id);
    // Series that would otherwise appear at their first event exist from the start, so that
    // dashboards and rate() alerts see the first increment.
    metrics.export_task_queues(&TaskQueues::GROUPS);
    metrics.export_password_hash_mode(config.hash_mode.as_str());
    shardline_metrics::install_shard_monitor(
        id,
        shardline_metrics::StallConfig {
            task_quota: config.task_quota(),
            blocked_reactor_notify: Duration::from_millis(config.blocked_reactor_notify_ms),
            reports_per_minute: config.blocked_reactor_reports_per_minute,
            watchdog: true,
        },
        &shared.metrics,
    );
    let verifier = match Verifier::new(VerifierConfig {
        mode: config.hash_mode,
        max_password_bytes: config.max_password_bytes,
        offload: shared.offload.clone(),
        cache: CacheConfig {
            ttl: Duration::from_millis(config.credentials_cache_ttl_ms),
            capacity: config.credentials_cache_capacity,
        },
        yield_every_rounds: config.hash_yield_every_rounds,
        batch_kernel: config.hash_batch.kernel(),
    }) {
        Ok(verifier) => verifier,
        Err(err) => {
            error!("shard {id}: {err}");
            shared.shutdown.request();
            return;
        }
    };
    let login_gate = LoginGate::new(
        config.max_concurrent_logins,
        Duration::from_millis(config.login_queue_timeout_ms),
        (config.login_queue_lifo_ms > 0).then(|| Duration::from_millis(config.login_queue_lifo_ms)),
    );
    // The log replays unbounded (Redis's `mustObeyClient`); clients get the configured limit.
    let mut dbs: Vec<Db> = (0..config.databases)
        .map(|_| {
            let mut db = Db::new();
            db.set_max_string_len(u64::MAX);
            // The log replays under the configured thresholds, as Redis loads.
            db.set_hash_limits(hash_limits(config));
            db
        })
        .collect();
    let aof = match config.appendonly {
        AppendOnly::No => None,
        AppendOnly::Yes => {
            let started = Instant::now();
            if let Some(old) = shared.reshard.from {
                let shards = senders.nr_consumers();
                if let Err(err) = reshard(&shared, id, shards, old).await {
                    shared.fail_start(format!("shard {id}: {err}"));
                    senders.close();
                    reply_senders.close();
                    return;
                }
            }
            match Aof::open(&config.data_dir, id, config.appendfsync, &mut dbs).await {
                Ok(aof) => {
                    aof.writer
                        .set_fsync_yield(Duration::from_micros(config.aof_fsync_yield_us));
                    let files = {
                        let manifest = aof.manifest.borrow();
                        manifest.base.iter().count() + manifest.incrs.len()
                    };
                    info!(
                        "shard {id}: replayed {} command(s) from {files} file(s) of {} ({} \
                         bytes) in {:?}: {} keys; appending to {}",
                        aof.replayed.records,
                        aof.dir.display(),
                        aof.replayed.size,
                        started.elapsed(),
                        dbs.iter().map(Db::len).sum::<usize>(),
                        aof.path,
                    );
                    Some(aof)
                }
                Err(err) => {
                    shared.fail_start(format!("shard {id}: {err}"));
                    // Serve peers until they stop, so none waits on this shard forever.
                    senders.close();
                    reply_senders.close();
                    return;
                }
            }
        }
    };
    for db in &mut dbs {
        db.set_max_string_len(config.proto_max_bulk_len as u64);
    }
    let shard = Rc::new(Shard {
        id,
        nr_shards: senders.nr_consumers(),
        shared: shared.clone(),
        dbs: RefCell::new(dbs),
        peers: Peers::new(senders, reply_senders, config.cross_shard_queue),
        tls,
        verifier,
        login_gate,
        metrics,
        queues: TaskQueues::create(config.auth_shares),
        info: InfoCounters::default(),
        aof,
        silent: SilentConnections::default(),
        plaintext_log: PlaintextLog::default(),
        gate: Default::default(),
        runtime: RefCell::new(RuntimeConfig::from_config(config, shared.clients.max())),
        slowlog: Slowlog::default(),
        clock: crate::clock::CommandClock::default(),
        config_changed: event_listener::Event::new(),
        pubsub: crate::pubsub::Registry::default(),
        quiet_events: Cell::new(0),
        blocking: Default::default(),
        scripting: Default::default(),
    });
    shard.blocking.set_shard(&shard);
    shard.scripting.set_shard(&shard);
    if let Some(aof) = &shard.aof {
        shard.metrics.aof_replayed(aof.replayed.records);
    }
    let runtime = shard.runtime.borrow().clone();
    crate::runtime::apply(&shard, runtime);
    let log_tasks = shard.aof.as_ref().map(|aof| {
        let flusher = shard.spawn_main("aof-flush", aof.writer.clone().run_flusher());
        // The once-a-second task runs for the log's life (CONFIG SET appendfsync may switch
        // to everysec at any time).
        let everysec = shard.spawn_maintenance("aof-fsync", aof.writer.clone().run_everysec());
        (flusher, everysec)
    });

    let peer_server = shard.spawn_main(
        "cross-shard requests",
        serve_peer_requests(shard.clone(), receivers),
    );
    let outbox_tasks: Vec<_> = (0..shard.nr_shards)
        .filter(|&destination| destination != shard.id)
        .map(|destination| {
            let sender = shard.clone();
            shard.spawn_main("cross-shard sends", async move {
                sender.peers.run_outbox(destination).await
            })
        })
        .collect();
    let reply_server = shard.spawn_main(
        "cross-shard replies",
        serve_peer_replies(shard.clone(), reply_receivers),
    );
    let reply_tasks: Vec<_> = (0..shard.nr_shards)
        .filter(|&source| source != shard.id)
        .map(|source| {
            let replies = shard.peers.replies.clone();
            shard.spawn_main("cross-shard sends", async move {
                replies.run_outbox(source).await
            })
        })
        .collect();
    let maintenance = shard.spawn_maintenance("maintenance", maintenance_loop(shard.clone()));
    let accept = shard.spawn_main("accept", accept_loop(shard.clone(), socket));
    accept.await;

    // Stop accepting, let connections finish their in-flight replies (they close on the
    // shutdown signal), then release the mesh so peers can stop too.
    let deadline = Instant::now()
        + config
            .shutdown_timeout
            .saturating_sub(Duration::from_millis(250));
    while shard.info.connected_clients.get() > 0 && Instant::now() < deadline {
        glommio::timer::sleep(Duration::from_millis(5)).await;
    }
    let left = shard.info.connected_clients.get();
    if left > 0 {
        warn!(
            "shard {}: shutdown timeout: closing {left} connection(s) that did not finish",
            shard.id
        );
    }
    maintenance.cancel().await;
    shard.peers.close(outbox_tasks).await;
    peer_server.await;
    // No request can arrive any more: the replies owed are sent, then the reply mesh closes.
    shard.peers.replies.close(reply_tasks).await;
    reply_server.await;
    if let (Some(aof), Some((flusher, everysec))) = (&shard.aof, log_tasks) {
        aof.writer.flush().await;
        let stats = aof.writer.take_stats();
        info!(
            "shard {}: log closed (current file {}); since start: {} record(s), {} bytes \
             written in {} write(s), {} fdatasync(s) covering {} record(s)",
            shard.id,
            aof.writer.path(),
            stats.records,
            stats.bytes_written,
            stats.writes,
            stats.fsyncs,
            stats.records_synced
        );
        flusher.cancel().await;
        everysec.cancel().await;
    }
}

async fn maintenance_loop(shard: Rc<Shard>) {
    let sweep_keys = shard.shared.config.expire_sweep_keys;
    let mut last_tick = Instant::now();
    loop {
        glommio::timer::sleep(EXPIRE_SWEEP_PERIOD).await;
        // Also re-anchors the shard's command clock: commands see a wall-clock step within
        // one sweep period.
        let now = shard.clock.resync();
        // A cross-shard transaction running here must see no key vanish between two of its
        // commands (Redis never expires keys inside MULTI/EXEC): the sweep waits a period.
        if shard.gate.is_held()
            || !shard
                .shared
                .active_expire
                .load(std::sync::atomic::Ordering::Relaxed)
        {
            continue;
        }
        // Nor while CLIENT PAUSE is in force (Redis skips its active expire cycle then).
        if shard.info.pause.is_set() && shard.info.pause.current().is_some() {
            continue;
        }
        // Bounded work per step; continue while a step fills its budget and the quota allows.
        let databases = shard.dbs.borrow().len();
        for index in 0..databases {
            while !shard.gate.is_held() {
                let removed = {
                    let mut dbs = shard.dbs.borrow_mut();
                    let db = &mut dbs[index];
                    let removed = db.sweep_expired(now, sweep_keys);
                    if let Some(aof) = &shard.aof {
                        aof.log_expired(index, db);
                    }
                    if db.notifies() {
                        crate::notify::publish::after_command(&shard, &mut dbs, index);
                    }
                    removed
                };
                glommio::yield_if_needed().await;
                if removed < sweep_keys {
                    break;
                }
            }
        }
        crate::aof::rewrite::maybe_start(&shard);
        if last_tick.elapsed() >= Duration::from_secs(1) {
            last_tick = Instant::now();
            crate::stats::collect(&shard);
            shardline_metrics::maintenance_tick();
        }
    }
}
