//! Redis's configuration parameter names (Redis 7.0 `config.c` `standardConfig` table) for
//! CONFIG GET and CONFIG SET, mapped onto shardline's options: the mutable ones onto
//! [`RuntimeConfig`], the others read from the command line. shardline's own options appear
//! under their flag names (`smp`, `task-quota-ms`, ...), read-only and hidden: CONFIG GET
//! shows them when asked for by exact name, never for a glob (Redis's `HIDDEN_CONFIG`), so
//! that `CONFIG GET *` lists Redis's names only.
//!
//! A parameter is one of: immutable (Redis's `IMMUTABLE_CONFIG`: CONFIG SET answers `can't
//! set immutable config`), runtime (parsed into [`RuntimeConfig`]), or fixed at start (a
//! parameter Redis can change but shardline sets only from its command line, such as `bind`:
//! CONFIG SET parses the value as Redis does and accepts it when it is the value in force, so
//! every value CONFIG GET shows can be set back; another value is refused).

use std::net::SocketAddr;

use super::{EvictionPolicy, RuntimeConfig};
use crate::aof::{AppendFsync, AppendOnly};
use crate::config::{ServerConfig, TlsSwitch};
use crate::connection::{parse_memory, OutputBufferLimit};

/// What a parameter's value is read from.
pub struct View<'a> {
    /// The command line.
    pub config: &'a ServerConfig,
    /// The shard's current runtime configuration.
    pub runtime: &'a RuntimeConfig,
    /// The address the listeners are bound to.
    pub bound: SocketAddr,
    /// Number of shards.
    pub shards: usize,
}

type Getter = fn(&View) -> String;
/// Parses a value into the configuration; the error is Redis's text after the `-`.
type Setter = fn(&mut RuntimeConfig, &str) -> Result<(), String>;
/// Parses a value of a parameter fixed at start into the form CONFIG GET shows (Redis's
/// errors for a malformed value).
type Normalize = fn(&str) -> Result<String, String>;

/// What CONFIG SET may do with a parameter.
enum Access {
    /// Nothing: `can't set immutable config`.
    Immutable,
    /// Parsed into the runtime configuration.
    Runtime(Setter),
    /// Set at start by `flag`: the value in force is accepted, another one refused.
    Fixed {
        normalize: Normalize,
        flag: &'static str,
    },
}

/// One parameter: its Redis name, an alias (Redis 7's old `ziplist` names), how to read it
/// and what CONFIG SET may do with it.
pub struct Param {
    /// The name CONFIG GET shows.
    pub name: &'static str,
    /// A second name for the same parameter (shown by CONFIG GET when it matches too; Redis
    /// 7.0 treats it as a parameter of its own, so CONFIG SET of both is no duplicate).
    pub alias: Option<&'static str>,
    /// Shown by CONFIG GET only when asked for by exact name (Redis's `HIDDEN_CONFIG`).
    pub hidden: bool,
    get: Getter,
    access: Access,
}

impl Param {
    /// The value as CONFIG GET shows it.
    pub fn value(&self, view: &View) -> String {
        (self.get)(view)
    }

    /// Whether CONFIG SET may be given it (false: `can't set immutable config`).
    pub fn is_mutable(&self) -> bool {
        !matches!(self.access, Access::Immutable)
    }

    /// Sets a runtime parameter to `value` in `runtime`. Errors: Redis's reason text (`can't
    /// set immutable config`, `argument must be a memory value`, ...); a parameter fixed at
    /// start is refused here (see [`Param::set`]).
    pub fn apply(&self, runtime: &mut RuntimeConfig, value: &str) -> Result<(), String> {
        match self.access {
            Access::Runtime(set) => set(runtime, value),
            Access::Immutable => Err(IMMUTABLE.into()),
            Access::Fixed { flag, .. } => Err(fixed_reason(flag)),
        }
    }

    /// CONFIG SET's set step: a runtime parameter is parsed into `next`; one fixed at start
    /// is checked against its value in `current` (unchanged: accepted, nothing to do).
    /// Errors: Redis's reason text, or, for another value of a parameter fixed at start,
    /// `shardline sets this only at start (--flag)`.
    pub fn set(&self, current: &View, next: &mut RuntimeConfig, value: &str) -> Result<(), String> {
        match self.access {
            Access::Fixed { normalize, flag } => {
                if normalize(value)? == self.value(current) {
                    Ok(())
                } else {
                    Err(fixed_reason(flag))
                }
            }
            _ => self.apply(next, value),
        }
    }
}

