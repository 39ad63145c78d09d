//! MULTI / EXEC / DISCARD (Redis 7 `multi.c`): a connection queues commands after MULTI and
//! runs them at EXEC.
//!
//! A transaction whose keys (queued and watched) all belong to one owner shard runs there as
//! one job: no other command interleaves, as in Redis. Any other transaction first takes the
//! gates of every shard it touches ([`crate::txn`]; every shard when it holds a keyspace-wide
//! command or a command whose keys are not known in advance), then checks its watched keys,
//! then runs command by command in order, then gives the gates back: no other client runs a
//! command on those shards in between, so the transaction is isolated as in Redis.
//!
//! WATCH (Redis 7 semantics, keys on any shard): EXEC replies with a null array when a
//! watched key was modified, expired or flushed since WATCH ([`crate::txn::watch`]).
//!
//! Databases: the queued commands run on the session's database at EXEC. A queued SELECT (a
//! connection command) makes the transaction run command by command, so it changes the
//! database for the commands after it and for the session afterwards, as in Redis.

use std::rc::Rc;

use bytes::Bytes;

use super::dispatch::{dispatch, run_job_on, Flow};
use super::pipeline::Pipeline;
use super::probe::ProbeRecord;
use super::session::Session;
use crate::cmd::table::{self, KeyRouting};
use crate::forward::ShardJob;
use crate::resp::Frame;
use crate::shard::Shard;
use crate::txn;

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

/// MULTI, EXEC, DISCARD, WATCH and UNWATCH; `client` as for [`dispatch`].
pub async fn execute(
    shard: &Rc<Shard>,
    session: &mut Session,
    name: &str,
    args: &[Bytes],
    pipeline: &mut Pipeline,
    client: &mut dyn ProbeRecord,
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
            Some(_) => {
                session.watched.clear().await;
                Frame::ok()
            }
            None => Frame::error("ERR DISCARD without MULTI"),
        },
        "exec" => match session.transaction.take() {
            None => Frame::error("ERR EXEC without MULTI"),
            Some(txn) if txn.aborted => {
                session.watched.clear().await;
                Frame::error("EXECABORT Transaction discarded because of previous errors.")
            }
            Some(txn) if holds_denyoom(&txn.queued) && out_of_memory(shard, &txn.queued).await => {
                // Redis's `rejectCommand` of EXEC: the transaction is discarded.
                session.watched.clear().await;
                Frame::error(format!(
                    "EXECABORT Transaction discarded because of: {}",
                    crate::eviction::OOM
                ))
            }
            Some(txn) => return exec(shard, session, txn.queued, pipeline, client).await,
        },
        "watch" if session.transaction.is_some() => {
            Frame::error("ERR WATCH inside MULTI is not allowed")
        }
        "watch" => {
            let db = session.db;
            session.watched.watch(shard, db, &args[1..]).await;
            Frame::ok()
        }
        "unwatch" => {
            session.watched.clear().await;
            Frame::ok()
        }
        other => Frame::error(format!("ERR unknown command '{other}'")),
    };
    if matches!(reply, Frame::Error(_)) {
        shard.metrics.command_error("command");
    }
    pipeline.ready(protocol, reply);
    Flow::Continue
}

/// Runs the queued requests and replies with an array of their replies, or with a null
/// array when a watched key changed.
async fn exec(
    shard: &Rc<Shard>,
    session: &mut Session,
    queued: Vec<Vec<Bytes>>,
    pipeline: &mut Pipeline,
    client: &mut dyn ProbeRecord,
) -> Flow {
    let (protocol, db) = (session.protocol, session.db);
    let shards = involved_shards(shard, &queued);
    let all_keyed = queued.iter().all(|args| is_keyed(args));
    let owner = single_owner(shards.as_deref(), session.watched.owners());
    if let Some(owner) = owner.filter(|_| all_keyed) {
        let watched = session.watched.take_for(owner);
        let client = session.client_tag();
        let job: ShardJob = Box::new(move |s: &Shard| {
            if watched.changed_then_unwatch(s) {
                return Frame::NullArray;
            }
            s.execute_transaction(|| {
                Frame::Array(
                    queued
                        .iter()
                        .map(|args| s.execute_client(db, args, &client))
                        .collect(),
                )
            })
        });
        run_job_on(shard, owner, session.txn_scope, job, pipeline, protocol).await;
        return Flow::Continue;
    }
    let wanted: Vec<usize> = match &shards {
        Some(keyed) => keyed
            .iter()
            .copied()
            .chain(session.watched.owners())
            .collect(),
        None => (0..shard.nr_shards).collect(),
    };
    let gates = txn::lock(shard, wanted).await;
    let scope = Some(gates.id());
    let changed = session.watched.any_changed(shard, scope).await;
    session.watched.clear().await;
    if changed {
        gates.release().await;
        pipeline.ready(protocol, Frame::NullArray);
        return Flow::Continue;
    }
    // The array header, then each reply as the command produces it (as Redis writes EXEC).
    pipeline.raw(Bytes::from(format!("*{}\r\n", queued.len())));
    session.txn_scope = scope;
    let mut flow = Flow::Continue;
    for mut args in queued {
        flow = Box::pin(dispatch(shard, session, &mut args, pipeline, &mut *client)).await;
        if flow != Flow::Continue {
            break;
        }
    }
    session.txn_scope = None;
    gates.release().await;
    flow
}

