//! Commands served by the connection itself rather than by a key's owner shard: one file per
//! command family.

mod admin;
pub mod auth;
pub mod blocking;
mod client;
mod client_admin;
mod command_info;
mod composed;
mod composed_keys;
mod config;
mod cross_shard;
mod debug;
mod debug_data;
mod functions;
mod info;
mod info_figures;
mod keyspace_wide;
mod object;
mod persistence;
pub mod pubsub;
mod requirepass;
mod scripting;
mod slowlog;
mod subcommands;

use std::rc::Rc;

use bytes::Bytes;

use super::dispatch::Flow;
use super::pipeline::Pipeline;
use super::probe::ProbeRecord;
use super::session::Session;
use super::CloseReason;
use crate::cmd::table::CommandSpec;
use crate::resp::Frame;
use crate::shard::Shard;

pub use keyspace_wide::all_shards;
pub use subcommands::lookup as subcommands_of;
pub use subcommands::name_of as subcommand_name;

/// Executes a command whose routing is `Connection`; arity and authentication were checked.
pub async fn execute(
    shard: &Rc<Shard>,
    session: &mut Session,
    spec: &'static CommandSpec,
    args: Vec<Bytes>,
    pipeline: &mut Pipeline,
    client: &mut dyn ProbeRecord,
) -> Flow {
    let reply = match spec.name {
        "ping" if session.protocol == crate::resp::Protocol::Resp2 && session.is_subscribed() => {
            pubsub::subscribed_ping(&args)
        }
        "ping" => match args.as_slice() {
            [_] => Frame::Simple("PONG".into()),
            [_, message] => Frame::Bulk(message.clone()),
            _ => crate::cmd::reply::wrong_arity("ping"),
        },
        "echo" => Frame::Bulk(args[1].clone()),
        "select" => select(shard, session, &args[1]),
        "quit" => {
            pipeline.ready(session.protocol, Frame::ok());
            return Flow::Close(CloseReason::Quit);
        }
        "shutdown" => match admin::shutdown(&args) {
            Ok(()) => return Flow::Close(CloseReason::Shutdown),
            Err(error) => error,
        },
        "reset" => {
            session.watched.clear().await;
            pubsub::leave_all(shard, session);
            session.reset();
            auth::default_login(shard, session);
            pipeline.set_reply_mode(super::pipeline::ReplyMode::On);
            Frame::Simple("RESET".into())
        }
        "auth" => match auth::auth(shard, session, &args, client).await {
            Ok(frame) => frame,
            Err(close) => return close.finish(shard, session, pipeline),
        },
        "hello" => match auth::hello(shard, session, &args, client).await {
            Ok(frame) => frame,
            Err(close) => return close.finish(shard, session, pipeline),
        },
        "client" => client::client(shard, session, &args, pipeline).await,
        "time" => time(),
        "info" => info::info(shard, &args).await,
        "lastsave" => info::last_save(shard).await,
        "bgrewriteaof" | "bgsave" | "save" => persistence::rewrite(shard, spec.name).await,
        "config" if is_resetstat(&args) => info_figures::reset_stats(shard).await,
        "config" => config::config(shard, &args).await,
        "command" => command_info::command(&args),
        "object" => object::object(shard, session.db, &args).await,
        "memory" => object::memory(shard, session.db, &args).await,
        "slowlog" => slowlog::slowlog(shard, &args).await,
        "debug" => {
            if let Some(push) = debug::push_before(shard, session.protocol, &args) {
                pipeline.ready(session.protocol, push);
            }
            debug::debug(shard, session, &args).await
        }
        "rename" | "renamenx" | "copy" | "msetnx" | "lcs" => {
            cross_shard::execute(shard, session.db, session.txn_scope, spec.name, args).await
        }
        "subscribe" | "unsubscribe" | "psubscribe" | "punsubscribe" => {
            pubsub::subscription(shard, session, spec.name, &args, pipeline);
            return Flow::Continue;
        }
        "pubsub" => pubsub::pubsub(shard, &args).await,
        name if blocking::serves(name) => {
            match blocking::start(shard, session, name, args, None).await {
                blocking::Start::Reply(reply) => reply,
                blocking::Start::Blocked(wait) => {
                    session.blocked = Some(wait);
                    return Flow::Continue;
                }
            }
        }
        name if composed::serves(name) => {
            composed::execute(shard, session.db, session.txn_scope, name, args).await
        }
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" => {
            scripting::eval(shard, session, spec.name, &args).await
        }
        "cluster" => match scripting::subcommand("cluster", &args) {
            Ok(_) => Frame::error(CLUSTER_DISABLED),
            Err(error) => error,
        },
        "fcall" | "fcall_ro" => functions::fcall(shard, session, spec.name, &args).await,
        "function" => functions::function(shard, &args).await,
        "script" => scripting::script(shard, &args).await,
        other => Frame::error(format!("ERR unknown command '{other}'")),
    };
    if let Frame::Error(text) = &reply {
        shard
            .metrics
            .command_error(shardline_metrics::labels::error_kind::of_reply(text));
    }
    pipeline.ready(session.protocol, reply);
    Flow::Continue
}