/// `requirepass`: listed here so that CONFIG GET matches it and CONFIG SET accepts it, but
/// read and set by `connection::commands::requirepass` (the users file), not through
/// [`RuntimeConfig`].
pub const REQUIREPASS: &str = "requirepass";

/// Redis's reason for a parameter CONFIG SET may not change.
const IMMUTABLE: &str = "can't set immutable config";

fn fixed_reason(flag: &str) -> String {
    format!("shardline sets this only at start ({flag})")
}

/// The parameter named `name` (or aliased so), ASCII case-insensitively, with the name it
/// answered to as the table spells it (lower case: the alias when `name` is the alias).
pub fn lookup(name: &str) -> Option<(&'static Param, &'static str)> {
    PARAMS.iter().find_map(|p| {
        std::iter::once(p.name)
            .chain(p.alias)
            .find(|n| n.eq_ignore_ascii_case(name))
            .map(|n| (p, n))
    })
}

/// The parameter named `name` (or aliased so), ASCII case-insensitively.
pub fn find(name: &str) -> Option<&'static Param> {
    lookup(name).map(|(param, _)| param)
}

/// Every parameter.
pub fn all() -> &'static [Param] {
    PARAMS
}

const fn ro(name: &'static str, get: Getter) -> Param {
    Param {
        name,
        alias: None,
        hidden: false,
        get,
        access: Access::Immutable,
    }
}

/// One of shardline's own options: immutable and hidden.
const fn own(name: &'static str, get: Getter) -> Param {
    Param {
        name,
        alias: None,
        hidden: true,
        get,
        access: Access::Immutable,
    }
}

const fn rw(name: &'static str, alias: Option<&'static str>, get: Getter, set: Setter) -> Param {
    Param {
        name,
        alias,
        hidden: false,
        get,
        access: Access::Runtime(set),
    }
}

/// A parameter Redis can change that shardline sets at start only, with `flag`.
const fn fixed(name: &'static str, get: Getter, normalize: Normalize, flag: &'static str) -> Param {
    Param {
        name,
        alias: None,
        hidden: false,
        get,
        access: Access::Fixed { normalize, flag },
    }
}

