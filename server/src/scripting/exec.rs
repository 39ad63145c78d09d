//! One `redis.call` / `redis.pcall`: Redis 7.0's checks (`scriptCall`), then the command run on
//! its owner shard — at once when that is the script's own shard, else by a hop inside the
//! script's transaction ([`hop`]).
//!
//! A script may touch keys it did not declare. When such a key lives on a shard the script
//! does not hold and the script has written nothing yet, it is stopped and run again holding
//! every shard (`RunContext::restart`, [`super::run`]); its SHA is remembered, so later runs
//! hold every shard from the start. After a write it cannot be run again, so the command
//! fails with [`NOT_HELD`].

use std::rc::Rc;

use bytes::Bytes;

use super::context::{RunContext, ShardWrites};
use crate::cmd::fanout;
use crate::cmd::table::{self, CommandSpec, KeyRouting};
use crate::forward::ShardJob;
use crate::resp::Frame;
use crate::shard::{admission, Shard};

/// The error of a command touching a shard the script does not hold, after the script wrote.
pub const NOT_HELD: &str = "ERR this script wrote and then touched a key on a shard it had not \
locked (a key not declared in KEYS); it will lock every shard from its next run on";

/// Where a command runs.
pub enum Plan {
    /// Its reply, computed now.
    Done(Frame),
    /// It must hop to other shards: run [`hop`].
    Hop(&'static CommandSpec),
}

/// Checks `args` as Redis checks a script's command and runs it if it stays on this shard.
pub fn call_now(ctx: &RunContext, args: &[Bytes]) -> Plan {
    let spec = match check(ctx, args) {
        Ok(spec) => spec,
        Err(error) => return Plan::Done(error),
    };
    let shard = &ctx.shard;
    let here = shard.id;
    match spec.routing {
        KeyRouting::SingleKey => {
            let owner = shard.owner_of(&args[1]);
            if owner == here {
                Plan::Done(run_here(ctx, spec, args))
            } else {
                reach(ctx, spec, &[owner])
            }
        }
        KeyRouting::MultiKey { step } => {
            let owners: Vec<usize> = args[1..]
                .iter()
                .step_by(step.max(1))
                .map(|key| shard.owner_of(key))
                .collect();
            if owners.iter().all(|&o| o == here) {
                Plan::Done(run_here(ctx, spec, args))
            } else {
                reach(ctx, spec, &owners)
            }
        }
        KeyRouting::AllShards => {
            if ctx.access.holds_all() {
                Plan::Hop(spec)
            } else {
                not_held(ctx)
            }
        }
        KeyRouting::Connection => connection_command(ctx, spec, args),
    }
}

/// Redis 7.0's refusals of a script's command, with its texts.
fn check(ctx: &RunContext, args: &[Bytes]) -> Result<&'static CommandSpec, Frame> {
    let Some(spec) = args.first().and_then(|name| table::lookup(name)) else {
        return Err(Frame::error("ERR Unknown Redis command called from script"));
    };
    if !spec.arity_ok(args.len()) {
        return Err(Frame::error(
            "ERR Wrong number of args calling Redis command from script",
        ));
    }
    let sub_noscript = args.get(1).is_some_and(|sub| {
        crate::connection::commands::subcommands_of(spec.name, sub)
            .is_some_and(|sub| sub.flags.contains(&"noscript"))
    });
    if spec.has_flag("noscript") || sub_noscript {
        return Err(Frame::error(
            "ERR This Redis command is not allowed from script",
        ));
    }
    // PUBLISH is `may-replicate` in Redis 7.0 (not shown by COMMAND INFO).
    let may_replicate = spec.has_flag("may_replicate") || spec.name == "publish";
    if (spec.has_flag("write") || may_replicate) && ctx.read_only {
        return Err(Frame::error(
            "ERR Write commands are not allowed from read-only scripts.",
        ));
    }
    if !allowed_connection_command(spec) {
        return Err(Frame::error(
            "ERR This Redis command is not allowed from script",
        ));
    }
    Ok(spec)
}

/// Connection-level commands a script may call; the others are refused as Redis refuses
/// `noscript` commands.
fn allowed_connection_command(spec: &CommandSpec) -> bool {
    spec.routing != KeyRouting::Connection
        || matches!(
            spec.name,
            "ping" | "echo" | "time" | "select" | "cluster" | "publish"
        )
        || composed_owners_known(spec.name)
}

fn composed_owners_known(name: &str) -> bool {
    crate::connection::commands::script_composed(name)
}

fn connection_command(ctx: &RunContext, spec: &'static CommandSpec, args: &[Bytes]) -> Plan {
    let reply = match spec.name {
        "ping" => match args {
            [_] => Frame::Simple("PONG".into()),
            [_, message] => Frame::Bulk(message.clone()),
            _ => crate::cmd::reply::wrong_arity("ping"),
        },
        "echo" => Frame::Bulk(args[1].clone()),
        "cluster" => Frame::error(crate::connection::commands::CLUSTER_DISABLED),
        // Subscribers live on every shard: the runner asks each.
        "publish" => return Plan::Hop(spec),
        "time" => crate::connection::commands::time(),
        "select" => {
            let databases = ctx.shard.shared.config.databases;
            match crate::cmd::databases::db_index(&args[1], databases, None) {
                Ok(db) => {
                    ctx.db.set(db);
                    Frame::ok()
                }
                Err(err) => err,
            }
        }
        name => {
            let owners =
                crate::connection::commands::script_composed_owners(&ctx.shard, name, args);
            return reach(ctx, spec, &owners);
        }
    };
    Plan::Done(reply)
}

