//! Running one script or function call: taking the gates of the shards it needs, running it in
//! a coroutine of the shard's VM under the count hook, wrapping its writes in each shard's log
//! and waiting for them to be durable, then giving the gates back.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use mlua::{Function, MultiValue, Table, ThreadStatus, Value};
use shardline_metrics::Activity;

use super::busy::RunningFunction;
use super::call;
use super::context::{self, Access, RunContext};
use super::convert::lua_to_reply;
use super::exec;
use super::hook::{self, Verdict};
use super::vm::Vm;
use crate::forward::{ShardJob, TxnId};
use crate::resp::Frame;
use crate::server::Shared;
use crate::shard::Shard;
use crate::slowlog::ClientTag;
use crate::txn;

/// One call of a script or function.
pub struct Call {
    /// KEYS (or a function's `keys`).
    pub keys: Vec<Bytes>,
    /// ARGV (or a function's `args`).
    pub argv: Vec<Bytes>,
    /// The caller's database.
    pub db: usize,
    /// The caller, for SLOWLOG entries of inner commands.
    pub client: ClientTag,
    /// The EXEC transaction the call runs in, if any (it holds every shard).
    pub outer: Option<TxnId>,
    /// Whether the script may only read (EVAL_RO, FCALL_RO, `no-writes`).
    pub read_only: bool,
    /// The whole command, for a function (FUNCTION STATS shows it while it runs).
    pub command: Option<Vec<Bytes>>,
}

/// What runs: an EVAL script's compiled function, or a function's callback.
pub struct Target {
    /// The function to call.
    pub function: Function,
    /// How errors name it: the SHA1 of a script, the name of a function.
    pub label: String,
    /// Whether it is a function (FCALL): called as `f(keys, args)`, killed by FUNCTION KILL.
    pub is_function: bool,
    /// The key under which a script that touched undeclared keys is remembered.
    pub undeclared_key: String,
}

/// Runs `target` with `call` on `shard` in `vm`; its reply.
pub async fn run(shard: &Rc<Shard>, vm: &Rc<Vm>, target: &Target, call: Call) -> Frame {
    let scripts = &shard.shared.scripts;
    let mut every_shard = scripts.touches_undeclared(&target.undeclared_key);
    loop {
        let (access, gates) = match call.outer {
            Some(outer) => (Access::Outer(outer), None),
            None => {
                let wanted: Vec<usize> = if every_shard {
                    (0..shard.nr_shards).collect()
                } else {
                    call.keys
                        .iter()
                        .map(|key| shard.owner_of(key))
                        .chain([shard.id])
                        .collect()
                };
                let gates = txn::lock(shard, wanted.iter().copied()).await;
                let mut held = vec![false; shard.nr_shards];
                for owner in wanted {
                    held[owner] = true;
                }
                (
                    Access::Gated {
                        txn: gates.id(),
                        held,
                    },
                    Some(gates),
                )
            }
        };
        let ctx = new_context(shard, &call, access, target.is_function);
        let unsettled = Unsettled(ctx.clone());
        let reply = run_once(vm, target, &call, &ctx).await;
        let reply = settle_writes(&ctx, reply).await;
        drop(unsettled);
        if let Some(gates) = gates {
            gates.release().await;
        }
        if ctx.touched_unheld.get() {
            scripts.mark_undeclared(&target.undeclared_key);
        }
        if ctx.restart.get() && !every_shard {
            every_shard = true;
            continue;
        }
        return reply;
    }
}

/// A fresh context for `call` on `shard` with `access`.
fn new_context(
    shard: &Rc<Shard>,
    call: &Call,
    access: Access,
    is_function: bool,
) -> Rc<RunContext> {
    Rc::new(RunContext {
        shard: shard.clone(),
        db: std::cell::Cell::new(call.db),
        client: call.client.clone(),
        access,
        read_only: call.read_only,
        resp: std::cell::Cell::new(2),
        wrote: std::cell::Cell::new(false),
        restart: std::cell::Cell::new(false),
        touched_unheld: std::cell::Cell::new(false),
        writes: std::cell::RefCell::new(Vec::new()),
        settled: std::cell::Cell::new(false),
        is_function,
    })
}

