//! CONFIG GET, SET, RESETSTAT, REWRITE and HELP (Redis 7.0 `config.c`) over the parameter
//! table of [`crate::runtime::params`].
//!
//! CONFIG GET takes several patterns: one without glob characters (`*`, `?`, `[`) names a
//! parameter exactly (ASCII case-insensitively, answered under the spelling asked for, hidden
//! parameters included); a glob matches every name but the hidden ones. A parameter matched
//! by several arguments is answered once, under the first one's spelling.
//!
//! CONFIG SET takes several `name value` pairs and applies all or none (Redis 7.0
//! `configSetCommand`): every name is checked first, in order (unknown, immutable,
//! duplicate: a name and its alias are two parameters, as in Redis 7.0), then every value is
//! parsed into a copy of this shard's configuration (a parameter fixed at start is checked
//! against its value in force), and only when all succeed is the copy installed on every
//! shard (one hop to each; the reply comes once all have it). Nothing is changed before
//! every value is known good, so a failure leaves every parameter as it was: there is no
//! partial state to roll back.

use bytes::Bytes;

use crate::keyspace::glob::string_match;
use crate::resp::Frame;
use crate::runtime::params::{self, View};
use crate::runtime::RuntimeConfig;
use crate::shard::Shard;

const HELP: &[&str] = &[
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
    "HELP",
    "    Prints this help.",
];

/// `CONFIG GET pattern [pattern …]` → map of matching parameters (RESP2: flat array);
/// `CONFIG SET name value [name value …]` → OK once every shard has the new values;
/// `CONFIG RESETSTAT` → OK (no-op); `CONFIG REWRITE` → error (no configuration file).
pub async fn config(shard: &Shard, args: &[Bytes]) -> Frame {
    let sub = args[1].to_ascii_uppercase();
    match sub.as_slice() {
        b"GET" if args.len() >= 3 => get(shard, &args[2..]),
        b"SET" if args.len() >= 4 && args.len().is_multiple_of(2) => set(shard, &args[2..]).await,
        // A name without its value after at least one pair (Redis: `c->argc % 2`).
        b"SET" if args.len() >= 4 => Frame::error("ERR syntax error"),
        b"GET" | b"SET" | b"RESETSTAT" | b"REWRITE" | b"HELP"
            if args.len() != 2 || sub.as_slice() == b"GET" || sub.as_slice() == b"SET" =>
        {
            Frame::error(format!(
                "ERR wrong number of arguments for 'config|{}' command",
                String::from_utf8_lossy(&args[1]).to_ascii_lowercase()
            ))
        }
        b"RESETSTAT" => Frame::ok(),
        b"REWRITE" => Frame::error("ERR The server is running without a config file"),
        b"HELP" => Frame::Array(
            HELP.iter()
                .map(|line| Frame::Simple((*line).to_string()))
                .collect(),
        ),
        _ => Frame::error(format!(
            "ERR unknown subcommand '{}'. Try CONFIG HELP.",
            String::from_utf8_lossy(&args[1])
        )),
    }
}

fn get(shard: &Shard, patterns: &[Bytes]) -> Frame {
    let runtime = shard.runtime.borrow();
    let view = view(shard, &runtime);
    // The spelling a name is answered under: the first argument that matches it.
    let answered_as = |param: &params::Param, name: &'static str| {
        patterns.iter().find_map(|pattern| {
            let is_glob = pattern.iter().any(|b| matches!(b, b'*' | b'?' | b'['));
            if !is_glob {
                return pattern
                    .eq_ignore_ascii_case(name.as_bytes())
                    .then(|| pattern.clone());
            }
            (!param.hidden && string_match(pattern, name.as_bytes(), true))
                .then(|| Bytes::from_static(name.as_bytes()))
        })
    };
    let mut pairs = Vec::new();
    for param in params::all() {
        for name in std::iter::once(param.name).chain(param.alias) {
            if let Some(key) = answered_as(param, name) {
                let value = if param.name == params::REQUIREPASS {
                    super::requirepass::get(shard)
                } else {
                    Bytes::from(param.value(&view))
                };
                pairs.push((Frame::Bulk(key), Frame::Bulk(value)));
            }
        }
    }
    Frame::Map(pairs)
}

