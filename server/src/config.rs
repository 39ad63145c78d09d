//! Command-line and environment configuration; README.md lists every option.
//!
//! Every flag may also come from an environment variable `SHARDLINE_<NAME>` (upper case,
//! `-` → `_`), e.g. `SHARDLINE_SMP=2`. Flags follow ScyllaDB's names where ScyllaDB has the
//! concept (`--smp`, `--task-quota-ms`, `--blocked-reactor-notify-ms`) and Redis's where Redis has
//! it (`--enable-debug-command`, `--proto-max-bulk-len`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use shardline_auth::{HashBatch, HashMode};

use crate::aof::{AppendFsync, AppendOnly};

/// Default `--max-hash-rounds`: a hash costing more than ~0.25 s is never paid at login.
pub const DEFAULT_MAX_HASH_ROUNDS: u32 = 1_000_000;

/// `shardline [OPTIONS]` runs the server; `shardline passwd USER` edits the users file;
/// `shardline check-aof [--fix] FILE` checks an append-only log.
#[derive(Debug, Parser)]
#[command(
    name = "shardline",
    version,
    about = "Thread-per-core, Redis-compatible key-value server over TLS"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub server: ServerConfig,
}

/// Subcommands other than running the server.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Add or replace USER in the users file; the password is read from the terminal without
    /// echo, or from standard input (one line) when it is not a terminal.
    Passwd {
        /// User name to add or replace.
        user: String,
        /// Users file to edit, created if missing (default: <data-dir>/users, which must
        /// exist).
        #[arg(long, env = "SHARDLINE_USERS")]
        users: Option<PathBuf>,
        /// SHA-512-crypt rounds for the new hash (Drepper's default is 5000).
        #[arg(long, default_value_t = 5000)]
        rounds: u32,
        /// Data directory whose `users` file is edited when --users is not given.
        #[arg(long, env = "SHARDLINE_DATA_DIR", default_value = "./shardline-data")]
        data_dir: PathBuf,
        /// The server's --max-password-bytes: a longer password is refused here, since that
        /// user could never log in.
        #[arg(long, env = "SHARDLINE_MAX_PASSWORD_BYTES", default_value_t = 256, value_parser = at_least(1))]
        max_password_bytes: usize,
        /// The server's --max-hash-rounds: more --rounds are refused here, since the server
        /// would refuse the whole users file at load.
        #[arg(long, env = "SHARDLINE_MAX_HASH_ROUNDS", default_value_t = DEFAULT_MAX_HASH_ROUNDS)]
        max_hash_rounds: u32,
    },
    /// Check an append-only log (as redis-check-aof): report the offset of the first bad
    /// record; with --fix, truncate the file there.
    CheckAof {
        /// Truncate the file at the first bad record (everything from it on is lost).
        #[arg(long)]
        fix: bool,
        /// The log, e.g. <data-dir>/appendonlydir/shard-0.aof, or a shard's manifest
        /// (shard-0.manifest): then every file it names is checked, and --fix truncates only
        /// the last.
        file: PathBuf,
    },
}

/// Whether client connections use TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TlsSwitch {
    /// Every connection is TLS (the only mode for real use).
    On,
    /// Plain TCP: exists only to measure TLS overhead in benchmarks.
    Off,
}

/// Which TLS library serves client connections (`--tls-provider`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TlsProvider {
    /// The system's OpenSSL 3 (or the bundled 3.5 with the `vendored-openssl` feature), through
    /// the `openssl` crate and async-openssl; one `SSL_CTX` per shard.
    Openssl,
    /// rustls 0.23 with its default aws-lc-rs crypto provider, through futures-rustls; one
    /// `ServerConfig` shared by every shard.
    Rustls,
}

impl std::fmt::Display for TlsProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TlsProvider::Openssl => "openssl",
            TlsProvider::Rustls => "rustls",
        })
    }
}