/// The reply of [`run_shipped`] when the script must run again from its connection's shard.
pub const RUN_AGAIN: &str = "\u{0}shardline: run the script again from its connection's shard";

/// Runs `target` with `call` synchronously on `shard`, the owner of every key the script
/// declared, in a job sent there (one hop for the whole script, which holds the shard as long
/// as the job runs). Gives up — [`RUN_AGAIN`], before anything was written — when the script
/// needs another shard or runs past the task quota: the connection's shard then runs it with
/// gates, hops and yields. Past its first write it runs to its end here.
pub fn run_shipped(shard: &Rc<Shard>, vm: &Rc<Vm>, target: &Target, call: Call) -> Frame {
    let mut held = vec![false; shard.nr_shards];
    held[shard.id] = true;
    let ctx = new_context(
        shard,
        &call,
        Access::Gated { txn: 0, held },
        target.is_function,
    );
    let shared = shard.shared.clone();
    let outcome = {
        let _running = begin(target, &call, &ctx);
        call_target_now(vm, target, &call, &ctx)
    };
    vm.relieve(shared.config.script_memory_limit);
    if ctx.touched_unheld.get() && ctx.wrote.get() {
        // It failed a call after writing; its next runs hold every shard.
        shared.scripts.mark_undeclared(&target.undeclared_key);
    }
    let reply = match outcome {
        Ok(Some(values)) if !ctx.restart.get() => reply_of(values, ctx.resp.get(), &target.label),
        Ok(_) => return Frame::error(RUN_AGAIN),
        Err(err) => Frame::error(format!(
            "ERR Error running script {}, {}",
            target.label,
            root_message(&err)
        )),
    };
    release_log(shard);
    ctx.settled.set(true);
    reply
}

/// [`call_target`] without suspending: `None` when the script must run again elsewhere.
fn call_target_now(
    vm: &Vm,
    target: &Target,
    call: &Call,
    ctx: &Rc<RunContext>,
) -> mlua::Result<Option<MultiValue>> {
    let (thread, mut args) = start_thread(vm, target, call)?;
    loop {
        let values: MultiValue = thread.resume(args)?;
        if thread.status() != ThreadStatus::Resumable {
            return Ok(Some(values));
        }
        args = MultiValue::new();
        // A hop, or the task quota used up: only a script that has written runs on here.
        if call::take_pending().is_some() || !ctx.wrote.get() {
            return Ok(None);
        }
    }
}

/// Logs the script's writes on each shard it wrote on (in MULTI/EXEC where it ran two or
/// more there) and returns `reply` once they are durable.
async fn settle_writes(ctx: &RunContext, reply: Frame) -> Frame {
    let written: Vec<usize> = written_shards(ctx);
    let shard = &ctx.shard;
    let txn = Some(ctx.access.txn());
    for owner in written {
        if owner == shard.id {
            release_log(shard);
            continue;
        }
        // Its reply waits for the owner's log to hold the records (`appendfsync always`).
        let job: ShardJob = Box::new(|s: &Shard| {
            release_log(s);
            Frame::ok()
        });
        shard.run_on_in(owner, txn, job).await;
    }
    ctx.settled.set(true);
    shard.durable_reply(reply).await
}

fn written_shards(ctx: &RunContext) -> Vec<usize> {
    ctx.writes
        .borrow()
        .iter()
        .enumerate()
        .filter(|(_, w)| w.count > 0)
        .map(|(owner, _)| owner)
        .collect()
}

fn release_log(shard: &Shard) {
    if let Some(aof) = &shard.aof {
        aof.writer.release_held();
    }
}

