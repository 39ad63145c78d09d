//! From one parsed request to its reply: command lookup, arity and authentication checks
//! (Redis 7 `processCommand` order), then the connection command or the hop to the owner shard.

use std::rc::Rc;

use bytes::Bytes;
use shardline_metrics::Activity;

use super::commands;
use super::pipeline::Pipeline;
use super::probe::ProbeRecord;
use super::session::Session;
use super::transaction;
use super::CloseReason;
use crate::clock::CommandInstant;
use crate::cmd::table::{self, CommandSpec, KeyRouting};
use crate::cmd::{fanout, reply};
use crate::forward::{ShardJob, TxnId};
use crate::introspection::pause;
use crate::resp::{Frame, Protocol};
use crate::shard::{admission, Shard};
use crate::slowlog::ClientTag;
use crate::txn;

/// What the connection does after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Read the next request.
    Continue,
    /// Write what is pending, then close.
    Close(CloseReason),
}

/// Dispatches one request; its reply (now or later) goes into `pipeline` in order. `args` is
/// left empty when the request was handed on (queued in MULTI, sent to another shard),
/// otherwise as it was, for the caller to reuse. `client` is the connection's stream, for a
/// login to probe whether a client that sent FIN is still there ([`super::probe`]).
pub async fn dispatch(
    shard: &Rc<Shard>,
    session: &mut Session,
    args: &mut Vec<Bytes>,
    pipeline: &mut Pipeline,
    client: &mut dyn ProbeRecord,
) -> Flow {
    let Some(name) = args.first() else {
        return Flow::Continue;
    };
    let Some(spec) = table::lookup(name) else {
        if let Some(txn) = &mut session.transaction {
            txn.aborted = true;
        }
        shard.metrics.command_error("unknown_command");
        pipeline.ready(session.protocol, reply::unknown_command(args));
        return Flow::Continue;
    };
    shardline_metrics::activity::set(Activity::Command(spec.name));
    shard.metrics.command(spec.name);
    shard
        .info
        .commands_processed
        .set(shard.info.commands_processed.get() + 1);
    pipeline.begin_command(spec, args);
    if !spec.arity_ok(args.len()) {
        if let Some(txn) = &mut session.transaction {
            txn.aborted = true;
        }
        shard.metrics.command_error("arity");
        pipeline.ready(session.protocol, reply::wrong_arity(spec.name));
        return Flow::Continue;
    }
    if !session.is_authenticated() && !allowed_before_auth(spec) {
        shard.metrics.command_error("noauth");
        pipeline.ready(
            session.protocol,
            Frame::error("NOAUTH Authentication required."),
        );
        return Flow::Continue;
    }
    if session.pubsub.is_some() && session.protocol == Protocol::Resp2 && session.is_subscribed() {
        if let Some(refused) = refuse_while_subscribed(spec, args) {
            if let Some(txn) = &mut session.transaction {
                txn.aborted = true;
            }
            shard.metrics.command_error("command");
            pipeline.ready(session.protocol, refused);
            return Flow::Continue;
        }
    }
    if session.transaction.is_some()
        && transaction::refused_when_out_of_memory(spec.name)
        && transaction::out_of_memory(shard, std::slice::from_ref(args)).await
    {
        // Redis 7 `processCommand`: refused, and EXEC will abort.
        if let Some(txn) = &mut session.transaction {
            txn.aborted = true;
        }
        shard.metrics.command_error("command");
        pipeline.ready(session.protocol, Frame::error(crate::eviction::OOM));
        return Flow::Continue;
    }
    let (protocol, scope) = (session.protocol, session.txn_scope);
    if let Some(txn) = &mut session.transaction {
        if spec.has_flag("no_multi") && !transaction::runs_inside_multi(spec.name) {
            // Redis 7 `processCommand`: refused, and EXEC will abort.
            txn.aborted = true;
            shard.metrics.command_error("command");
            pipeline.ready(
                protocol,
                Frame::error("ERR Command not allowed inside a transaction"),
            );
            return Flow::Continue;
        }
    }
    if shard.shared.scripts.busy.any() && scope.is_none() {
        if let Some(mut refused) = busy_refusal(shard, spec, args) {
            if spec.name == "exec" && session.transaction.take().is_some() {
                // Redis 7 `rejectCommand` of EXEC: the transaction is discarded.
                session.watched.clear().await;
                if let Frame::Error(text) = &refused {
                    refused = Frame::error(format!(
                        "EXECABORT Transaction discarded because of: {text}"
                    ));
                }
            }
            if let Some(txn) = &mut session.transaction {
                txn.aborted = true;
            }
            shard.metrics.command_error("command");
            pipeline.ready(protocol, refused);
            return Flow::Continue;
        }
    }
    // Commands inside an EXEC already passed the pause with it.
    if shard.info.pause.is_set() && scope.is_none() {
        wait_while_paused(shard, session, args, pipeline).await;
    }
    if let Some(txn) = &mut session.transaction {
        if !transaction::runs_inside_multi(spec.name) {
            txn.queued.push(std::mem::take(args));
            pipeline.ready(protocol, Frame::Simple("QUEUED".into()));
            return Flow::Continue;
        }
    }
    let started = pipeline
        .command_started()
        .unwrap_or_else(CommandInstant::now);
    if matches!(
        spec.name,
        "multi" | "exec" | "discard" | "watch" | "unwatch"
    ) {
        // EXEC is not logged (Redis's `skip_slowlog`), the commands it runs are.
        let logged = (spec.name != "exec").then(|| slowlog_args(shard, args));
        let flow = transaction::execute(shard, session, spec.name, args, pipeline, client).await;
        if let Some(Some(logged)) = logged {
            shard.log_if_slow(&logged, started, &session.client_tag());
        }
        return flow;
    }
    // Commands timed on their key's owner shard log themselves there
    // (`Shard::execute_local_at`); the others are logged here once they end.
    let logged = match spec.routing {
        KeyRouting::SingleKey | KeyRouting::MultiKey { .. } => None,
        KeyRouting::Connection | KeyRouting::AllShards => slowlog_args(shard, args),
    };
    let flow = route(shard, session, spec, args, pipeline, started, client).await;
    if let Some(logged) = logged {
        // A blocked command is logged when it is served (`RequestLoop::unblocked`).
        if session.blocked.is_none() {
            shard.log_if_slow(&logged, started, &session.client_tag());
        }
    }
    flow
}

