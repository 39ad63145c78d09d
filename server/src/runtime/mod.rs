//! The configuration CONFIG SET may change while the server runs (Redis 7.0 `config.c`'s
//! mutable parameters): every shard holds its own copy ([`RuntimeConfig`]), replaced on every
//! shard by one CONFIG SET ([`crate::connection`]'s `config` command), and read where it
//! applies (eviction, the append-only log, slowlog, OBJECT ENCODING, output limits).
//!
//! [`params`] maps Redis's parameter names (and aliases) onto it for CONFIG GET and SET.

pub mod params;
pub mod save_points;

use clap::ValueEnum;

use crate::aof::{AppendFsync, AppendOnly};
use crate::config::ServerConfig;
use crate::connection::OutputBufferLimit;

/// `--maxmemory-policy`: what a shard does when its dataset is over its share of
/// `--maxmemory` (Redis 7.0 `evict.c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvictionPolicy {
    /// Evict nothing: commands flagged `denyoom` fail with `-OOM`.
    Noeviction,
    /// Evict the least recently used of sampled keys.
    AllkeysLru,
    /// Evict the least recently used of sampled keys that have a deadline.
    VolatileLru,
    /// Evict the least frequently used of sampled keys (Redis's LFU counter).
    AllkeysLfu,
    /// Evict the least frequently used of sampled keys that have a deadline.
    VolatileLfu,
    /// Evict random keys.
    AllkeysRandom,
    /// Evict random keys that have a deadline.
    VolatileRandom,
    /// Evict the keys with the nearest deadline.
    VolatileTtl,
}

impl EvictionPolicy {
    /// Redis's name (`allkeys-lru`, ...), as CONFIG GET shows it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Noeviction => "noeviction",
            Self::AllkeysLru => "allkeys-lru",
            Self::VolatileLru => "volatile-lru",
            Self::AllkeysLfu => "allkeys-lfu",
            Self::VolatileLfu => "volatile-lfu",
            Self::AllkeysRandom => "allkeys-random",
            Self::VolatileRandom => "volatile-random",
            Self::VolatileTtl => "volatile-ttl",
        }
    }

    /// Parses Redis's name, ASCII case-insensitively.
    pub fn parse(name: &str) -> Option<Self> {
        Self::value_variants()
            .iter()
            .copied()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// Whether the access clock of keys holds LFU counters (Redis's `MAXMEMORY_FLAG_LFU`).
    pub fn is_lfu(self) -> bool {
        matches!(self, Self::AllkeysLfu | Self::VolatileLfu)
    }

    /// Whether only keys with a deadline may be evicted.
    pub fn is_volatile(self) -> bool {
        matches!(
            self,
            Self::VolatileLru | Self::VolatileLfu | Self::VolatileRandom | Self::VolatileTtl
        )
    }
}

/// Encoding thresholds (Redis 7.0 defaults). The hash ones decide when a small hash (kept in
/// insertion order) becomes a table ([`crate::keyspace::HashLimits`]); the others change
/// nothing but the encoding OBJECT ENCODING reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodingKnobs {
    /// `hash-max-listpack-entries` (alias `hash-max-ziplist-entries`): 128.
    pub hash_max_listpack_entries: u64,
    /// `hash-max-listpack-value` (alias `hash-max-ziplist-value`), bytes: 64.
    pub hash_max_listpack_value: u64,
    /// `set-max-intset-entries`: 512.
    pub set_max_intset_entries: u64,
    /// `zset-max-listpack-entries` (alias `zset-max-ziplist-entries`): 128.
    pub zset_max_listpack_entries: u64,
    /// `zset-max-listpack-value` (alias `zset-max-ziplist-value`): 64.
    pub zset_max_listpack_value: u64,
    /// `list-max-listpack-size` (alias `list-max-ziplist-size`): -2.
    pub list_max_listpack_size: i64,
    /// `list-compress-depth`: 0.
    pub list_compress_depth: u64,
}

impl EncodingKnobs {
    /// The hash thresholds, as the keyspace applies them.
    pub fn hash_limits(&self) -> crate::keyspace::HashLimits {
        crate::keyspace::HashLimits {
            entries: self.hash_max_listpack_entries,
            value: self.hash_max_listpack_value,
        }
    }
}