/// Checks every name (Redis's order of errors), parses every value into a copy of the
/// configuration, checks a new `port` can be bound, then installs it on every shard.
/// `requirepass` is applied last, to the users file ([`super::requirepass::set`]).
async fn set(shard: &Shard, pairs: &[Bytes]) -> Frame {
    let mut found: Vec<(&params::Param, &'static str, String)> =
        Vec::with_capacity(pairs.len() / 2);
    let mut requirepass = None;
    for pair in pairs.chunks(2) {
        let asked = String::from_utf8_lossy(&pair[0]);
        let Some((param, name)) = params::lookup(&asked) else {
            return Frame::error(format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{asked}'"
            ));
        };
        // Redis names the argument as given here, and as its table spells it below.
        if !param.is_mutable() {
            return failed(&asked, "can't set immutable config");
        }
        if found.iter().any(|(_, seen, _)| *seen == name) {
            return failed(&asked, "duplicate parameter");
        }
        if param.name == params::REQUIREPASS {
            requirepass = Some((asked.to_string(), &pair[1]));
        }
        found.push((param, name, String::from_utf8_lossy(&pair[1]).into_owned()));
    }
    let next = {
        let runtime = shard.runtime.borrow();
        let current = view(shard, &runtime);
        let mut next: RuntimeConfig = runtime.clone();
        for (param, name, value) in &found {
            if let Err(reason) = param.set(&current, &mut next, value) {
                return failed(name, &reason);
            }
        }
        next
    };
    // Redis's "apply" phase: nothing is installed when one fails.
    for (param, name, value) in &found {
        if matches!(param.name, "port" | "tls-port") {
            if let Err(reason) = check_port(shard, param, value) {
                return failed(name, &reason);
            }
        }
    }
    // Last, once every other value parsed: the only part that can fail after changing
    // something (the users file).
    if let Some((name, password)) = requirepass {
        if let Err(reason) = super::requirepass::set(shard, password).await {
            return failed(&name, &reason);
        }
    }
    // Redis's `updateMaxmemory`: a new nonzero limit evicts at once (and publishes the
    // `evicted` events) instead of waiting for the next command.
    let evict = next.maxmemory != 0 && next.maxmemory != shard.runtime.borrow().maxmemory;
    shard
        .run_on_all(|| {
            let next = next.clone();
            Box::new(move |s: &Shard| {
                crate::runtime::apply(s, next);
                if evict {
                    let now_ms = s.clock.unix_ms(crate::clock::CommandInstant::now());
                    crate::eviction::out_of_memory(s, now_ms);
                }
                Frame::ok()
            })
        })
        .await;
    Frame::ok()
}

/// CONFIG SET `port` / `tls-port` `value` (a valid port number): the value in force is
/// accepted (no-op); a port that cannot be bound on the listening address is refused with
/// Redis's text; any other is refused too, as the shards' listeners are bound once at start
/// (`--bind`; a restart moves them).
fn check_port(shard: &Shard, param: &params::Param, value: &str) -> Result<(), String> {
    let runtime = shard.runtime.borrow();
    let view = view(shard, &runtime);
    if param.value(&view) == value.trim() {
        return Ok(());
    }
    let port: u16 = value
        .trim()
        .parse()
        .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
    let addr = std::net::SocketAddr::new(shard.shared.bound.ip(), port);
    if port != 0 && std::net::TcpListener::bind(addr).is_err() {
        tracing::warn!("CONFIG SET {}: cannot listen on {addr}", param.name);
        return Err("Unable to listen on this port. Check server logs.".into());
    }
    Err(format!(
        "shardline listens on {} (--bind) until restarted with another address",
        shard.shared.bound
    ))
}

/// What CONFIG GET shows of `shard` with its runtime configuration `runtime`.
fn view<'a>(shard: &'a Shard, runtime: &'a RuntimeConfig) -> View<'a> {
    View {
        config: &shard.shared.config,
        runtime,
        bound: shard.shared.bound,
        shards: shard.nr_shards,
    }
}

fn failed(name: &str, reason: &str) -> Frame {
    Frame::error(format!(
        "ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}"
    ))
}