/// A copy of `args` to log once the command ends, `None` while the slowlog is off.
fn slowlog_args(shard: &Shard, args: &[Bytes]) -> Option<Vec<Bytes>> {
    (shard.runtime.borrow().slowlog_log_slower_than >= 0).then(|| args.to_vec())
}

/// Runs the command where its routing says; `started` is its start (for the SLOWLOG of a
/// command whose keys span shards), `client` the connection's stream (for a login's probe).
async fn route(
    shard: &Rc<Shard>,
    session: &mut Session,
    spec: &'static CommandSpec,
    args: &mut Vec<Bytes>,
    pipeline: &mut Pipeline,
    started: CommandInstant,
    client: &mut dyn ProbeRecord,
) -> Flow {
    let (protocol, db, scope) = (session.protocol, session.db, session.txn_scope);
    match spec.routing {
        // Not behind the drain below: pipelined PUBLISHes go out without waiting for each
        // other's counts.
        KeyRouting::Connection if spec.name == "publish" => {
            commands::pubsub::publish(shard, session, args, pipeline).await;
            Flow::Continue
        }
        KeyRouting::Connection => {
            // Connection commands may change the protocol or the identity: earlier replies are
            // encoded first, with the state they were asked under.
            pipeline.drain().await;
            commands::execute(shard, session, spec, std::mem::take(args), pipeline, client).await
        }
        KeyRouting::SingleKey => {
            let owner = shard.owner_of(&args[1]);
            let client = session.client_tag();
            execute_on(shard, owner, scope, db, args, pipeline, protocol, client).await;
            Flow::Continue
        }
        KeyRouting::MultiKey { step } => {
            let parts = match fanout::split_keys(args, step, shard.nr_shards) {
                Ok(parts) => parts,
                Err(err) => {
                    pipeline.ready(protocol, err);
                    return Flow::Continue;
                }
            };
            if let [(owner, _, _)] = parts.as_slice() {
                let client = session.client_tag();
                execute_on(shard, *owner, scope, db, args, pipeline, protocol, client).await;
                return Flow::Continue;
            }
            // Logged on this shard once every part has replied.
            let logged = slowlog_args(shard, args).map(|args| (args, session.client_tag()));
            // Keys on several shards: one transaction over their gates, unless the command
            // already runs inside one (EXEC).
            let txn_scope =
                txn::enter(shard, scope, parts.iter().map(|(owner, _, _)| *owner)).await;
            let part_scope = txn_scope.id();
            let nkeys = (args.len() - 1) / step;
            let mut pending = Vec::with_capacity(parts.len());
            for (owner, sub_args, positions) in parts {
                let job: ShardJob = Box::new(move |s: &Shard| s.execute_local(db, &sub_args));
                if owner == shard.id {
                    match shard.run_gated(admission(part_scope), job) {
                        Ok(frame) => pending.push((positions, Err((frame, shard.durable())))),
                        Err(receiver) => pending.push((positions, Ok(receiver))),
                    }
                } else {
                    let receiver = shard.peers.submit_in(owner, part_scope, job).await;
                    pending.push((positions, Ok(receiver)));
                }
            }
            txn_scope.leave().await;
            let name = spec.name;
            let here = Rc::clone(shard);
            pipeline.later(
                protocol,
                Box::pin(async move {
                    let mut replies = Vec::with_capacity(pending.len());
                    for (positions, reply) in pending {
                        let frame = match reply {
                            Ok(receiver) => crate::forward::await_reply(receiver).await,
                            Err((frame, durable)) => {
                                if let Some(point) = durable {
                                    point.reached().await;
                                }
                                frame
                            }
                        };
                        replies.push((positions, frame));
                    }
                    if let Some((args, client)) = logged {
                        here.log_if_slow(&args, started, &client);
                    }
                    fanout::merge_replies(name, nkeys, replies)
                }),
            );
            Flow::Continue
        }
        KeyRouting::AllShards => {
            let reply =
                commands::all_shards(shard, session.db, scope, spec, std::mem::take(args)).await;
            pipeline.ready(protocol, reply);
            Flow::Continue
        }
    }
}