/// A command whose keys live on `owners`: a hop when the script holds them all, else the
/// script restarts holding every shard (or fails, after a write).
fn reach(ctx: &RunContext, spec: &'static CommandSpec, owners: &[usize]) -> Plan {
    if owners.iter().all(|&o| ctx.access.holds(o)) {
        Plan::Hop(spec)
    } else {
        not_held(ctx)
    }
}

fn not_held(ctx: &RunContext) -> Plan {
    ctx.touched_unheld.set(true);
    if ctx.wrote.get() {
        Plan::Done(Frame::error(NOT_HELD))
    } else {
        ctx.restart.set(true);
        Plan::Done(Frame::error(
            "ERR script restarted to lock every shard (internal)",
        ))
    }
}

/// Runs `args` on this shard (all its keys live here).
fn run_here(ctx: &RunContext, spec: &CommandSpec, args: &[Bytes]) -> Frame {
    let shard = &ctx.shard;
    if spec.has_flag("write") && before_write(ctx, shard.id) {
        hold_log(shard);
    }
    shard.execute_local(ctx.db.get(), args)
}

/// Keeps the records of `shard`'s log aside until the script ends
/// ([`crate::aof::LogWriter::hold`]).
pub fn hold_log(shard: &Shard) {
    if let Some(aof) = &shard.aof {
        aof.writer.hold();
    }
}

/// Notes a write on shard `owner`; true for the script's first write there.
fn before_write(ctx: &RunContext, owner: usize) -> bool {
    if !ctx.wrote.replace(true) {
        ctx.shard.shared.scripts.busy.wrote(ctx.shard.id);
    }
    let mut writes = ctx.writes.borrow_mut();
    if writes.len() <= owner {
        writes.resize(owner + 1, ShardWrites::default());
    }
    let entry = &mut writes[owner];
    entry.count += 1;
    entry.count == 1
}

/// Runs a command [`call_now`] planned as a hop: on its owner shards, inside the script's
/// transaction. Replies do not wait for the logs here; the script's reply does
/// ([`super::run`]).
pub async fn hop(ctx: Rc<RunContext>, spec: &'static CommandSpec, args: Vec<Bytes>) -> Frame {
    let shard = ctx.shard.clone();
    if spec.name == "publish" {
        return publish(&shard, &args[1], &args[2]).await;
    }
    let txn = Some(ctx.access.txn());
    let db = ctx.db.get();
    let writes = spec.has_flag("write");
    match spec.routing {
        KeyRouting::SingleKey => {
            let owner = shard.owner_of(&args[1]);
            // The first write there starts keeping that log's records aside, in the same job.
            let first_write = writes && before_write(&ctx, owner);
            let job: ShardJob = Box::new(move |s: &Shard| {
                if first_write {
                    hold_log(s);
                }
                s.execute_local(db, &args)
            });
            run_without_sync(&shard, owner, txn, job).await
        }
        KeyRouting::MultiKey { step } => {
            let parts = match fanout::split_keys(&args, step, shard.nr_shards) {
                Ok(parts) => parts,
                Err(err) => return err,
            };
            let nkeys = (args.len() - 1) / step.max(1);
            let mut replies = Vec::with_capacity(parts.len());
            for (owner, sub_args, positions) in parts {
                let first_write = writes && before_write(&ctx, owner);
                let job: ShardJob = Box::new(move |s: &Shard| {
                    if first_write {
                        hold_log(s);
                    }
                    s.execute_local(db, &sub_args)
                });
                replies.push((positions, run_without_sync(&shard, owner, txn, job).await));
            }
            fanout::merge_replies(spec.name, nkeys, replies)
        }
        KeyRouting::AllShards | KeyRouting::Connection => {
            if writes {
                for owner in 0..shard.nr_shards {
                    if ctx.access.holds(owner) {
                        note_remote_write(&ctx, owner).await;
                    }
                }
            }
            crate::connection::commands::script_keyspace_command(&shard, db, txn, spec, args).await
        }
    }
}

/// PUBLISH from a script: delivered on every shard, the receivers counted.
async fn publish(shard: &Rc<Shard>, channel: &Bytes, message: &Bytes) -> Frame {
    let mut receivers = shard.pubsub.publish(channel, message) as i64;
    for peer in (0..shard.nr_shards).filter(|&p| p != shard.id) {
        let (channel, message) = (channel.clone(), message.clone());
        let job: ShardJob =
            Box::new(move |s: &Shard| Frame::Integer(s.pubsub.publish(&channel, &message) as i64));
        let receiver = shard.peers.submit_stats_to(peer, job).await;
        if let Frame::Integer(n) = crate::forward::await_reply(receiver).await {
            receivers += n;
        }
    }
    Frame::Integer(receivers)
}

/// Notes a write on shard `owner` before it happens; before the script's first write there,
/// that shard's log starts keeping its records aside.
async fn note_remote_write(ctx: &RunContext, owner: usize) {
    if !before_write(ctx, owner) {
        return;
    }
    if owner == ctx.shard.id {
        hold_log(&ctx.shard);
        return;
    }
    let job: ShardJob = Box::new(|s: &Shard| {
        hold_log(s);
        Frame::ok()
    });
    run_without_sync(&ctx.shard, owner, Some(ctx.access.txn()), job).await;
}

/// Runs `job` on `owner` inside `txn` without waiting for the owner's log.
pub async fn run_without_sync(
    shard: &Rc<Shard>,
    owner: usize,
    txn: Option<crate::forward::TxnId>,
    job: ShardJob,
) -> Frame {
    if owner == shard.id {
        return match shard.run_gated(admission(txn), job) {
            Ok(frame) => frame,
            Err(receiver) => crate::forward::await_reply(receiver).await,
        };
    }
    let receiver = shard.peers.submit(owner, job, false, admission(txn)).await;
    crate::forward::await_reply(receiver).await
}