/// Whether `name` is refused with `-OOM` inside MULTI while memory is over `maxmemory`
/// (Redis 7 `processCommand`: every command but EXEC, DISCARD, QUIT and RESET, since queueing
/// uses memory too).
pub fn refused_when_out_of_memory(name: &str) -> bool {
    !matches!(name, "exec" | "discard" | "quit" | "reset")
}

/// Whether a queued command is flagged `denyoom` (Redis's `mstate.cmd_flags`): EXEC is then
/// refused while memory is over `maxmemory`.
fn holds_denyoom(queued: &[Vec<Bytes>]) -> bool {
    queued.iter().any(|args| {
        args.first()
            .and_then(|name| table::lookup(name))
            .is_some_and(|spec| spec.has_flag("denyoom"))
    })
}

/// Redis's `performEvictions() == EVICT_FAIL` for commands `commands` of a transaction: with
/// a `maxmemory` limit, each shard they touch (every shard for a keyspace-wide command) and
/// this connection's shard, which holds the queue, evicts under the policy; `true` when one
/// of them stays over its share. Always `false` (and no hop) without a limit.
pub async fn out_of_memory(shard: &Rc<Shard>, commands: &[Vec<Bytes>]) -> bool {
    if shard.runtime.borrow().maxmemory == 0 {
        return false;
    }
    let mut shards: Vec<usize> = match involved_shards(shard, commands) {
        Some(owners) => owners.into_iter().chain([shard.id]).collect(),
        None => (0..shard.nr_shards).collect(),
    };
    shards.sort_unstable();
    shards.dedup();
    for owner in shards {
        let job: ShardJob = Box::new(|s: &Shard| {
            let now_ms = s.clock.unix_ms(crate::clock::CommandInstant::now());
            if crate::eviction::out_of_memory(s, now_ms) {
                Frame::error(crate::eviction::OOM)
            } else {
                Frame::ok()
            }
        });
        if matches!(shard.run_on_in(owner, None, job).await, Frame::Error(_)) {
            return true;
        }
    }
    false
}

/// The owner shards of the keys of `queued` (with repeats), or `None` when a command touches
/// every shard (KEYS, FLUSHALL …) or its keys are not known in advance.
fn involved_shards(shard: &Shard, queued: &[Vec<Bytes>]) -> Option<Vec<usize>> {
    let mut owners = Vec::new();
    for args in queued {
        let spec = table::lookup(args.first()?)?;
        match spec.routing {
            KeyRouting::SingleKey => owners.push(shard.owner_of(args.get(1)?)),
            KeyRouting::MultiKey { step } => owners.extend(
                args.get(1..)?
                    .iter()
                    .step_by(step.max(1))
                    .map(|key| shard.owner_of(key)),
            ),
            KeyRouting::AllShards => return None,
            // Keyless: PING, ECHO, SELECT, INFO … run on the connection's shard and touch no
            // key.
            KeyRouting::Connection if touches_no_key(spec.name) => {}
            KeyRouting::Connection => return None,
        }
    }
    Some(owners)
}

/// Whether `args` is a command with keys, run on their owner shards.
fn is_keyed(args: &[Bytes]) -> bool {
    let routing = args
        .first()
        .and_then(|name| table::lookup(name))
        .map(|spec| spec.routing);
    matches!(
        routing,
        Some(KeyRouting::SingleKey | KeyRouting::MultiKey { .. })
    )
}

/// Connection commands that read or write no key (so a transaction holding them needs no
/// gate for them).
fn touches_no_key(name: &str) -> bool {
    matches!(
        name,
        "ping"
            | "echo"
            | "select"
            | "time"
            | "client"
            | "hello"
            | "auth"
            | "command"
            | "info"
            | "lastsave"
            | "config"
            | "quit"
            | "reset"
            | "publish"
            | "pubsub"
            | "subscribe"
            | "unsubscribe"
            | "psubscribe"
            | "punsubscribe"
    )
}

/// The one shard owning every key of the transaction (`keyed`) and every watched key, when
/// there is one; a transaction with no key at all runs here (`None` then too).
fn single_owner(
    keyed: Option<&[usize]>,
    mut watched: impl Iterator<Item = usize>,
) -> Option<usize> {
    let keyed = keyed?;
    let owner = keyed.first().copied().or_else(|| watched.next())?;
    (keyed.iter().all(|&o| o == owner) && watched.all(|o| o == owner)).then_some(owner)
}