/// CLIENT PAUSE (Redis 7 `processCommand`, after every refusal so that a refused command is
/// answered at once): waits while the pause holds this command back (WRITE: a command that
/// may write, or EXEC of a transaction holding one), counted in INFO `blocked_clients`.
async fn wait_while_paused(
    shard: &Rc<Shard>,
    session: &Session,
    args: &[Bytes],
    pipeline: &mut Pipeline,
) {
    let queued = session.transaction.as_ref().map(|t| &t.queued[..]);
    let shared = &shard.shared;
    let waited = shard
        .info
        .pause
        .wait(
            || pause::may_write_with(args, queued, &|a| shared.scripts.may_write(a)),
            || shared.shutdown.is_requested(),
        )
        .await;
    if waited {
        pipeline.restart_command_clock();
    }
}

/// Runs a keyspace command of `client` on shard `owner` (which logs it in its SLOWLOG when
/// slow): here at once when the gate admits it (the common case: no allocation), else
/// parked until it does, or after a hop.
#[allow(clippy::too_many_arguments)]
async fn execute_on(
    shard: &Rc<Shard>,
    owner: usize,
    scope: Option<TxnId>,
    db: usize,
    args: &mut Vec<Bytes>,
    pipeline: &mut Pipeline,
    protocol: Protocol,
    client: ClientTag,
) {
    if owner == shard.id && shard.gate.admits(admission(scope)) {
        // One clock read starts both the commandstats and the slowlog timing, another ends
        // both.
        let started = pipeline
            .command_started()
            .unwrap_or_else(CommandInstant::now);
        let (frame, finished) = shard.execute_local_at(db, args, started, &client);
        pipeline.command_finished(finished);
        pipeline.durable(protocol, frame, shard.durable());
        return;
    }
    let args = std::mem::take(args);
    let job: ShardJob = Box::new(move |s: &Shard| s.execute_client(db, &args, &client));
    run_job_on(shard, owner, scope, job, pipeline, protocol).await;
}