/// A runtime parameter shown by exact name only.
const fn hidden(name: &'static str, get: Getter, set: Setter) -> Param {
    Param {
        name,
        alias: None,
        hidden: true,
        get,
        access: Access::Runtime(set),
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

/// Redis's integer parameters: `argument couldn't be parsed into an integer`, then the range.
fn integer(value: &str, min: i64, max: i64) -> Result<i64, String> {
    let n: i64 = value
        .parse()
        .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
    if !(min..=max).contains(&n) {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(n)
}

/// An unsigned count in `min..=i64::MAX`.
fn count(value: &str, min: i64) -> Result<u64, String> {
    integer(value, min, i64::MAX).map(|n| n as u64)
}

fn memory(value: &str) -> Result<u64, String> {
    parse_memory(value).ok_or_else(|| "argument must be a memory value".to_string())
}

/// Redis's memory-or-percentage parameters (`maxmemory-clients`): `N%` (at most 100) or a
/// memory value, returned as CONFIG GET shows it (`N%`, or bytes).
fn memory_or_percent(value: &str) -> Result<String, String> {
    if let Some(percent) = value.strip_suffix('%') {
        let n: u64 = percent
            .parse()
            .map_err(|_| "argument must be a memory or percent value".to_string())?;
        if n > 100 {
            return Err("percentage argument must be less or equal to 100".into());
        }
        return Ok(format!("{n}%"));
    }
    parse_memory(value)
        .map(|n| n.to_string())
        .ok_or_else(|| "argument must be a memory or percent value".to_string())
}

/// Redis's smallest `client-query-buffer-limit` and `proto-max-bulk-len`: 1 MiB.
const MIN_BUFFER_LIMIT: i64 = 1024 * 1024;

/// A memory value (Redis's units) in `min..=max` bytes, with Redis's range error.
fn memory_in(value: &str, min: i64, max: i64) -> Result<u64, String> {
    let bytes = memory(value)?;
    if bytes < min as u64 || bytes > max as u64 {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(bytes)
}

/// A string parameter fixed at start: shown as given.
fn verbatim(value: &str) -> Result<String, String> {
    Ok(value.to_string())
}

/// `tls-auth-clients`: Redis's `no`, `yes` or `optional`, ASCII case-insensitively.
fn auth_clients(value: &str) -> Result<String, String> {
    let lower = value.to_ascii_lowercase();
    match lower.as_str() {
        "no" | "yes" | "optional" => Ok(lower),
        _ => Err("argument(s) must be one of the following: no, yes, optional".into()),
    }
}

/// `client-output-buffer-limit`: `CLASS HARD SOFT SECONDS` groups (Redis 7.0
/// `updateClientOutputBufferLimit`); classes `normal`, `replica`/`slave`, `pubsub`.
fn set_output_limits(runtime: &mut RuntimeConfig, value: &str) -> Result<(), String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    if !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut next = runtime.clone();
    for group in words.chunks(4) {
        let size = |w: &str| parse_memory(w);
        let (Some(hard), Some(soft), Ok(seconds)) =
            (size(group[1]), size(group[2]), group[3].parse::<u64>())
        else {
            return Err(
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.".into(),
            );
        };
        let limit = OutputBufferLimit {
            hard_bytes: hard,
            soft_bytes: soft,
            soft_seconds: seconds,
        };
        match group[0].to_ascii_lowercase().as_str() {
            "normal" => next.client_output_buffer_limit = limit,
            "replica" | "slave" => next.replica_output_limit = limit,
            "pubsub" => next.pubsub_output_limit = limit,
            _ => {
                return Err("Invalid client class specified in buffer limit configuration.".into())
            }
        }
    }
    *runtime = next;
    Ok(())
}

fn output_limits(view: &View) -> String {
    let r = view.runtime;
    let class = |name: &str, l: &OutputBufferLimit| {
        format!(
            "{name} {} {} {}",
            l.hard_bytes, l.soft_bytes, l.soft_seconds
        )
    };
    format!(
        "{} {} {}",
        class("normal", &r.client_output_buffer_limit),
        class("slave", &r.replica_output_limit),
        class("pubsub", &r.pubsub_output_limit)
    )
}

fn policy(value: &str) -> Result<EvictionPolicy, String> {
    EvictionPolicy::parse(value).ok_or_else(|| {
        "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, \
         volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"
            .to_string()
    })
}

fn fsync(value: &str) -> Result<AppendFsync, String> {
    match value.to_ascii_lowercase().as_str() {
        "everysec" => Ok(AppendFsync::Everysec),
        "always" => Ok(AppendFsync::Always),
        "no" => Ok(AppendFsync::No),
        _ => Err("argument(s) must be one of the following: everysec, always, no".into()),
    }
}

fn fsync_name(fsync: AppendFsync) -> &'static str {
    match fsync {
        AppendFsync::Always => "always",
        AppendFsync::Everysec => "everysec",
        AppendFsync::No => "no",
    }
}

fn port(view: &View) -> String {
    match view.config.tls {
        TlsSwitch::Off => view.bound.port().to_string(),
        TlsSwitch::On => "0".into(),
    }
}

fn tls_port(view: &View) -> String {
    match view.config.tls {
        TlsSwitch::On => view.bound.port().to_string(),
        TlsSwitch::Off => "0".into(),
    }
}

/// `--tls-cert`/`--tls-key`, or the generated default in the data directory; empty with
/// `--tls off`.
fn tls_file(view: &View, path: &Option<std::path::PathBuf>, default: &str) -> String {
    if view.config.tls == TlsSwitch::Off {
        return String::new();
    }
    path.clone()
        .unwrap_or_else(|| view.config.data_dir.join(default))
        .display()
        .to_string()
}

fn path_or_empty(path: &Option<std::path::PathBuf>) -> String {
    path.as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

static PARAMS: &[Param] = &[
    // Memory limit and eviction (runtime).
    rw(
        "maxmemory",
        None,
        |v| v.runtime.maxmemory.to_string(),
        |r, v| {
            r.maxmemory = memory(v)?;
            Ok(())
        },
    ),
    rw(
        "maxmemory-policy",
        None,
        |v| v.runtime.maxmemory_policy.name().into(),
        |r, v| {
            r.maxmemory_policy = policy(v)?;
            Ok(())
        },
    ),
    rw(
        "maxmemory-samples",
        None,
        |v| v.runtime.maxmemory_samples.to_string(),
        |r, v| {
            r.maxmemory_samples = integer(v, 1, 64)? as usize;
            Ok(())
        },
    ),
    rw(
        "lfu-log-factor",
        None,
        |v| v.runtime.lfu_log_factor.to_string(),
        |r, v| {
            r.lfu_log_factor = integer(v, 0, i64::from(i32::MAX))? as u32;
            Ok(())
        },
    ),
    rw(
        "lfu-decay-time",
        None,
        |v| v.runtime.lfu_decay_time.to_string(),
        |r, v| {
            r.lfu_decay_time = integer(v, 0, i64::from(i32::MAX))? as u32;
            Ok(())
        },
    ),
    // Persistence.
    rw(
        "appendfsync",
        None,
        |v| fsync_name(v.runtime.appendfsync).into(),
        |r, v| {
            r.appendfsync = fsync(v)?;
            Ok(())
        },
    ),
    rw(
        "appendonly",
        None,
        |v| yes_no(v.config.appendonly == AppendOnly::Yes),
        // The log is opened (or not) at start: setting the value in force is a no-op.
        |r, v| {
            let on = match v.to_ascii_lowercase().as_str() {
                "yes" => AppendOnly::Yes,
                "no" => AppendOnly::No,
                _ => return Err("argument must be 'yes' or 'no'".into()),
            };
            if on == r.appendonly {
                Ok(())
            } else {
                Err("the append-only log is switched on or off only at start (--appendonly)".into())
            }
        },
    ),
    ro("appenddirname", |_| crate::aof::DIR_NAME.into()),
    // The log holds commands only: `no` is the truth, and setting it again is accepted.
    rw(
        "aof-use-rdb-preamble",
        None,
        |_| "no".into(),
        |_, v| match v.to_ascii_lowercase().as_str() {
            "no" => Ok(()),
            "yes" => {
                Err("shardline's append-only log holds commands only (no RDB preamble)".into())
            }
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
    ),
    rw(
        "auto-aof-rewrite-percentage",
        None,
        |v| v.runtime.auto_aof_rewrite_percentage.to_string(),
        |r, v| {
            r.auto_aof_rewrite_percentage = integer(v, 0, i64::from(i32::MAX))? as u64;
            Ok(())
        },
    ),
    rw(
        "auto-aof-rewrite-min-size",
        None,
        |v| v.runtime.auto_aof_rewrite_min_size.to_string(),
        |r, v| {
            r.auto_aof_rewrite_min_size = memory_in(v, 0, i64::MAX)?;
            Ok(())
        },
    ),
    // Redis settings that mean nothing here: accepted and shown back, no effect.
    rw(
        "repl-backlog-size",
        None,
        |v| v.runtime.inert.repl_backlog_size.to_string(),
        |r, v| {
            // Redis raises a smaller value to its minimum, 16 KiB.
            r.inert.repl_backlog_size = memory(v)?.max(16 * 1024);
            Ok(())
        },
    ),
    rw(
        "maxmemory-clients",
        None,
        |v| v.runtime.inert.maxmemory_clients.clone(),
        |r, v| {
            r.inert.maxmemory_clients = memory_or_percent(v)?;
            Ok(())
        },
    ),
    rw(
        "latency-monitor-threshold",
        None,
        |v| v.runtime.inert.latency_monitor_threshold.to_string(),
        |r, v| {
            r.inert.latency_monitor_threshold = integer(v, 0, i64::MAX)?;
            Ok(())
        },
    ),
    ro("daemonize", |_| "no".into()),
    Param {
        name: "replicaof",
        alias: Some("slaveof"),
        hidden: false,
        get: |_| String::new(),
        access: Access::Immutable,
    },
    // No RDB snapshots: the points are parsed, kept and shown as Redis does, and trigger
    // nothing (persistence is the append-only log).
    rw(
        "save",
        None,
        |v| super::save_points::render(&v.runtime.save),
        |r, v| {
            r.save = super::save_points::parse(v)?;
            Ok(())
        },
    ),
    fixed(
        "dir",
        |v| v.config.data_dir.display().to_string(),
        verbatim,
        "--data-dir",
    ),
    // Slowlog.
    rw(
        "slowlog-log-slower-than",
        None,
        |v| v.runtime.slowlog_log_slower_than.to_string(),
        |r, v| {
            r.slowlog_log_slower_than = integer(v, -1, i64::MAX)?;
            Ok(())
        },
    ),
    rw(
        "busy-reply-threshold",
        Some("lua-time-limit"),
        |v| v.runtime.busy_reply_threshold_ms.to_string(),
        |r, v| {
            r.busy_reply_threshold_ms = integer(v, 0, i64::MAX)? as u64;
            Ok(())
        },
    ),
    rw(
        "slowlog-max-len",
        None,
        |v| v.runtime.slowlog_max_len.to_string(),
        |r, v| {
            r.slowlog_max_len = count(v, 0)? as usize;
            Ok(())
        },
    ),
    // Clients.
    rw(
        "maxclients",
        None,
        |v| v.runtime.maxclients.to_string(),
        |r, v| {
            r.maxclients = integer(v, 1, i64::from(u32::MAX))? as usize;
            Ok(())
        },
    ),
    rw(
        "client-output-buffer-limit",
        None,
        output_limits,
        set_output_limits,
    ),
    rw(
        "client-query-buffer-limit",
        None,
        |v| v.runtime.client_query_buffer_limit.to_string(),
        |r, v| {
            r.client_query_buffer_limit = memory_in(v, MIN_BUFFER_LIMIT, i64::MAX)? as usize;
            Ok(())
        },
    ),
    rw(
        "proto-max-bulk-len",
        None,
        |v| v.runtime.proto_max_bulk_len.to_string(),
        |r, v| {
            r.proto_max_bulk_len = memory_in(v, MIN_BUFFER_LIMIT, i64::MAX)? as usize;
            Ok(())
        },
    ),
    rw(
        "timeout",
        None,
        |v| v.runtime.timeout_seconds.to_string(),
        |r, v| {
            r.timeout_seconds = integer(v, 0, i64::from(i32::MAX))? as u64;
            Ok(())
        },
    ),
    rw(
        "notify-keyspace-events",
        None,
        |v| crate::notify::render(v.runtime.notify_keyspace_events),
        |r, v| {
            r.notify_keyspace_events = crate::notify::parse(v.as_bytes())
                .ok_or_else(|| crate::notify::flags::INVALID.to_string())?;
            Ok(())
        },
    ),
    // The value and the change live in the users file: see REQUIREPASS.
    rw(REQUIREPASS, None, |_| String::new(), |_, _| Ok(())),
    ro("databases", |v| v.config.databases.to_string()),
    // Checked and applied by CONFIG SET itself (`commands::config`): the value in force is
    // accepted, a port in use is refused with Redis's text, any other needs a restart.
    rw("port", None, port, |_, v| integer(v, 0, 65535).map(|_| ())),
    rw("tls-port", None, tls_port, |_, v| {
        integer(v, 0, 65535).map(|_| ())
    }),
    fixed("bind", |v| v.bound.ip().to_string(), verbatim, "--bind"),
    fixed(
        "tls-cert-file",
        |v| tls_file(v, &v.config.tls_cert, "cert.pem"),
        verbatim,
        "--tls-cert",
    ),
    fixed(
        "tls-key-file",
        |v| tls_file(v, &v.config.tls_key, "key.pem"),
        verbatim,
        "--tls-key",
    ),
    fixed(
        "tls-ca-cert-file",
        |v| path_or_empty(&v.config.tls_ca),
        verbatim,
        "--tls-ca",
    ),
    fixed(
        "tls-auth-clients",
        |v| yes_no(v.config.tls_ca.is_some()),
        auth_clients,
        "--tls-ca",
    ),
    // Redis's debugging knob for loading (a delay per key loaded); shardline loads its log
    // only at start, before any CONFIG SET: kept and shown, no effect.
    hidden(
        "key-load-delay",
        |v| v.runtime.key_load_delay.to_string(),
        |r, v| {
            r.key_load_delay = integer(v, i64::from(i32::MIN), i64::from(i32::MAX))? as i32;
            Ok(())
        },
    ),
    ro("enable-debug-command", |v| {
        yes_no(v.config.enable_debug_command)
    }),
    // Encodings OBJECT ENCODING reports (runtime).
    rw(
        "hash-max-listpack-entries",
        Some("hash-max-ziplist-entries"),
        |v| v.runtime.encoding.hash_max_listpack_entries.to_string(),
        |r, v| {
            r.encoding.hash_max_listpack_entries = count(v, 0)?;
            Ok(())
        },
    ),
    rw(
        "hash-max-listpack-value",
        Some("hash-max-ziplist-value"),
        |v| v.runtime.encoding.hash_max_listpack_value.to_string(),
        |r, v| {
            r.encoding.hash_max_listpack_value = count(v, 0)?;
            Ok(())
        },
    ),
    rw(
        "set-max-intset-entries",
        None,
        |v| v.runtime.encoding.set_max_intset_entries.to_string(),
        |r, v| {
            r.encoding.set_max_intset_entries = count(v, 0)?;
            Ok(())
        },
    ),
    rw(
        "zset-max-listpack-entries",
        Some("zset-max-ziplist-entries"),
        |v| v.runtime.encoding.zset_max_listpack_entries.to_string(),
        |r, v| {
            r.encoding.zset_max_listpack_entries = count(v, 0)?;
            Ok(())
        },
    ),
    rw(
        "zset-max-listpack-value",
        Some("zset-max-ziplist-value"),
        |v| v.runtime.encoding.zset_max_listpack_value.to_string(),
        |r, v| {
            r.encoding.zset_max_listpack_value = count(v, 0)?;
            Ok(())
        },
    ),
    rw(
        "list-max-listpack-size",
        Some("list-max-ziplist-size"),
        |v| v.runtime.encoding.list_max_listpack_size.to_string(),
        |r, v| {
            r.encoding.list_max_listpack_size =
                integer(v, i64::from(i32::MIN), i64::from(i32::MAX))?;
            Ok(())
        },
    ),
    rw(
        "list-compress-depth",
        None,
        |v| v.runtime.encoding.list_compress_depth.to_string(),
        |r, v| {
            r.encoding.list_compress_depth = count(v, 0)?;
            Ok(())
        },
    ),
    // shardline's own options, read-only and hidden, under their flag names.
    own("smp", |v| v.shards.to_string()),
    own("task-quota-ms", |v| v.config.task_quota_ms.to_string()),
    own("backlog", |v| v.config.backlog.to_string()),
    own("tls", |v| yes_no(v.config.tls == TlsSwitch::On)),
    own("handshake-timeout-ms", |v| {
        v.config.handshake_timeout_ms.to_string()
    }),
    own("handshake-max-ms", |v| {
        v.config.handshake_max_ms.to_string()
    }),
    own("tls-ticket-key-rotation", |v| {
        humantime::format_duration(v.config.tls_ticket_key_rotation).to_string()
    }),
    own("users", |v| v.config.users_path().display().to_string()),
    own("data-dir", |v| v.config.data_dir.display().to_string()),
    own("hash-mode", |v| v.config.hash_mode.to_string()),
    own("hash-batch", |v| v.config.hash_batch.to_string()),
    own("hash-yield-every-rounds", |v| {
        v.config.hash_yield_every_rounds.to_string()
    }),
    own("hash-threads", |v| v.config.hash_threads.to_string()),
    own("hash-queue-capacity", |v| {
        v.config.hash_queue_capacity.to_string()
    }),
    own("auth-shares", |v| v.config.auth_shares.to_string()),
    own("max-concurrent-logins", |v| {
        v.config.max_concurrent_logins.to_string()
    }),
    own("login-queue-timeout-ms", |v| {
        v.config.login_queue_timeout_ms.to_string()
    }),
    own("login-queue-lifo-ms", |v| {
        v.config.login_queue_lifo_ms.to_string()
    }),
    own("credentials-cache-ttl-ms", |v| {
        v.config.credentials_cache_ttl_ms.to_string()
    }),
    own("credentials-cache-capacity", |v| {
        v.config.credentials_cache_capacity.to_string()
    }),
    own("max-password-bytes", |v| {
        v.config.max_password_bytes.to_string()
    }),
    own("max-hash-rounds", |v| v.config.max_hash_rounds.to_string()),
    own("max-auth-failures", |v| {
        v.config.max_auth_failures.to_string()
    }),
    own("metrics-bind", |v| v.config.metrics_bind.to_string()),
    own("metrics-max-concurrent-scrapes", |v| {
        v.config.metrics_max_concurrent_scrapes.to_string()
    }),
    own("metrics-request-timeout-ms", |v| {
        v.config.metrics_request_timeout_ms.to_string()
    }),
    own("blocked-reactor-notify-ms", |v| {
        v.config.blocked_reactor_notify_ms.to_string()
    }),
    own("blocked-reactor-reports-per-minute", |v| {
        v.config.blocked_reactor_reports_per_minute.to_string()
    }),
    own("shutdown-timeout", |v| {
        humantime::format_duration(v.config.shutdown_timeout).to_string()
    }),
    own("max-multibulk-len", |v| {
        v.config.max_multibulk_len.to_string()
    }),
    own("expire-sweep-keys", |v| {
        v.config.expire_sweep_keys.to_string()
    }),
    own("cross-shard-queue", |v| {
        v.config.cross_shard_queue.to_string()
    }),
    own("tls-provider", |v| v.config.tls_provider.to_string()),
    own("aof-fsync-yield-us", |v| {
        v.config.aof_fsync_yield_us.to_string()
    }),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Cli;
    use clap::Parser;

    fn runtime() -> RuntimeConfig {
        let cli = Cli::parse_from(["shardline"]);
        RuntimeConfig::from_config(&cli.server, 100)
    }

    #[test]
    fn aliases_and_case_find_the_same_parameter() {
        let by_alias = find("HASH-MAX-ZIPLIST-ENTRIES").map(|p| p.name);
        assert_eq!(by_alias, Some("hash-max-listpack-entries"));
        assert!(find("no-such-parameter").is_none());
        assert!(!find("databases").is_some_and(Param::is_mutable));
    }

    #[test]
    fn lookup_answers_the_name_as_the_table_spells_it() {
        let name = |asked: &str| lookup(asked).map(|(_, n)| n);
        assert_eq!(name("MAXMEMORY"), Some("maxmemory"));
        assert_eq!(
            name("Hash-Max-Ziplist-Entries"),
            Some("hash-max-ziplist-entries")
        );
        assert_eq!(
            name("hash-max-listpack-entries"),
            Some("hash-max-listpack-entries")
        );
        assert_eq!(name("nosuch"), None);
        assert!(find("key-load-delay").is_some_and(|p| p.hidden && p.is_mutable()));
        assert!(find("smp").is_some_and(|p| p.hidden && !p.is_mutable()));
        assert!(find("maxmemory").is_some_and(|p| !p.hidden));
    }

    #[test]
    fn fixed_parameters_take_only_the_value_in_force() {
        let cli = Cli::parse_from(["shardline", "--tls", "off"]);
        let current = runtime();
        let view = View {
            config: &cli.server,
            runtime: &current,
            bound: "127.0.0.1:6379".parse().expect("address"),
            shards: 1,
        };
        let mut next = current.clone();
        let bind = find("bind").expect("known");
        assert!(bind.is_mutable());
        assert_eq!(bind.set(&view, &mut next, "127.0.0.1"), Ok(()));
        assert_eq!(
            bind.set(&view, &mut next, "0.0.0.0"),
            Err("shardline sets this only at start (--bind)".into())
        );
        let auth = find("tls-auth-clients").expect("known");
        assert_eq!(auth.set(&view, &mut next, "No"), Ok(()));
        assert_eq!(
            auth.set(&view, &mut next, "optional"),
            Err("shardline sets this only at start (--tls-ca)".into())
        );
        assert_eq!(
            find("tls-port").expect("known").set(&view, &mut next, "x"),
            Err("argument couldn't be parsed into an integer".into())
        );
        assert_eq!(next, current);
    }

    #[test]
    fn pubsub_class_defaults_to_redis_and_follows_its_option() {
        assert_eq!(
            runtime().pubsub_output_limit,
            crate::runtime::DEFAULT_PUBSUB_OUTPUT_LIMIT
        );
        let cli = Cli::parse_from([
            "shardline",
            "--client-output-buffer-limit-pubsub",
            "pubsub 1mb 512kb 5",
        ]);
        let r = RuntimeConfig::from_config(&cli.server, 100);
        assert_eq!(
            (
                r.pubsub_output_limit.hard_bytes,
                r.pubsub_output_limit.soft_bytes,
                r.pubsub_output_limit.soft_seconds
            ),
            (1 << 20, 512 << 10, 5)
        );
        assert!(
            Cli::try_parse_from(["shardline", "--client-output-buffer-limit-pubsub", "1mb 2"])
                .is_err()
        );
    }

    #[test]
    fn output_limits_set_classes_all_or_nothing() {
        let mut r = runtime();
        let param = find("client-output-buffer-limit").expect("known");
        param
            .apply(&mut r, "normal 1mb 2kb 3 pubsub 1 2 3")
            .expect("valid");
        assert_eq!(r.client_output_buffer_limit.hard_bytes, 1 << 20);
        assert_eq!(r.client_output_buffer_limit.soft_bytes, 2048);
        assert_eq!(r.pubsub_output_limit.soft_seconds, 3);
        let before = r.clone();
        assert_eq!(
            param.apply(&mut r, "normal 0 0 0 bogus 1 2 3"),
            Err("Invalid client class specified in buffer limit configuration.".into())
        );
        assert_eq!(
            param.apply(&mut r, "normal 1 2"),
            Err("Wrong number of arguments in buffer limit configuration.".into())
        );
        assert_eq!(r, before);
    }

    #[test]
    fn notify_keyspace_events_parses_renders_and_refuses_as_redis() {
        let mut r = runtime();
        assert_eq!(r.notify_keyspace_events, 0);
        let param = find("NOTIFY-KEYSPACE-EVENTS").expect("known");
        let shown = |r: &RuntimeConfig| {
            let cli = Cli::parse_from(["shardline"]);
            let view = View {
                config: &cli.server,
                runtime: r,
                bound: "127.0.0.1:0".parse().expect("address"),
                shards: 1,
            };
            param.value(&view)
        };
        assert_eq!(shown(&r), "");
        param.apply(&mut r, "KEA").expect("valid");
        assert_eq!(shown(&r), "AKE");
        param.apply(&mut r, "$lshzxeKE").expect("valid");
        assert_eq!(shown(&r), "$lshzxeKE");
        assert_eq!(
            param.apply(&mut r, "KEQ"),
            Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into())
        );
        assert_eq!(shown(&r), "$lshzxeKE");
        let cli = Cli::parse_from(["shardline", "--notify-keyspace-events", "Ex"]);
        let r = RuntimeConfig::from_config(&cli.server, 100);
        assert_eq!(shown(&r), "xE");
        assert!(Cli::try_parse_from(["shardline", "--notify-keyspace-events", "KEw"]).is_err());
    }

    #[test]
    fn numbers_follow_redis_errors() {
        let mut r = runtime();
        let slow = find("slowlog-log-slower-than").expect("known");
        assert_eq!(
            slow.apply(&mut r, "-2"),
            Err("argument must be between -1 and 9223372036854775807 inclusive".into())
        );
        assert_eq!(
            slow.apply(&mut r, "x"),
            Err("argument couldn't be parsed into an integer".into())
        );
        slow.apply(&mut r, "-1").expect("valid");
        assert_eq!(r.slowlog_log_slower_than, -1);
        let policy = find("maxmemory-policy").expect("known");
        policy
            .apply(&mut r, "VOLATILE-TTL")
            .expect("case-insensitive");
        assert_eq!(r.maxmemory_policy, EvictionPolicy::VolatileTtl);
    }
}