impl Default for EncodingKnobs {
    fn default() -> Self {
        Self {
            hash_max_listpack_entries: 128,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            list_max_listpack_size: -2,
            list_compress_depth: 0,
        }
    }
}

/// One shard's copy of the parameters CONFIG SET can change. Starts from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeConfig {
    /// `maxmemory`: dataset bytes over all shards (each shard gets `maxmemory / shards`);
    /// 0 = no limit.
    pub maxmemory: u64,
    /// `maxmemory-policy`.
    pub maxmemory_policy: EvictionPolicy,
    /// `maxmemory-samples`: keys sampled per eviction (1 to 64).
    pub maxmemory_samples: usize,
    /// `lfu-log-factor`: how slowly the LFU counter grows (Redis default 10).
    pub lfu_log_factor: u32,
    /// `lfu-decay-time`: minutes for the LFU counter to lose one (Redis default 1; 0 = never).
    pub lfu_decay_time: u32,
    /// `appendonly` (fixed at start: CONFIG SET accepts only the value in force).
    pub appendonly: AppendOnly,
    /// `appendfsync`.
    pub appendfsync: AppendFsync,
    /// `slowlog-log-slower-than`, µs: -1 disables the slowlog, 0 logs every command.
    pub slowlog_log_slower_than: i64,
    /// `slowlog-max-len`: entries kept per shard.
    pub slowlog_max_len: usize,
    /// `busy-reply-threshold` (alias `lua-time-limit`), ms: a script running longer is busy.
    pub busy_reply_threshold_ms: u64,
    /// `client-output-buffer-limit` of the `normal` class.
    pub client_output_buffer_limit: OutputBufferLimit,
    /// The `replica` (`slave`) class as last set: shown by CONFIG GET, no client of it here.
    pub replica_output_limit: OutputBufferLimit,
    /// The `pubsub` class (`--client-output-buffer-limit-pubsub`): the limit of subscribed
    /// clients.
    pub pubsub_output_limit: OutputBufferLimit,
    /// `maxclients`.
    pub maxclients: usize,
    /// `timeout`: seconds a client may stay idle (nothing read or written) before it is
    /// closed; 0 = never.
    pub timeout_seconds: u64,
    /// Thresholds of OBJECT ENCODING.
    pub encoding: EncodingKnobs,
    /// `notify-keyspace-events`: the classes of keyspace events published
    /// ([`crate::notify::flags`]); 0 = none.
    pub notify_keyspace_events: u16,
    /// `client-query-buffer-limit`, bytes (`--client-query-buffer-limit`): unparsed input one
    /// client may buffer.
    pub client_query_buffer_limit: usize,
    /// `proto-max-bulk-len`, bytes (`--proto-max-bulk-len`): the largest bulk string of a
    /// request, and of a string SETRANGE/APPEND/SETBIT may build.
    pub proto_max_bulk_len: usize,
    /// `save`: kept and shown only (no RDB snapshots; [`save_points`]). Empty at start.
    pub save: Vec<save_points::SavePoint>,
    /// `key-load-delay` (hidden): kept and shown only. 0 at start.
    pub key_load_delay: i32,
    /// `auto-aof-rewrite-percentage`: growth over the last rewrite's size, in %, that starts
    /// a rewrite of a shard's log; 0 = never.
    pub auto_aof_rewrite_percentage: u64,
    /// `auto-aof-rewrite-min-size`: bytes a shard's log must reach before it is rewritten.
    pub auto_aof_rewrite_min_size: u64,
    /// Settings Redis has that mean nothing here (no replication, no client eviction, no
    /// latency monitor), stored as CONFIG SET gave them so CONFIG GET shows them back:
    /// `repl-backlog-size` (bytes), `maxmemory-clients` (as shown: bytes or `N%`) and
    /// `latency-monitor-threshold` (ms). They have no effect.
    pub inert: InertSettings,
}

/// Redis settings accepted and shown, with no effect in shardline (see
/// [`RuntimeConfig::inert`]).
#[derive(Debug, Clone, PartialEq)]
pub struct InertSettings {
    /// `repl-backlog-size`, bytes (Redis's default 1 MiB, at least 16 KiB).
    pub repl_backlog_size: u64,
    /// `maxmemory-clients` as CONFIG GET shows it: bytes, or a percentage `N%` (default `0`).
    pub maxmemory_clients: String,
    /// `latency-monitor-threshold`, ms (default 0).
    pub latency_monitor_threshold: i64,
}