/// Runs keyspace work `job` on shard `owner` (of transaction `scope`, if any) and queues its
/// reply in `pipeline`: here (at once when the gate admits it, else parked), or after a hop.
pub async fn run_job_on(
    shard: &Rc<Shard>,
    owner: usize,
    scope: Option<TxnId>,
    job: ShardJob,
    pipeline: &mut Pipeline,
    protocol: Protocol,
) {
    if owner != shard.id {
        let receiver = shard.peers.submit_in(owner, scope, job).await;
        pipeline.later(protocol, Box::pin(crate::forward::await_reply(receiver)));
        return;
    }
    match shard.run_gated(admission(scope), job) {
        Ok(frame) => pipeline.durable(protocol, frame, shard.durable()),
        Err(receiver) => pipeline.later(protocol, Box::pin(crate::forward::await_reply(receiver))),
    }
}

/// In RESP2 Pub/Sub mode only (P)SUBSCRIBE, (P)UNSUBSCRIBE, PING, QUIT and RESET run; any
/// other command gets Redis 7.0 `processCommand`'s error, naming it as `fullname`
/// (`container|subcommand`).
fn refuse_while_subscribed(spec: &CommandSpec, args: &[Bytes]) -> Option<Frame> {
    if matches!(
        spec.name,
        "subscribe" | "unsubscribe" | "psubscribe" | "punsubscribe" | "ping" | "quit" | "reset"
    ) {
        return None;
    }
    let name = match commands::subcommand_name(spec.name, args.get(1).map(|a| &a[..])) {
        Some(sub) => format!("{}|{sub}", spec.name),
        None => spec.name.to_owned(),
    };
    Some(Frame::error(format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / \
         RESET are allowed in this context"
    )))
}

/// Redis 7 `processCommand`'s `-BUSY` while a script runs past `busy-reply-threshold`: for
/// every command but those that may run meanwhile (`allow_busy`: AUTH, MULTI …, SCRIPT KILL,
/// FUNCTION KILL and STATS, SHUTDOWN NOSAVE), whatever shard its keys live on, as Redis answers.
fn busy_refusal(shard: &Shard, spec: &CommandSpec, args: &[Bytes]) -> Option<Frame> {
    // Of SHUTDOWN's forms only `SHUTDOWN NOSAVE` (Redis 7.0 `processCommand`).
    let nosave = || {
        args.len() == 2
            && args[1]
                .first()
                .is_some_and(|b| b.eq_ignore_ascii_case(&b'n'))
    };
    if spec.has_flag("allow_busy") && (spec.name != "shutdown" || nosave()) {
        return None;
    }
    if matches!(spec.name, "script" | "function") {
        let sub = args.get(1).map(|a| &a[..]).unwrap_or_default();
        if sub.eq_ignore_ascii_case(b"kill") || sub.eq_ignore_ascii_case(b"stats") {
            return None;
        }
    }
    let function = shard.shared.scripts.busy.busy_kind()?;
    Some(Frame::error(crate::scripting::busy::busy_error(function)))
}

/// AUTH, HELLO, QUIT and RESET are served before authentication (Redis's CMD_NO_AUTH).
fn allowed_before_auth(spec: &CommandSpec) -> bool {
    matches!(spec.name, "auth" | "hello" | "quit" | "reset")
}
