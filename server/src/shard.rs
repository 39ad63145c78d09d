//! One shard: a pinned glommio executor with its own keyspace, listener, TLS acceptor, login
//! gate and metrics — Seastar's `sharded<T>`: one service object per shard, explicit hops to
//! the owner shard ([`crate::forward`]).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use glommio::{Latency, Shares, Task, TaskQueueHandle};
use shardline_auth::{LoginGate, LoginPermit, LoginShed, LoginStage, Verifier};
use shardline_metrics::ShardMetrics;

use crate::aof::{Aof, SyncPoint};
use crate::clock::CommandInstant;
use crate::connection::{PlaintextLog, SilentConnections};
use crate::forward::{await_reply, Admission, Peers, ShardJob, TxnId};
use crate::keyspace::slot::owner_shard;
use crate::keyspace::Db;
use crate::resp::Frame;
use crate::runtime::RuntimeConfig;
use crate::server::Shared;
use crate::slowlog::{ClientTag, Slowlog};
use crate::txn::gate::ShardGate;

/// The three task queues of a shard (glommio scheduling groups with static shares).
#[derive(Debug, Clone, Copy)]
pub struct TaskQueues {
    /// Command work and connections; 1000 shares.
    pub main: TaskQueueHandle,
    /// Password hashing in `--hash-mode yield`; `--auth-shares` shares, so a login storm cannot
    /// starve queries.
    pub auth: TaskQueueHandle,
    /// Expiry sweep and metric collection; 50 shares.
    pub maintenance: TaskQueueHandle,
}

impl TaskQueues {
    /// The queues' names, the `group` label of their metrics.
    pub const GROUPS: [&'static str; 3] = ["main", "auth", "maintenance"];

    /// Creates the queues on the current executor.
    pub fn create(auth_shares: usize) -> Self {
        let ex = glommio::executor();
        Self {
            main: ex.create_task_queue(Shares::Static(1000), Latency::NotImportant, "main"),
            auth: ex.create_task_queue(
                Shares::Static(auth_shares.max(1)),
                Latency::NotImportant,
                "auth",
            ),
            maintenance: ex.create_task_queue(
                Shares::Static(50),
                Latency::NotImportant,
                "maintenance",
            ),
        }
    }
}

/// Per-shard counters shown by INFO (Prometheus has its own, in [`ShardMetrics`]).
#[derive(Debug, Default)]
pub struct InfoCounters {
    /// Connections accepted since start.
    pub connections_received: Cell<u64>,
    /// Connections open now.
    pub connected_clients: Cell<u64>,
    /// Commands executed on behalf of this shard's connections.
    pub commands_processed: Cell<u64>,
    /// Connections refused or shed (login queue timeout, handshake failure).
    pub rejected_connections: Cell<u64>,
    /// Request bytes read from this shard's connections (INFO `total_net_input_bytes`).
    pub net_input_bytes: Cell<u64>,
    /// Reply bytes written (INFO `total_net_output_bytes`).
    pub net_output_bytes: Cell<u64>,
    /// Once-a-second samples behind INFO's `instantaneous_*` rates.
    pub rates: crate::introspection::rates::Rates,
    /// Calls and error replies per command and error code (INFO commandstats, errorstats).
    pub calls: Rc<crate::introspection::command_stats::CommandStats>,
    /// This shard's connections (CLIENT LIST, CLIENT KILL).
    pub clients: crate::introspection::clients::ClientRegistry,
    /// CLIENT PAUSE in force on this shard.
    pub pause: crate::introspection::pause::ClientPause,
    /// Keys evicted for `--maxmemory` since start (INFO `evicted_keys`).
    pub evicted_keys: Cell<u64>,
}

/// Everything one shard owns. Lives in an `Rc` on its executor; never crosses threads.
pub struct Shard {
    /// This shard's index, 0-based; also its peer id in the channel mesh.
    pub id: usize,
    /// Number of shards in the process.
    pub nr_shards: usize,
    /// Process-wide configuration and state.
    pub shared: Arc<Shared>,
    /// The slice of the keyspace this shard owns: one [`Db`] per database (`--databases`),
    /// indexed by database number (SELECT).
    pub dbs: RefCell<Vec<Db>>,
    /// Senders to every other shard.
    pub peers: Peers,
    /// This shard's TLS acceptor (`--tls-provider`); `None` with `--tls off`.
    pub tls: Option<crate::tls::ShardTls>,
    /// Password verification with the configured `--hash-mode`.
    pub verifier: Verifier,
    /// At most `--max-concurrent-logins` connections in handshake or hashing at once.
    pub login_gate: LoginGate,
    /// This shard's Prometheus handles.
    pub metrics: ShardMetrics,
    /// Task queues of this executor.
    pub queues: TaskQueues,
    /// Counters for INFO.
    pub info: InfoCounters,
    /// This shard's append-only log; `None` with `--appendonly no`.
    pub aof: Option<Aof>,
    /// Connections of this shard that have not sent their first byte.
    pub silent: SilentConnections,
    /// Rate limit of the log line about plaintext clients on the TLS port.
    pub plaintext_log: PlaintextLog,
    /// The gate cross-shard transactions hold while they run here ([`crate::txn::gate`]).
    pub gate: ShardGate,
    /// This shard's copy of the parameters CONFIG SET changes.
    pub runtime: RefCell<RuntimeConfig>,
    /// Commands that ran slower than `slowlog-log-slower-than` on this shard.
    pub slowlog: Slowlog,
    /// Converts a command's start instant to the Unix ms its expiry and LRU decisions use.
    pub clock: crate::clock::CommandClock,
    /// Notified when CONFIG SET installed a new [`RuntimeConfig`] (connections re-read
    /// `timeout`).
    pub config_changed: event_listener::Event,
    /// The Pub/Sub subscriptions of this shard's connections ([`crate::pubsub`]).
    pub pubsub: crate::pubsub::Registry,
    /// While a step of a composed command runs: the classes of keyspace events it drops
    /// ([`crate::notify::flags`] bits; 0 = none), the composition publishing the command's
    /// own ([`crate::notify::publish::composed`]).
    pub quiet_events: Cell<u16>,
    /// Blocked clients: waiters on this shard's keys, and this shard's blocked connections.
    pub blocking: crate::blocking::Blocking,
    /// This shard's Lua VM ([`crate::scripting`]).
    pub scripting: crate::scripting::ShardScripting,
}

impl Shard {
    /// Spawns `fut`, instrumented for stall accounting, into the `main` task queue; `what`
    /// names the task in stall reports until it sets its own activity.
    pub fn spawn_main<T: 'static>(
        &self,
        what: &'static str,
        fut: impl Future<Output = T> + 'static,
    ) -> Task<T> {
        spawn_into("main", self.queues.main, what, fut)
    }

