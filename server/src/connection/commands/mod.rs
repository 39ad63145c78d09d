//! Commands served by the connection itself rather than by a key's owner shard: one file per
//! command family.

mod admin;
mod auth;
mod client;
mod command_info;
mod config_get;
mod cross_shard;
mod info;
mod keyspace_wide;
mod persistence;
mod scripting;

use std::rc::Rc;

use bytes::Bytes;

use super::dispatch::Flow;
use super::pipeline::Pipeline;
use super::session::Session;
use super::CloseReason;
use crate::cmd::table::CommandSpec;
use crate::resp::Frame;
use crate::shard::Shard;

pub use keyspace_wide::all_shards;

/// Executes a command whose routing is `Connection`; arity and authentication were checked.
pub async fn execute(
    shard: &Rc<Shard>,
    session: &mut Session,
    spec: &'static CommandSpec,
    args: Vec<Bytes>,
    pipeline: &mut Pipeline,
) -> Flow {
    let reply = match spec.name {
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
        "reset" => {
            session.reset();
            Frame::Simple("RESET".into())
        }
        "auth" => match auth::auth(shard, session, &args).await {
            Ok(frame) => frame,
            Err(close) => return close.finish(shard, session, pipeline),
        },
        "hello" => match auth::hello(shard, session, &args).await {
            Ok(frame) => frame,
            Err(close) => return close.finish(shard, session, pipeline),
        },
        "client" => client::client(shard, session, &args),
        "info" => info::info(shard, session, &args).await,
        "lastsave" => info::last_save(shard).await,
        "bgrewriteaof" | "bgsave" | "save" => persistence::rewrite(shard, spec.name).await,
        "config" => config_get::config(shard, &args),
        "command" => command_info::command(&args),
        "debug" => admin::debug(shard, &args),
        "rename" | "renamenx" | "copy" | "msetnx" | "lcs" => {
            cross_shard::execute(shard, session.db, spec.name, args).await
        }
        "function" => scripting::function(&args),
        "script" => scripting::script(&args),
        other => Frame::error(format!("ERR unknown command '{other}'")),
    };
    if matches!(reply, Frame::Error(_)) {
        shard.metrics.command_error("command");
    }
    pipeline.ready(session.protocol, reply);
    Flow::Continue
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