/// Redis 7.0's reply to CLUSTER on a server without cluster support.
pub const CLUSTER_DISABLED: &str = "ERR This instance has cluster support disabled";

/// CONFIG RESETSTAT, which reaches every shard ([`info_figures::reset_stats`]).
fn is_resetstat(args: &[Bytes]) -> bool {
    args.len() == 2 && args[1].eq_ignore_ascii_case(b"resetstat")
}

/// TIME: `[unix seconds, microseconds]` as bulk strings (Redis 7 `timeCommand`).
/// TIME's reply: seconds and microseconds since the Unix epoch.
pub fn time() -> Frame {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Frame::Array(vec![
        Frame::Bulk(Bytes::from(now.as_secs().to_string())),
        Frame::Bulk(Bytes::from(now.subsec_micros().to_string())),
    ])
}

/// SELECT index: the session's database for the commands that follow (Redis 7
/// `selectCommand`). Errors: see [`crate::cmd::databases::db_index`].
fn select(shard: &Shard, session: &mut Session, index: &[u8]) -> Frame {
    match crate::cmd::databases::db_index(index, shard.shared.config.databases, None) {
        Ok(db) => {
            session.db = db;
            Frame::ok()
        }
        Err(err) => err,
    }
}

/// Whether a script's `redis.call` may run `name`, a connection-routed command with keys
/// (RENAME, SMOVE, SINTERSTORE …), through [`script_keyspace_command`].
pub fn script_composed(name: &str) -> bool {
    composed::serves(name) || matches!(name, "rename" | "renamenx" | "copy" | "msetnx" | "lcs")
}

/// The owner shards of the keys of `args`, a command [`script_composed`] accepts.
pub fn script_composed_owners(shard: &Shard, name: &str, args: &[Bytes]) -> Vec<usize> {
    let keys: Vec<Bytes> = match name {
        "msetnx" => args[1..].iter().step_by(2).cloned().collect(),
        "rename" | "renamenx" | "copy" | "lcs" => args[1..3.min(args.len())].to_vec(),
        _ => composed_keys::keys_of(name, args),
    };
    keys.iter().map(|key| shard.owner_of(key)).collect()
}

/// Runs a keyspace command of a script whose keys span shards or every shard (KEYS,
/// FLUSHALL, RENAME, SUNIONSTORE …) inside the script's transaction `txn`, which holds them.
pub async fn script_keyspace_command(
    shard: &Rc<Shard>,
    db: usize,
    txn: Option<crate::forward::TxnId>,
    spec: &'static CommandSpec,
    args: Vec<Bytes>,
) -> Frame {
    match spec.name {
        "rename" | "renamenx" | "copy" | "msetnx" | "lcs" => {
            cross_shard::execute(shard, db, txn, spec.name, args).await
        }
        name if composed::serves(name) => composed::execute(shard, db, txn, name, args).await,
        _ => all_shards(shard, db, txn, spec, args).await,
    }
}
