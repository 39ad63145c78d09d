//! Redis's configuration parameter names (Redis 7.0 `config.c` `standardConfig` table) for
//! CONFIG GET and CONFIG SET, mapped onto shardline's options: the mutable ones onto
//! [`RuntimeConfig`], the others read from the command line. shardline's own options appear
//! under their flag names (`smp`, `task-quota-ms`, ...), read-only.

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

/// One parameter: its Redis name, an alias (Redis 7's old `ziplist` names), how to read it
/// and, when CONFIG SET may change it, how to set it.
pub struct Param {
    /// The name CONFIG GET shows.
    pub name: &'static str,
    /// A second name for the same parameter (shown by CONFIG GET when it matches too).
    pub alias: Option<&'static str>,
    get: Getter,
    set: Option<Setter>,
}

impl Param {
    /// The value as CONFIG GET shows it.
    pub fn value(&self, view: &View) -> String {
        (self.get)(view)
    }

    /// Whether CONFIG SET may change it.
    pub fn is_mutable(&self) -> bool {
        self.set.is_some()
    }

    /// Sets the parameter to `value` in `runtime`. Errors: Redis's reason text (`can't set
    /// immutable config`, `argument must be a memory value`, ...).
    pub fn apply(&self, runtime: &mut RuntimeConfig, value: &str) -> Result<(), String> {
        match self.set {
            Some(set) => set(runtime, value),
            None => Err("can't set immutable config".into()),
        }
    }
}

/// `requirepass`: listed here so that CONFIG GET matches it and CONFIG SET accepts it, but
/// read and set by `connection::commands::requirepass` (the users file), not through
/// [`RuntimeConfig`].
pub const REQUIREPASS: &str = "requirepass";

/// The parameter named `name` (or aliased so), ASCII case-insensitively.
pub fn find(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| {
        p.name.eq_ignore_ascii_case(name) || p.alias.is_some_and(|a| a.eq_ignore_ascii_case(name))
    })
}

/// Every parameter.
pub fn all() -> &'static [Param] {
    PARAMS
}

const fn ro(name: &'static str, get: Getter) -> Param {
    Param {
        name,
        alias: None,
        get,
        set: None,
    }
}

const fn rw(name: &'static str, alias: Option<&'static str>, get: Getter, set: Setter) -> Param {
    Param {
        name,
        alias,
        get,
        set: Some(set),
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
            r.auto_aof_rewrite_min_size = memory(v)?;
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
        get: |_| String::new(),
        set: None,
    },
    // No RDB snapshots: `save` is empty, and setting it empty again is accepted.
    rw(
        "save",
        None,
        |_| String::new(),
        |_, v| {
            if v.trim().is_empty() {
                Ok(())
            } else {
                Err("shardline keeps no RDB snapshots (persistence is the append-only log)".into())
            }
        },
    ),
    ro("dir", |v| v.config.data_dir.display().to_string()),
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
    ro("client-query-buffer-limit", |v| {
        v.config.client_query_buffer_limit.to_string()
    }),
    ro("proto-max-bulk-len", |v| {
        v.config.proto_max_bulk_len.to_string()
    }),
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
    ro("bind", |v| v.bound.ip().to_string()),
    ro("tls-cert-file", |v| {
        tls_file(v, &v.config.tls_cert, "cert.pem")
    }),
    ro("tls-key-file", |v| {
        tls_file(v, &v.config.tls_key, "key.pem")
    }),
    ro("tls-ca-cert-file", |v| path_or_empty(&v.config.tls_ca)),
    ro("tls-auth-clients", |v| yes_no(v.config.tls_ca.is_some())),
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
    // shardline's own options, read-only, under their flag names.
    ro("smp", |v| v.shards.to_string()),
    ro("task-quota-ms", |v| v.config.task_quota_ms.to_string()),
    ro("backlog", |v| v.config.backlog.to_string()),
    ro("tls", |v| yes_no(v.config.tls == TlsSwitch::On)),
    ro("handshake-timeout-ms", |v| {
        v.config.handshake_timeout_ms.to_string()
    }),
    ro("handshake-max-ms", |v| {
        v.config.handshake_max_ms.to_string()
    }),
    ro("tls-ticket-key-rotation", |v| {
        humantime::format_duration(v.config.tls_ticket_key_rotation).to_string()
    }),
    ro("users", |v| v.config.users_path().display().to_string()),
    ro("data-dir", |v| v.config.data_dir.display().to_string()),
    ro("hash-mode", |v| v.config.hash_mode.to_string()),
    ro("hash-batch", |v| v.config.hash_batch.to_string()),
    ro("hash-yield-every-rounds", |v| {
        v.config.hash_yield_every_rounds.to_string()
    }),
    ro("hash-threads", |v| v.config.hash_threads.to_string()),
    ro("hash-queue-capacity", |v| {
        v.config.hash_queue_capacity.to_string()
    }),
    ro("auth-shares", |v| v.config.auth_shares.to_string()),
    ro("max-concurrent-logins", |v| {
        v.config.max_concurrent_logins.to_string()
    }),
    ro("login-queue-timeout-ms", |v| {
        v.config.login_queue_timeout_ms.to_string()
    }),
    ro("login-queue-lifo-ms", |v| {
        v.config.login_queue_lifo_ms.to_string()
    }),
    ro("credentials-cache-ttl-ms", |v| {
        v.config.credentials_cache_ttl_ms.to_string()
    }),
    ro("credentials-cache-capacity", |v| {
        v.config.credentials_cache_capacity.to_string()
    }),
    ro("max-password-bytes", |v| {
        v.config.max_password_bytes.to_string()
    }),
    ro("max-hash-rounds", |v| v.config.max_hash_rounds.to_string()),
    ro("max-auth-failures", |v| {
        v.config.max_auth_failures.to_string()
    }),
    ro("metrics-bind", |v| v.config.metrics_bind.to_string()),
    ro("metrics-max-concurrent-scrapes", |v| {
        v.config.metrics_max_concurrent_scrapes.to_string()
    }),
    ro("metrics-request-timeout-ms", |v| {
        v.config.metrics_request_timeout_ms.to_string()
    }),
    ro("blocked-reactor-notify-ms", |v| {
        v.config.blocked_reactor_notify_ms.to_string()
    }),
    ro("blocked-reactor-reports-per-minute", |v| {
        v.config.blocked_reactor_reports_per_minute.to_string()
    }),
    ro("shutdown-timeout", |v| {
        humantime::format_duration(v.config.shutdown_timeout).to_string()
    }),
    ro("max-multibulk-len", |v| {
        v.config.max_multibulk_len.to_string()
    }),
    ro("expire-sweep-keys", |v| {
        v.config.expire_sweep_keys.to_string()
    }),
    ro("cross-shard-queue", |v| {
        v.config.cross_shard_queue.to_string()
    }),
    ro("tls-provider", |v| v.config.tls_provider.to_string()),
    ro("aof-fsync-yield-us", |v| {
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