/// Logs what a script wrote when its run is dropped before it settled (its connection went
/// away while it waited): the keyspace holds its writes, so the logs must too.
struct Unsettled(Rc<RunContext>);

impl Drop for Unsettled {
    fn drop(&mut self) {
        let ctx = &self.0;
        if ctx.settled.get() {
            return;
        }
        for owner in written_shards(ctx) {
            if owner == ctx.shard.id {
                release_log(&ctx.shard);
            } else {
                ctx.shard.peers.post(
                    owner,
                    Box::new(|s: &Shard| {
                        release_log(s);
                        Frame::ok()
                    }),
                );
            }
        }
    }
}

/// A script running on its shard: registered for BUSY / KILL / FUNCTION STATS, its context
/// entered and the count hook's check installed; undone when dropped.
struct Running {
    shared: Arc<Shared>,
    shard: usize,
    _installed: hook::Installed,
    _entered: context::Entered,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shared.scripts.busy.finish(self.shard);
    }
}

/// Starts running `target` for `call` in `ctx` ([`Running`]).
fn begin(target: &Target, call: &Call, ctx: &Rc<RunContext>) -> Running {
    shardline_metrics::activity::set(Activity::Other("script"));
    let shard = &ctx.shard;
    let shared = shard.shared.clone();
    let function = call.command.clone().map(|command| RunningFunction {
        name: target.label.clone(),
        command,
        started: Instant::now(),
    });
    shared.scripts.busy.start(shard.id, function);
    let entered = context::enter(ctx.clone());
    let threshold = Duration::from_millis(shard.runtime.borrow().busy_reply_threshold_ms);
    let installed = hook::install(check(
        shared.clone(),
        shard.id,
        threshold,
        target.is_function,
    ));
    Running {
        shared,
        shard: shard.id,
        _installed: installed,
        _entered: entered,
    }
}

/// One run of the script, holding what `ctx.access` says.
async fn run_once(vm: &Vm, target: &Target, call: &Call, ctx: &Rc<RunContext>) -> Frame {
    let shared = ctx.shard.shared.clone();
    let running = begin(target, call, ctx);
    let outcome = call_target(vm, target, call, ctx).await;
    drop(running);
    vm.relieve(shared.config.script_memory_limit);
    match outcome {
        Ok(values) => reply_of(values, ctx.resp.get(), &target.label),
        Err(err) => Frame::error(format!(
            "ERR Error running script {}, {}",
            target.label,
            root_message(&err)
        )),
    }
}

/// Runs the target in a coroutine of the VM, performing the hops its redis.calls ask for
/// and yielding to the reactor when the count hook suspends it; the sandbox's `run` results.
async fn call_target(
    vm: &Vm,
    target: &Target,
    call: &Call,
    ctx: &Rc<RunContext>,
) -> mlua::Result<MultiValue> {
    let (thread, mut args) = start_thread(vm, target, call)?;
    loop {
        let values: MultiValue = thread.resume(args)?;
        if thread.status() != ThreadStatus::Resumable {
            return Ok(values);
        }
        args = MultiValue::new();
        match call::take_pending() {
            Some(hop) => {
                let resp = ctx.resp.get();
                match exec::hop(ctx.clone(), hop.spec, hop.args).await {
                    Frame::Error(text) if hop.raise => {
                        // SAFETY: the coroutine that yielded for the hop is suspended.
                        unsafe { hook::raise_next(hop.state, text) };
                    }
                    frame => {
                        call::set_result(frame, resp);
                        args.push_back(vm.push_result.call::<Value>(())?);
                    }
                }
            }
            None => glommio::yield_if_needed().await,
        }
    }
}