/// Options of the running server.
#[derive(Debug, Clone, Args)]
pub struct ServerConfig {
    /// Number of shards (one pinned glommio executor per CPU). Default: the CPUs in the
    /// process's affinity mask.
    #[arg(long, env = "SHARDLINE_SMP")]
    pub smp: Option<usize>,
    /// Task quota in milliseconds (0.05–1000): glommio's preempt timer; a poll longer than
    /// twice this is a reactor stall (Seastar's definition).
    #[arg(long, env = "SHARDLINE_TASK_QUOTA_MS", default_value_t = 0.5)]
    pub task_quota_ms: f64,
    /// Address every shard listens on (SO_REUSEPORT: one listening socket per shard).
    #[arg(long, env = "SHARDLINE_BIND", default_value = "127.0.0.1:6380")]
    pub bind: SocketAddr,
    /// listen(2) backlog of each shard's listening socket.
    #[arg(long, env = "SHARDLINE_BACKLOG", default_value_t = 4096, value_parser = clap::value_parser!(i32).range(1..))]
    pub backlog: i32,
    /// Server certificate chain, PEM (leaf first). Default: <data-dir>/cert.pem, generated
    /// (self-signed ECDSA P-256) on first run.
    #[arg(long, env = "SHARDLINE_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// Private key of --tls-cert, PEM. Default: <data-dir>/key.pem.
    #[arg(long, env = "SHARDLINE_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// CA bundle, PEM: when given, clients must present a certificate signed by it.
    #[arg(long, env = "SHARDLINE_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
    /// `off` serves plain TCP: only for measuring TLS overhead in benchmarks.
    #[arg(long, env = "SHARDLINE_TLS", value_enum, default_value_t = TlsSwitch::On)]
    pub tls: TlsSwitch,
    /// TLS library: `rustls` (rustls with aws-lc-rs; the default: it costs the least CPU per
    /// handshake and per request, see benches/README.md) or `openssl` (the system's OpenSSL
    /// 3). Same certificate, key and client-CA files, same TLS 1.2/1.3 policy, session tickets
    /// shared by all shards with either.
    #[arg(long, env = "SHARDLINE_TLS_PROVIDER", value_enum, default_value_t = TlsProvider::Rustls)]
    pub tls_provider: TlsProvider,
    /// Longest a TLS handshake may go without progress (a byte read from or written to the
    /// client), in milliseconds, before the connection is closed; waits for a login slot do
    /// not count. The handshake starts with the client's first byte: a connection that has
    /// sent nothing is not timed, but once it has been silent this long it gives its place
    /// to a new connection when --maxclients are connected.
    #[arg(long, env = "SHARDLINE_HANDSHAKE_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub handshake_timeout_ms: u64,
    /// Users file (`name:$6$…` lines). Default: <data-dir>/users, generated on first run with
    /// user `default` and a random password printed once.
    #[arg(long, env = "SHARDLINE_USERS")]
    pub users: Option<PathBuf>,
    /// Directory for the generated certificate, the users file and the append-only logs
    /// (`appendonlydir/`).
    #[arg(long, env = "SHARDLINE_DATA_DIR", default_value = "./shardline-data")]
    pub data_dir: PathBuf,
    /// `yes`: every shard logs its writes to `<data-dir>/appendonlydir/shard-<N>.aof` and
    /// replays the log at start (Redis's `appendonly`); `no`: nothing survives a restart.
    #[arg(long, env = "SHARDLINE_APPENDONLY", value_enum, default_value_t = AppendOnly::Yes)]
    pub appendonly: AppendOnly,
    /// When the log reaches the disk (Redis's `appendfsync`): `always` (a write's reply waits
    /// for its fdatasync, one per group of writes), `everysec` (fdatasync once a second),
    /// `no` (the OS decides).
    #[arg(long, env = "SHARDLINE_APPENDFSYNC", value_enum, default_value_t = AppendFsync::Everysec)]
    pub appendfsync: AppendFsync,
    /// `--appendfsync always`: while a shard's durable log write runs (in the kernel's io_uring
    /// worker thread, which shares the shard's CPU and otherwise waits for the end of the
    /// shard's time slice), the shard yields its CPU (`sched_yield(2)`) at most once per this
    /// many µs as it appends further records, so the write returns sooner; 0 never yields.
    #[arg(long, env = "SHARDLINE_AOF_FSYNC_YIELD_US", default_value_t = 20)]
    pub aof_fsync_yield_us: u64,
    /// Rewrite a shard's log when it has grown by this many percent over its size after the
    /// last rewrite (or at start) — Redis's `auto-aof-rewrite-percentage`; 0 disables.
    #[arg(
        long,
        env = "SHARDLINE_AUTO_AOF_REWRITE_PERCENTAGE",
        default_value_t = 100
    )]
    pub auto_aof_rewrite_percentage: u64,
    /// ... and is at least this big (Redis's `auto-aof-rewrite-min-size`; units as Redis:
    /// `64mb` = 64 × 1024², `k`, `kb`, `m`, `g`, `gb`).
    #[arg(long, env = "SHARDLINE_AUTO_AOF_REWRITE_MIN_SIZE", default_value = "64mb", value_parser = memory_size)]
    pub auto_aof_rewrite_min_size: u64,
    /// How a SHA-512-crypt verification is paid: `inline` (on the shard, stalls), `yield` (on
    /// the shard, yielding whenever the task quota is used up), `offload` (hashing threads).
    #[arg(long, env = "SHARDLINE_HASH_MODE", default_value_t = HashMode::Yield)]
    pub hash_mode: HashMode,
    /// Hash the verifications queued on a shard together on the CPU's SIMD lanes
    /// (multi-buffer SHA-512: 8 with AVX-512F, 4 with AVX2): `auto` (default; one at a time
    /// on a CPU with neither) or `off`. A lone login never waits for a batch to form.
    #[arg(long, env = "SHARDLINE_HASH_BATCH", default_value_t = HashBatch::Auto)]
    pub hash_batch: HashBatch,
    /// `--hash-mode yield`: SHA-512-crypt rounds between two checks of glommio's `need_preempt`
    /// (one round ≈ 0.2 µs, one check ≈ 2 ns).
    #[arg(long, env = "SHARDLINE_HASH_YIELD_EVERY_ROUNDS", default_value_t = shardline_auth::verify::DEFAULT_YIELD_EVERY_ROUNDS, value_parser = clap::value_parser!(u32).range(1..))]
    pub hash_yield_every_rounds: u32,
    /// Hashing threads for `--hash-mode offload` (1 = ScyllaDB's single alien thread).
    #[arg(long, env = "SHARDLINE_HASH_THREADS", default_value_t = 1, value_parser = at_least(1))]
    pub hash_threads: usize,
    /// Jobs that may wait for the hashing threads before a login fails as overloaded.
    #[arg(long, env = "SHARDLINE_HASH_QUEUE_CAPACITY", default_value_t = 1024, value_parser = at_least(1))]
    pub hash_queue_capacity: usize,
    /// Shares of the `auth` task queue (the `main` queue has 1000).
    #[arg(long, env = "SHARDLINE_AUTH_SHARES", default_value_t = 100, value_parser = at_least(1))]
    pub auth_shares: usize,
    /// Connections per shard in TLS handshake or password verification at once; more wait.
    #[arg(long, env = "SHARDLINE_MAX_CONCURRENT_LOGINS", default_value_t = 8, value_parser = at_least(1))]
    pub max_concurrent_logins: usize,
    /// Longest a connection waits for a login slot, in milliseconds, before it is shed.
    #[arg(
        long,
        env = "SHARDLINE_LOGIN_QUEUE_TIMEOUT_MS",
        default_value_t = 60_000
    , value_parser = clap::value_parser!(u64).range(1..))]
    pub login_queue_timeout_ms: u64,
    /// Adaptive LIFO for the login queue, in milliseconds: once the oldest waiting login has
    /// waited this long, the newest is served first (under a storm the oldest are the likeliest
    /// to have been given up by their clients); one that has waited 4× this long goes first
    /// again. 0 = always first come first served.
    #[arg(long, env = "SHARDLINE_LOGIN_QUEUE_LIFO_MS", default_value_t = 500)]
    pub login_queue_lifo_ms: u64,
    /// Lifetime of a cached successful login in milliseconds; 0 disables the cache.
    #[arg(long, env = "SHARDLINE_CREDENTIALS_CACHE_TTL_MS", default_value_t = 0)]
    pub credentials_cache_ttl_ms: u64,
    /// Entries of the per-shard credentials cache (least recently used are evicted).
    #[arg(
        long,
        env = "SHARDLINE_CREDENTIALS_CACHE_CAPACITY",
        default_value_t = 1024
    )]
    pub credentials_cache_capacity: usize,
    /// Longest password accepted, in bytes; longer ones are refused without hashing.
    #[arg(long, env = "SHARDLINE_MAX_PASSWORD_BYTES", default_value_t = 256, value_parser = at_least(1))]
    pub max_password_bytes: usize,
    /// Users-file hashes with more SHA-512-crypt rounds are refused at load.
    #[arg(long, env = "SHARDLINE_MAX_HASH_ROUNDS", default_value_t = DEFAULT_MAX_HASH_ROUNDS)]
    pub max_hash_rounds: u32,
    /// Address of the Prometheus `/metrics` endpoint (served by its own thread).
    #[arg(long, env = "SHARDLINE_METRICS_BIND", default_value = "127.0.0.1:9180")]
    pub metrics_bind: SocketAddr,
    /// A poll running longer than this (milliseconds) is logged by the stall reporter: while it
    /// still runs, with a backtrace of the shard thread (the watchdog, again at 2×, 4×, …), and
    /// when it ends.
    #[arg(
        long,
        env = "SHARDLINE_BLOCKED_REACTOR_NOTIFY_MS",
        default_value_t = 25
    , value_parser = clap::value_parser!(u64).range(1..))]
    pub blocked_reactor_notify_ms: u64,
    /// Stall reports logged per shard per minute; the rest are counted and summarised.
    #[arg(
        long,
        env = "SHARDLINE_BLOCKED_REACTOR_REPORTS_PER_MINUTE",
        default_value_t = 5
    )]
    pub blocked_reactor_reports_per_minute: u32,
    /// Serve `DEBUG SLEEP` and other commands that can block a shard (as Redis 7).
    #[arg(long, env = "SHARDLINE_ENABLE_DEBUG_COMMAND")]
    pub enable_debug_command: bool,
    /// Longest a graceful shutdown may take (e.g. `5s`, `500ms`).
    #[arg(long, env = "SHARDLINE_SHUTDOWN_TIMEOUT", default_value = "5s", value_parser = humantime::parse_duration)]
    pub shutdown_timeout: Duration,
    /// Largest bulk string an authenticated client may send, in bytes (Redis: 512 MB; at
    /// least 1 MiB, as Redis's `proto-max-bulk-len`); also the largest string SETRANGE,
    /// APPEND and SETBIT may build (Redis `checkStringLength`, `getBitOffsetFromArgument`).
    #[arg(long, env = "SHARDLINE_PROTO_MAX_BULK_LEN", default_value_t = 512 * 1024 * 1024, value_parser = at_least(1024 * 1024))]
    pub proto_max_bulk_len: usize,
    /// Largest number of arguments in one request of an authenticated client (Redis: 1048576;
    /// at least 1024).
    #[arg(long, env = "SHARDLINE_MAX_MULTIBULK_LEN", default_value_t = 1024 * 1024, value_parser = at_least(1024))]
    pub max_multibulk_len: usize,
    /// Largest unparsed input one client may buffer, in bytes (Redis's client-query-buffer-limit,
    /// 1 GiB; at least 1 MiB, as Redis); past it the connection is closed with an error.
    #[arg(long, env = "SHARDLINE_CLIENT_QUERY_BUFFER_LIMIT", default_value_t = 1024 * 1024 * 1024, value_parser = at_least(1024 * 1024))]
    pub client_query_buffer_limit: usize,
    /// Unwritten replies one client may hold before it is closed: `HARD SOFT SECONDS` as
    /// Redis's `client-output-buffer-limit normal` (sizes with Redis's units, e.g.
    /// `256mb 64mb 60`; 0 disables a limit). Default `0 0 0`: no limit, as Redis.
    #[arg(long, env = "SHARDLINE_CLIENT_OUTPUT_BUFFER_LIMIT", default_value = "0 0 0", value_parser = clap::value_parser!(crate::connection::OutputBufferLimit))]
    pub client_output_buffer_limit: crate::connection::OutputBufferLimit,
    /// Unwritten replies and Pub/Sub deliveries a subscribed client (one with a channel or
    /// pattern subscription) may hold before it is closed: `HARD SOFT SECONDS` as Redis's
    /// `client-output-buffer-limit pubsub`, same units. Default `32mb 8mb 60`, Redis's: a
    /// subscriber that does not read is closed once 32 MiB wait for it, or after 60 s over
    /// 8 MiB. CONFIG SET client-output-buffer-limit "pubsub …" changes it.
    #[arg(long, env = "SHARDLINE_CLIENT_OUTPUT_BUFFER_LIMIT_PUBSUB", default_value = "32mb 8mb 60", value_parser = crate::connection::OutputBufferLimit::parse_pubsub)]
    pub client_output_buffer_limit_pubsub: crate::connection::OutputBufferLimit,
    // --- heavy and hostile clients: TLS resumption, handshake progress, login abuse ---
    /// How often the session-ticket keys shared by all shards are replaced (e.g. `1h`,
    /// `30m`; at least 1 s). The previous key still decrypts until the next rotation, so a
    /// ticket resumes for one to two periods.
    #[arg(long, env = "SHARDLINE_TLS_TICKET_KEY_ROTATION", default_value = "1h", value_parser = at_least_one_second)]
    pub tls_ticket_key_rotation: Duration,
    /// Longest a TLS handshake may take in all, from the client's first byte, in
    /// milliseconds, however steadily the client sends (bounds a slowloris that sends a byte
    /// just before each --handshake-timeout-ms); waits for a login slot do not count. At
    /// least --handshake-timeout-ms.
    #[arg(long, env = "SHARDLINE_HANDSHAKE_MAX_MS", default_value_t = 60_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub handshake_max_ms: u64,
    /// Wrong passwords (WRONGPASS replies to AUTH or HELLO … AUTH) one connection may get;
    /// the last one is sent and the connection closed. 0 = no limit (Redis has none).
    #[arg(long, env = "SHARDLINE_MAX_AUTH_FAILURES", default_value_t = 10)]
    pub max_auth_failures: u32,
    // --- end heavy and hostile clients ---
    /// Keys examined per expiry sweep step on each shard (the sweep runs every 100 ms in the
    /// `maintenance` task queue).
    #[arg(long, env = "SHARDLINE_EXPIRE_SWEEP_KEYS", default_value_t = 200, value_parser = at_least(1))]
    pub expire_sweep_keys: usize,
    /// Numbered databases (Redis's `databases`): SELECT accepts 0 to N-1; every shard keeps
    /// one keyspace per database (1 to 65536). A log holding `SELECT n` with n ≥ N refuses
    /// the start.
    #[arg(long, env = "SHARDLINE_DATABASES", default_value_t = 16,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65536))]
    pub databases: usize,
    /// Keyspace notifications published (Redis's `notify-keyspace-events`): Redis's class
    /// letters `K` (`__keyspace@<db>__:<key>` channels) and/or `E`
    /// (`__keyevent@<db>__:<event>`) with the classes `g$lshzxetdnm` or `A` (`g$lshzxetd`);
    /// e.g. `KEA`. Default empty: none, at no cost to commands. CONFIG SET may change it.
    #[arg(long, env = "SHARDLINE_NOTIFY_KEYSPACE_EVENTS", default_value = "", value_parser = notify_classes)]
    pub notify_keyspace_events: u16,
    /// Close a client idle (nothing read from or written to it) for this many seconds
    /// (Redis's `timeout`); 0 = never. CONFIG SET may change it.
    #[arg(long, env = "SHARDLINE_TIMEOUT", default_value_t = 0)]
    pub timeout: u64,
    /// Transparent huge pages for the process (Redis's `disable-thp`): `yes` turns them off at
    /// start (`prctl(PR_SET_THP_DISABLE)`), so no page fault zeroes 2 MiB inside a shard's
    /// task; `no` leaves the kernel's and the allocator's choice.
    #[arg(long, env = "SHARDLINE_DISABLE_THP", value_enum, default_value_t = crate::thp::DisableThp::Yes)]
    pub disable_thp: crate::thp::DisableThp,
    /// Dataset memory limit over all shards (Redis's `maxmemory`; units as Redis: `100mb`,
    /// `1gb`, bytes), split evenly: each shard keeps its keys within `maxmemory / smp` bytes
    /// of estimated use (see README "Memory limit"). 0 = no limit. CONFIG SET may change it.
    #[arg(long, env = "SHARDLINE_MAXMEMORY", default_value = "0", value_parser = memory_size)]
    pub maxmemory: u64,
    /// What a shard over its share of --maxmemory does before a command (Redis's
    /// `maxmemory-policy`): `noeviction` (commands that may grow memory fail with `-OOM`),
    /// or evict keys: `allkeys-lru`, `volatile-lru`, `allkeys-lfu`, `volatile-lfu`,
    /// `allkeys-random`, `volatile-random`, `volatile-ttl`.
    #[arg(long, env = "SHARDLINE_MAXMEMORY_POLICY", value_enum, default_value_t = crate::runtime::EvictionPolicy::Noeviction)]
    pub maxmemory_policy: crate::runtime::EvictionPolicy,
    /// Keys sampled per eviction (Redis's `maxmemory-samples`, 1 to 64): more is closer to
    /// true LRU/LFU/TTL order and costs more per eviction.
    #[arg(long, env = "SHARDLINE_MAXMEMORY_SAMPLES", default_value_t = 5,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=64))]
    pub maxmemory_samples: usize,
    /// Commands running longer than this many µs on their shard are kept in the shard's
    /// slowlog (Redis's `slowlog-log-slower-than`): -1 disables, 0 logs every command.
    #[arg(long, env = "SHARDLINE_SLOWLOG_LOG_SLOWER_THAN", default_value_t = 10_000,
          allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(-1..))]
    pub slowlog_log_slower_than: i64,
    /// A script or function running longer than this many ms is busy: other clients get
    /// `-BUSY` for commands on the shards it holds, and SCRIPT KILL / FUNCTION KILL may stop
    /// it (Redis's `busy-reply-threshold`, alias `lua-time-limit`). 0 = busy at once.
    #[arg(long, env = "SHARDLINE_BUSY_REPLY_THRESHOLD", default_value_t = 5000)]
    pub busy_reply_threshold: u64,
    /// Memory one shard's Lua VM may use, in bytes: a script that allocates past it fails
    /// with `not enough memory` and nothing else is lost (0 = no limit).
    #[arg(long, env = "SHARDLINE_SCRIPT_MEMORY_LIMIT", default_value_t = 256 * 1024 * 1024)]
    pub script_memory_limit: usize,
    /// Slowlog entries kept per shard, oldest dropped first (Redis's `slowlog-max-len`).
    #[arg(long, env = "SHARDLINE_SLOWLOG_MAX_LEN", default_value_t = 128)]
    pub slowlog_max_len: usize,
    /// A hash of at most this many fields is kept small, in insertion order (Redis's
    /// `hash-max-listpack-entries`; OBJECT ENCODING `listpack`); a write past it turns the
    /// hash into a table for good.
    #[arg(
        long,
        env = "SHARDLINE_HASH_MAX_LISTPACK_ENTRIES",
        default_value_t = 128
    )]
    pub hash_max_listpack_entries: u64,
    /// ... whose fields and values are at most this many bytes (`hash-max-listpack-value`).
    #[arg(long, env = "SHARDLINE_HASH_MAX_LISTPACK_VALUE", default_value_t = 64)]
    pub hash_max_listpack_value: u64,
    /// A set of at most this many integers replies them ascending and OBJECT ENCODING
    /// reports `intset` (Redis's `set-max-intset-entries`).
    #[arg(long, env = "SHARDLINE_SET_MAX_INTSET_ENTRIES", default_value_t = 512)]
    pub set_max_intset_entries: u64,
    /// Requests gathered for one other shard before a sender waits. What a shard forwards
    /// to another during a poll leaves as one message; at most 2 messages wait per pair of
    /// shards, so at most 3× this many requests are on their way from one shard to another.
    #[arg(long, env = "SHARDLINE_CROSS_SHARD_QUEUE", default_value_t = 1024, value_parser = at_least(1))]
    pub cross_shard_queue: usize,

    // Clients and file descriptors (issue 8).
    /// Most clients connected at once over all shards (Redis's maxclients). More are refused
    /// at accept: `-ERR max number of clients reached` with `--tls off`, closed at once with
    /// TLS — unless a TLS connection of the accepting shard has sent nothing for
    /// --handshake-timeout-ms: that one is closed instead and the new one takes its place.
    /// Lowered at start, with a warning, when RLIMIT_NOFILE cannot hold it.
    #[arg(long, env = "SHARDLINE_MAXCLIENTS", default_value_t = 10_000, value_parser = at_least(1))]
    pub maxclients: usize,
    /// Connections the `/metrics` endpoint serves at once; more wait in its listen queue.
    #[arg(long, env = "SHARDLINE_METRICS_MAX_CONCURRENT_SCRAPES", default_value_t = 32, value_parser = at_least(1))]
    pub metrics_max_concurrent_scrapes: usize,
    /// Longest one `/metrics` connection may take, from accept to the end of the response,
    /// in milliseconds; a half-sent request is dropped after it.
    #[arg(long, env = "SHARDLINE_METRICS_REQUEST_TIMEOUT_MS", default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub metrics_request_timeout_ms: u64,
}

