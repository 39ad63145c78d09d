//! MULTI / EXEC / DISCARD (Redis 7 `multi.c`): a connection queues commands after MULTI and
//! runs them at EXEC.
//!
//! A transaction whose keys all belong to one owner shard runs there as one job: no other
//! command interleaves, as in Redis. A transaction that spans shards, or holds keyless
//! commands, runs command by command in order, like any multi-key command here: every command
//! runs, but other clients may see the state between two of them (README, "Compatibility
//! notes"). WATCH is refused rather than silently ignored.
//!
//! Databases: the queued commands run on the session's database at EXEC. A queued SELECT (a
//! connection command) makes the transaction run command by command, so it changes the
//! database for the commands after it and for the session afterwards, as in Redis.

use std::rc::Rc;

use bytes::Bytes;

use super::dispatch::{dispatch, Flow};
use super::pipeline::Pipeline;
use super::session::Session;
use crate::cmd::table::{self, KeyRouting};
use crate::forward::{await_reply, ShardJob};
use crate::resp::Frame;
use crate::shard::Shard;

/// The commands queued since MULTI.
#[derive(Debug, Default)]
pub struct Transaction {
    /// Queued requests (name and arguments), in order.
    pub queued: Vec<Vec<Bytes>>,
    /// A request was refused while queueing (unknown command, wrong arity): EXEC aborts.
    pub aborted: bool,
}

/// Whether `name` runs at once inside MULTI instead of being queued (Redis 7 `processCommand`).
pub fn runs_inside_multi(name: &str) -> bool {
    matches!(
        name,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    )
}

/// MULTI, EXEC, DISCARD, WATCH and UNWATCH.
pub async fn execute(
    shard: &Rc<Shard>,
    session: &mut Session,
    name: &str,
    pipeline: &mut Pipeline,
) -> Flow {
    let protocol = session.protocol;
    let reply = match name {
        "multi" if session.transaction.is_some() => {
            Frame::error("ERR MULTI calls can not be nested")
        }
        "multi" => {
            session.transaction = Some(Transaction::default());
            Frame::ok()
        }
        "discard" => match session.transaction.take() {
            Some(_) => Frame::ok(),
            None => Frame::error("ERR DISCARD without MULTI"),
        },
        "exec" => match session.transaction.take() {
            None => Frame::error("ERR EXEC without MULTI"),
            Some(txn) if txn.aborted => {
                Frame::error("EXECABORT Transaction discarded because of previous errors.")
            }
            Some(txn) => return exec(shard, session, txn.queued, pipeline).await,
        },
        "watch" if session.transaction.is_some() => {
            Frame::error("ERR WATCH inside MULTI is not allowed")
        }
        "watch" => Frame::error(
            "ERR WATCH is not supported by shardline: keys live on different shards; \
             use MULTI/EXEC without WATCH",
        ),
        // Nothing is ever watched.
        "unwatch" => Frame::ok(),
        other => Frame::error(format!("ERR unknown command '{other}'")),
    };
    if matches!(reply, Frame::Error(_)) {
        shard.metrics.command_error("command");
    }
    pipeline.ready(protocol, reply);
    Flow::Continue
}

/// Runs the queued requests and replies with an array of their replies.
async fn exec(
    shard: &Rc<Shard>,
    session: &mut Session,
    queued: Vec<Vec<Bytes>>,
    pipeline: &mut Pipeline,
) -> Flow {
    let (protocol, db) = (session.protocol, session.db);
    if let Some(owner) = single_owner(shard, &queued) {
        let job: ShardJob = Box::new(move |s: &Shard| {
            s.execute_transaction(|| {
                Frame::Array(
                    queued
                        .iter()
                        .map(|args| s.execute_local(db, args))
                        .collect(),
                )
            })
        });
        if owner == shard.id {
            let frame = job(shard);
            pipeline.durable(protocol, frame, shard.durable());
        } else {
            let receiver = shard.peers.submit_to(owner, job).await;
            pipeline.later(protocol, Box::pin(await_reply(receiver)));
        }
        return Flow::Continue;
    }
    // The array header, then each reply as the command produces it (as Redis writes EXEC).
    pipeline.raw(Bytes::from(format!("*{}\r\n", queued.len())));
    for args in queued {
        let flow = Box::pin(dispatch(shard, session, args, pipeline)).await;
        if flow != Flow::Continue {
            return flow;
        }
    }
    Flow::Continue
}

/// The one shard owning every key of `queued`, if all of them are keyed commands on one shard.
fn single_owner(shard: &Shard, queued: &[Vec<Bytes>]) -> Option<usize> {
    let mut owner = None;
    for args in queued {
        let spec = table::lookup(args.first()?)?;
        let keys: Vec<&Bytes> = match spec.routing {
            KeyRouting::SingleKey => vec![args.get(1)?],
            KeyRouting::MultiKey { step } => args.get(1..)?.iter().step_by(step.max(1)).collect(),
            KeyRouting::Connection | KeyRouting::AllShards => return None,
        };
        for key in keys {
            let key_owner = shard.owner_of(key);
            if *owner.get_or_insert(key_owner) != key_owner {
                return None;
            }
        }
    }
    owner
}