/// The coroutine running the target under the sandbox's `run`, and its first arguments.
fn start_thread(vm: &Vm, target: &Target, call: &Call) -> mlua::Result<(mlua::Thread, MultiValue)> {
    let lua = &vm.lua;
    let keys = strings(lua, &call.keys)?;
    let argv = strings(lua, &call.argv)?;
    let thread = lua.create_thread(vm.run.clone())?;
    hook::adopt(&thread);
    let args = if target.is_function {
        MultiValue::from_iter([
            Value::Function(target.function.clone()),
            Value::Table(keys),
            Value::Table(argv),
        ])
    } else {
        vm.globals.raw_set("KEYS", keys)?;
        vm.globals.raw_set("ARGV", argv)?;
        MultiValue::from_iter([Value::Function(target.function.clone())])
    };
    Ok((thread, args))
}

/// A Lua array of `items` as strings.
fn strings(lua: &mlua::Lua, items: &[Bytes]) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        table.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(table)
}

/// The hook's check for a script running on shard `id` since now.
fn check(
    shared: Arc<Shared>,
    id: usize,
    threshold: Duration,
    is_function: bool,
) -> Box<dyn FnMut() -> Verdict> {
    let started = Instant::now();
    let mut marked = false;
    Box::new(move || {
        if shared.scripts.busy.kill_requested(id) {
            return Verdict::Stop(if is_function {
                "ERR Script killed by user with FUNCTION KILL..."
            } else {
                "ERR Script killed by user with SCRIPT KILL..."
            });
        }
        if shared.shutdown.is_requested() {
            return Verdict::Stop("ERR Script killed by the server's shutdown");
        }
        if !marked && started.elapsed() >= threshold {
            marked = true;
            shared.scripts.busy.mark_busy(id);
        }
        if glommio::executor().need_preempt() {
            Verdict::Yield
        } else {
            Verdict::Continue
        }
    })
}

/// The sandbox's `run` results as the reply: `true, value` or `false, error, source, line`.
fn reply_of(values: MultiValue, resp: u8, label: &str) -> Frame {
    let mut values = values.into_iter();
    match values.next() {
        Some(Value::Boolean(true)) => lua_to_reply(&values.next().unwrap_or(Value::Nil), resp),
        _ => {
            let error = values.next().unwrap_or(Value::Nil);
            let source = match values.next() {
                Some(Value::String(s)) => Some(s.to_string_lossy().to_string()),
                _ => None,
            };
            let line = match values.next() {
                Some(Value::Number(n)) => Some(n as i64),
                Some(Value::Integer(n)) => Some(n),
                _ => None,
            };
            error_reply(error, source, line, label)
        }
    }
}

/// Redis 7.0's reply for a script that raised `error` at `source`:`line`
/// (`luaCallFunction`): an error table's `err` as it is, anything else after `ERR `, then
/// ` script: <label>, on <source>:<line>.`.
fn error_reply(error: Value, source: Option<String>, line: Option<i64>, label: &str) -> Frame {
    let text = match &error {
        Value::Table(t) => match t.raw_get::<Value>("err") {
            Ok(Value::String(s)) => s.to_string_lossy().to_string(),
            _ => "ERR execution failure".to_owned(),
        },
        Value::String(s) => format!("ERR {}", s.to_string_lossy()),
        Value::Nil => "ERR nil".to_owned(),
        // An error of the `redis` API (Redis's `luaPushError` + `luaError`): no position.
        Value::Error(err) => format!("ERR {}", root_message(err)),
        other => format!("ERR {}", other.to_string().unwrap_or_default()),
    };
    match (source, line) {
        (Some(source), Some(line)) => {
            Frame::error(format!("{text} script: {label}, on {source}:{line}."))
        }
        _ => Frame::error(text),
    }
}

/// The message of a Lua error without mlua's wrapping (callback and traceback layers).
pub fn root_message(err: &mlua::Error) -> String {
    match err {
        mlua::Error::CallbackError { cause, .. } => root_message(cause),
        mlua::Error::RuntimeError(message) => message.clone(),
        mlua::Error::MemoryError(_) => "not enough memory".to_owned(),
        mlua::Error::ExternalError(e) => e.to_string(),
        other => other.to_string(),
    }
}