impl Default for InertSettings {
    fn default() -> Self {
        Self {
            repl_backlog_size: 1 << 20,
            maxmemory_clients: "0".into(),
            latency_monitor_threshold: 0,
        }
    }
}

/// Redis's default `client-output-buffer-limit` of the `replica` class.
pub const DEFAULT_REPLICA_OUTPUT_LIMIT: OutputBufferLimit = OutputBufferLimit {
    hard_bytes: 256 << 20,
    soft_bytes: 64 << 20,
    soft_seconds: 60,
};

/// Redis's default `client-output-buffer-limit` of the `pubsub` class.
pub const DEFAULT_PUBSUB_OUTPUT_LIMIT: OutputBufferLimit = OutputBufferLimit {
    hard_bytes: 32 << 20,
    soft_bytes: 8 << 20,
    soft_seconds: 60,
};

impl RuntimeConfig {
    /// The values given on the command line.
    pub fn from_config(config: &ServerConfig, maxclients: usize) -> Self {
        Self {
            maxmemory: config.maxmemory,
            maxmemory_policy: config.maxmemory_policy,
            maxmemory_samples: config.maxmemory_samples,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
            appendonly: config.appendonly,
            appendfsync: config.appendfsync,
            slowlog_log_slower_than: config.slowlog_log_slower_than,
            slowlog_max_len: config.slowlog_max_len,
            busy_reply_threshold_ms: config.busy_reply_threshold,
            client_output_buffer_limit: config.client_output_buffer_limit,
            replica_output_limit: DEFAULT_REPLICA_OUTPUT_LIMIT,
            pubsub_output_limit: config.client_output_buffer_limit_pubsub,
            maxclients,
            timeout_seconds: config.timeout,
            notify_keyspace_events: config.notify_keyspace_events,
            client_query_buffer_limit: config.client_query_buffer_limit,
            proto_max_bulk_len: config.proto_max_bulk_len,
            save: Vec::new(),
            key_load_delay: 0,
            auto_aof_rewrite_percentage: config.auto_aof_rewrite_percentage,
            auto_aof_rewrite_min_size: config.auto_aof_rewrite_min_size,
            inert: InertSettings::default(),
            encoding: EncodingKnobs {
                hash_max_listpack_entries: config.hash_max_listpack_entries,
                hash_max_listpack_value: config.hash_max_listpack_value,
                set_max_intset_entries: config.set_max_intset_entries,
                ..EncodingKnobs::default()
            },
        }
    }

    /// One shard's share of `maxmemory` in bytes (0 = no limit).
    pub fn shard_maxmemory(&self, shards: usize) -> u64 {
        if self.maxmemory == 0 {
            return 0;
        }
        (self.maxmemory / shards.max(1) as u64).max(1)
    }
}

/// Installs `next` as `shard`'s runtime configuration and applies what changed: the access
/// clock of every database (LRU or LFU), its encoding thresholds, keyspace events and
/// largest string (`proto-max-bulk-len`), the log's `appendfsync`, the slowlog's length and
/// the process-wide `maxclients`. Connections read the rest where it applies.
pub fn apply(shard: &crate::shard::Shard, next: RuntimeConfig) {
    use crate::keyspace::AccessClock;
    let access = if next.maxmemory_policy.is_lfu() {
        AccessClock::Lfu {
            log_factor: next.lfu_log_factor,
            decay_minutes: next.lfu_decay_time,
        }
    } else {
        AccessClock::Lru
    };
    let hash_limits = next.encoding.hash_limits();
    for db in shard.dbs.borrow_mut().iter_mut() {
        db.set_access_clock(access);
        db.set_hash_limits(hash_limits);
        db.set_intset_entries(next.encoding.set_max_intset_entries);
        db.set_notify_flags(next.notify_keyspace_events);
        db.set_max_string_len(next.proto_max_bulk_len as u64);
    }
    if let Some(aof) = &shard.aof {
        if aof.writer.fsync_policy() != next.appendfsync {
            aof.writer.set_fsync(next.appendfsync);
        }
    }
    shard.slowlog.trim(next.slowlog_max_len);
    shard.shared.clients.set_max(next.maxclients);
    *shard.runtime.borrow_mut() = next;
    shard.config_changed.notify(usize::MAX);
}