impl ServerConfig {
    /// The task quota as a [`Duration`].
    pub fn task_quota(&self) -> Duration {
        Duration::from_secs_f64(self.task_quota_ms / 1000.0)
    }

    /// The users file: `--users` or `<data-dir>/users`.
    pub fn users_path(&self) -> PathBuf {
        self.users
            .clone()
            .unwrap_or_else(|| self.data_dir.join("users"))
    }
}

/// A `usize` flag that must be at least `min` (clap reports "N is not in MIN..").
/// A size with Redis's units (`64mb`), in bytes.
fn memory_size(text: &str) -> Result<u64, String> {
    crate::connection::parse_memory(text)
        .ok_or_else(|| format!("expected a size such as 64mb, 1gb or 4096, got {text:?}"))
}

/// `--notify-keyspace-events`: Redis's class letters ([`crate::notify::parse`]).
fn notify_classes(text: &str) -> Result<u16, String> {
    crate::notify::parse(text.as_bytes()).ok_or_else(|| crate::notify::flags::INVALID.to_string())
}

fn at_least(min: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(min..)
}

/// A humantime duration (`1h`, `90s`, `500ms`) of at least one second.
fn at_least_one_second(text: &str) -> Result<Duration, String> {
    let duration = humantime::parse_duration(text).map_err(|err| err.to_string())?;
    if duration < Duration::from_secs(1) {
        return Err(format!("{text} is less than 1s"));
    }
    Ok(duration)
}