    /// Spawns `fut`, instrumented, into the `auth` task queue.
    pub fn spawn_auth<T: 'static>(&self, fut: impl Future<Output = T> + 'static) -> Task<T> {
        spawn_into("auth", self.queues.auth, "auth-hash", fut)
    }

    /// Spawns `fut`, instrumented, into the `maintenance` task queue.
    pub fn spawn_maintenance<T: 'static>(
        &self,
        what: &'static str,
        fut: impl Future<Output = T> + 'static,
    ) -> Task<T> {
        spawn_into("maintenance", self.queues.maintenance, what, fut)
    }

    /// Waits for a login slot (`--max-concurrent-logins`) for `stage` (the TLS handshake, or
    /// a password verification), counting a wait and a shed in the metrics.
    pub async fn admit_login(&self, stage: LoginStage) -> Result<LoginPermit, LoginShed> {
        let waited_before = self.login_gate.waited_total();
        let admitted = self.login_gate.admit(stage).await;
        if self.login_gate.waited_total() != waited_before {
            self.metrics.login_admission_waited();
        }
        if admitted.is_err() {
            self.metrics.connection_shed();
        }
        admitted
    }

    /// The owner shard of `key`.
    pub fn owner_of(&self, key: &[u8]) -> usize {
        if self.nr_shards == 1 {
            return 0;
        }
        owner_shard(key, self.nr_shards)
    }

    /// Executes one keyspace command on database `db` of this shard's own keyspace (the
    /// caller's selected database; MOVE, SWAPDB and FLUSHALL reach the others:
    /// [`crate::cmd::databases`]), timing it from now.
    ///
    /// A panic in a command handler (a bug) fails that one command with an error instead of
    /// taking the shard down.
    ///
    /// With `--appendonly yes` the command's record (if it changed the keyspace) is appended
    /// to the shard's log, after a `SELECT` when the log's last record was for another
    /// database, before this returns; under `appendfsync always` the caller must not send
    /// the reply before [`Shard::durable`]'s signal.
    pub fn execute_local(&self, db: usize, args: &[Bytes]) -> Frame {
        let frame = self
            .execute_timed(db, args, CommandInstant::now(), false, None)
            .0;
        crate::blocking::after_command(self);
        frame
    }

    /// As [`Shard::execute_local`], for a client's whole command (all its keys live here):
    /// logged in this shard's SLOWLOG as `client`'s when slow. Parts of a command spread
    /// over shards and steps of composed commands go through [`Shard::execute_local`]
    /// instead: the client's shard logs the whole command ([`crate::slowlog`]).
    pub fn execute_client(&self, db: usize, args: &[Bytes], client: &ClientTag) -> Frame {
        let frame = self
            .execute_timed(db, args, CommandInstant::now(), false, Some(client))
            .0;
        crate::blocking::after_command(self);
        frame
    }

    /// As [`Shard::execute_local`], for a command that started at `started` (an instant read
    /// on this shard just before, e.g. for INFO commandstats): that one clock read also gives
    /// the command's Unix time ([`crate::clock::CommandClock`]) and the start of its SLOWLOG
    /// timing; a slow command is logged as `client`'s ([`Shard::execute_client`]). Returns
    /// the reply and the instant the command finished.
    pub fn execute_local_at(
        &self,
        db: usize,
        args: &[Bytes],
        started: CommandInstant,
        client: &ClientTag,
    ) -> (Frame, CommandInstant) {
        let (frame, finished) = self.execute_timed(db, args, started, true, Some(client));
        crate::blocking::after_command(self);
        (frame, finished.unwrap_or_else(CommandInstant::now))
    }

    /// Runs the command; the finish instant is read when `want_finish` or when the command is
    /// a client's (`client`) and the slowlog is on.
    fn execute_timed(
        &self,
        db: usize,
        args: &[Bytes],
        started: CommandInstant,
        want_finish: bool,
        client: Option<&ClientTag>,
    ) -> (Frame, Option<CommandInstant>) {
        if let Some(refusal) = self.refuse_write(args) {
            return (refusal, None);
        }
        let mut dbs = self.dbs.borrow_mut();
        if db >= dbs.len() {
            return (Frame::error(crate::cmd::databases::OUT_OF_RANGE), None);
        }
        self.sync_expiry_pause(&mut dbs);
        let now_ms = self.clock.unix_ms(started);
        let evicted_before = self.info.evicted_keys.get();
        if let Some(oom) = crate::eviction::before_command(self, &mut dbs, db, args, now_ms) {
            // The keys evicted before the refusal still make their `evicted` events.
            if dbs[db].notifies() {
                crate::notify::publish::after_command(self, &mut dbs, db);
            }
            return (oom, None);
        }
        // The SLOWLOG times the command itself, not the evictions made room for it (Redis
        // `call` vs `performEvictions`).
        let started = if self.info.evicted_keys.get() == evicted_before {
            started
        } else {
            CommandInstant::now()
        };
        let dirty_before = dbs[db].dirty();
        let (slower_than, slowlog_len) = {
            let runtime = self.runtime.borrow();
            (runtime.slowlog_log_slower_than, runtime.slowlog_max_len)
        };
        let run = || crate::cmd::databases::execute_in(&mut dbs, db, args, now_ms);
        let frame =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|_| {
                tracing::error!("shard {}: a command handler panicked", self.id);
                Frame::error("ERR internal error while executing the command")
            });
        let logged = client.filter(|_| slower_than >= 0);
        let finished = (want_finish || logged.is_some()).then(CommandInstant::now);
        if let (Some(finished), Some(client)) = (finished, logged) {
            let micros =
                u64::try_from(finished.duration_since(started).as_micros()).unwrap_or(u64::MAX);
            self.slowlog
                .record(args, micros, slower_than, slowlog_len, client);
        }
        if let Some(aof) = &self.aof {
            aof.log_command(&mut dbs, db, args, &frame, dirty_before);
        }
        if dbs[db].notifies() {
            crate::notify::publish::after_command(self, &mut dbs, db);
        }
        (frame, finished)
    }

    /// Logs a command of `client` that started at `started` (read on this shard) and ended
    /// now in this shard's SLOWLOG, when it was slow: the commands not timed by their owner
    /// shard ([`crate::slowlog`]).
    pub fn log_if_slow(&self, args: &[Bytes], started: CommandInstant, client: &ClientTag) {
        let (slower_than, max_len) = {
            let runtime = self.runtime.borrow();
            (runtime.slowlog_log_slower_than, runtime.slowlog_max_len)
        };
        if slower_than < 0 {
            return;
        }
        let micros = u64::try_from(
            CommandInstant::now()
                .saturating_duration_since(started)
                .as_micros(),
        )
        .unwrap_or(u64::MAX);
        self.slowlog
            .record(args, micros, slower_than, max_len, client);
    }

    /// Tells the databases whether a CLIENT PAUSE is in force ([`Db::pause_expiry`]): read
    /// only while a pause is set, and written only when that changed.
    fn sync_expiry_pause(&self, dbs: &mut [Db]) {
        let paused = self.info.pause.is_set() && self.info.pause.current().is_some();
        if dbs.first().is_some_and(|db| db.expiry_paused() != paused) {
            dbs.iter_mut().for_each(|db| db.pause_expiry(paused));
        }
    }

    /// As [`Shard::execute_local`], for a step of a command composed of steps on several
    /// shards: the step's own keyspace events are dropped (the composition publishes the
    /// command's, [`crate::notify::publish::composed`]).
    pub fn execute_step(&self, db: usize, args: &[Bytes]) -> Frame {
        self.execute_dropping(u16::MAX, db, args)
    }

    /// As [`Shard::execute_local`], dropping the keyspace events of the classes `classes`
    /// (a read step whose `keymiss` the composed command would not report).
    pub fn execute_dropping(&self, classes: u16, db: usize, args: &[Bytes]) -> Frame {
        self.quiet_events.set(classes);
        let frame = self.execute_local(db, args);
        self.quiet_events.set(0);
        frame
    }

    /// Redis's `MISCONF` refusal of a write command while this shard's log cannot be written
    /// (e.g. a full disk): acknowledging it would promise what a crash loses. `None` when the
    /// command may run.
    fn refuse_write(&self, args: &[Bytes]) -> Option<Frame> {
        let error = self.aof.as_ref()?.writer.write_error()?;
        let spec = args
            .first()
            .and_then(|name| crate::cmd::table::lookup(name))?;
        spec.has_flag("write")
            .then(|| Frame::error(format!("MISCONF Errors writing to the AOF file: {error}")))
    }

    /// Runs `job` (commands of one transaction) with its log records wrapped in MULTI/EXEC,
    /// so replay applies them all or none.
    ///
    /// Blocked clients are served after the whole transaction, not between its commands
    /// (Redis serves them after EXEC).
    pub fn execute_transaction(&self, job: impl FnOnce() -> Frame) -> Frame {
        self.blocking.transaction(true);
        let frame = match &self.aof {
            None => job(),
            Some(aof) => {
                let mark = aof.writer.mark();
                let frame = job();
                aof.writer.wrap_multi(mark);
                frame
            }
        };
        self.blocking.transaction(false);
        crate::blocking::after_command(self);
        frame
    }

    /// With `appendfsync always` and records not yet on disk: the point they must reach
    /// before a reply computed now may leave. `None` when a reply may leave now.
    pub fn durable(&self) -> Option<SyncPoint> {
        self.aof.as_ref()?.writer.sync_point()
    }

    /// `frame` once the records appended so far are on disk (see [`Shard::durable`]).
    pub async fn durable_reply(&self, frame: Frame) -> Frame {
        if let Some(point) = self.durable() {
            point.reached().await;
        }
        frame
    }

    /// Runs `job` on shard `owner` — here if it is this shard, else after a hop — and returns
    /// its reply once durable. For connection-level commands (SAVE, WATCH …): the job does not
    /// wait for a cross-shard transaction's gate, so such a command queued inside MULTI
    /// cannot wait for its own transaction. Keyspace commands use [`Shard::run_on_in`].
    pub async fn run_on(&self, owner: usize, job: ShardJob) -> Frame {
        self.run_admitted(owner, Admission::Ungated, job).await
    }

    /// Runs keyspace work `job` on shard `owner` and returns its reply once durable: as work
    /// of transaction `txn` (which holds `owner`'s gate), or with `None` once no transaction
    /// holds the gate.
    pub async fn run_on_in(&self, owner: usize, txn: Option<TxnId>, job: ShardJob) -> Frame {
        self.run_admitted(owner, admission(txn), job).await
    }

    async fn run_admitted(&self, owner: usize, admission: Admission, job: ShardJob) -> Frame {
        if owner != self.id {
            let receiver = self.peers.submit_admitted(owner, admission, job).await;
            return await_reply(receiver).await;
        }
        match self.run_gated(admission, job) {
            Ok(frame) => self.durable_reply(frame).await,
            // A parked job's reply already waits for the log.
            Err(receiver) => await_reply(receiver).await,
        }
    }

    /// Runs `make_job(shard)`'s job on every shard and returns the replies in shard order,
    /// each once durable. Not gated (see [`Shard::run_on`]).
    pub async fn run_on_all(&self, make_job: impl Fn() -> ShardJob) -> Vec<Frame> {
        self.run_on_every_shard(make_job, true, Admission::Ungated)
            .await
    }

    /// As [`Shard::run_on_all`], for keyspace work of transaction `txn` (which holds every
    /// gate), or with `None` gated.
    pub async fn run_on_all_in(
        &self,
        txn: Option<TxnId>,
        make_job: impl Fn() -> ShardJob,
    ) -> Vec<Frame> {
        self.run_on_every_shard(make_job, true, admission(txn))
            .await
    }

    /// As [`Shard::run_on_all`], for jobs that only read counters and sizes (INFO): the
    /// replies do not wait for any shard's log to reach the disk, so they come even while a
    /// log cannot be written.
    pub async fn run_stats_on_all(&self, make_job: impl Fn() -> ShardJob) -> Vec<Frame> {
        self.run_on_every_shard(make_job, false, Admission::Ungated)
            .await
    }

    async fn run_on_every_shard(
        &self,
        make_job: impl Fn() -> ShardJob,
        durable: bool,
        admission: Admission,
    ) -> Vec<Frame> {
        // Every other shard's job is queued first, so they all run while this one's does.
        let mut pending = Vec::with_capacity(self.nr_shards);
        for owner in 0..self.nr_shards {
            pending.push(if owner == self.id {
                None
            } else {
                let job = make_job();
                Some(self.peers.submit(owner, job, durable, admission).await)
            });
        }
        let mut replies = Vec::with_capacity(self.nr_shards);
        for receiver in pending {
            replies.push(match receiver {
                Some(receiver) => await_reply(receiver).await,
                None => match self.run_gated(admission, make_job()) {
                    Ok(frame) if durable => self.durable_reply(frame).await,
                    Ok(frame) => frame,
                    Err(receiver) => await_reply(receiver).await,
                },
            });
        }
        replies
    }
}

/// The admission of work run for `txn`, or of ordinary keyspace work.
pub fn admission(txn: Option<TxnId>) -> Admission {
    txn.map_or(Admission::Gated, Admission::Txn)
}

fn spawn_into<T: 'static>(
    queue: &'static str,
    handle: TaskQueueHandle,
    what: &'static str,
    fut: impl Future<Output = T> + 'static,
) -> Task<T> {
    let fut = shardline_metrics::instrument(queue, fut)
        .with_activity(shardline_metrics::Activity::Other(what));
    match glommio::spawn_local_into(fut, handle) {
        Ok(task) => task,
        // Only possible for a handle of another executor: a programming error.
        Err(err) => panic!("task queue {queue} does not belong to this executor: {err}"),
    }
}

/// Milliseconds since the Unix epoch (Redis expiry times are absolute Unix ms).
pub fn unix_time_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// How often the expiry sweep runs on each shard.
pub const EXPIRE_SWEEP_PERIOD: Duration = Duration::from_millis(100);
